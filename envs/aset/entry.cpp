/// \file entry.cpp
/// The aset env's row of the env table: its name, description, config and factory.

#include "core/latency_histogram.hpp"
#include "envs/aset/aset.hpp"
#include "envs/registry.hpp"

namespace marlsched {
// The env's baselines (baselines.cpp).
const std::vector<std::string>& edge_heuristic_names();
std::unique_ptr<Policy> make_edge_heuristic(const std::string& name, const EnvSpec& spec,
                                            std::uint64_t seed);
}  // namespace marlsched

namespace marlsched::aset {

namespace {

class AsetFactory final : public EnvFactory {
 public:
  AsetFactory(const Config& cfg, int num_agents)
      : cfg_(std::make_shared<Config>(cfg)),
        topo_(std::make_shared<Topology>(make_topology(cfg, num_agents))),
        spec_(std::make_shared<EnvSpec>(make_spec(cfg, num_agents, *topo_))) {}
  const EnvSpec& spec() const override { return *spec_; }
  std::unique_ptr<marlsched::Shard> make_shard(int agent) const override {
    return std::make_unique<Shard>(cfg_, spec_, topo_, agent);
  }
  std::vector<std::pair<std::string, double>> summarize(
      const std::map<std::string, double>& counters) const override {
    return aset::summarize(*cfg_, counters);
  }
  std::string metrics_note() const override { return latency::kQuantileNote; }

 private:
  std::shared_ptr<const Config> cfg_;
  std::shared_ptr<const Topology> topo_;
  std::shared_ptr<const EnvSpec> spec_;
};

}  // namespace

EnvEntry entry() {
  return {"aset",
          "DNN inference queries over distributed edge clusters and a cloud (ASET model)",
          [] { return std::make_unique<Config>(); },
          [](const EnvConfig& c, int n) -> std::unique_ptr<EnvFactory> {
            return std::make_unique<AsetFactory>(dynamic_cast<const Config&>(c), n);
          },
          marlsched::edge_heuristic_names,
          marlsched::make_edge_heuristic};
}

}  // namespace marlsched::aset
