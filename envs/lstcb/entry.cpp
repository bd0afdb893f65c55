/// \file entry.cpp
/// The lstcb env's row of the env table: its name, description, config and factory.

#include "core/latency_histogram.hpp"
#include "envs/lstcb/lstcb.hpp"
#include "envs/registry.hpp"

namespace marlsched {
// The env's baselines (baselines.cpp).
const std::vector<std::string>& batch_heuristic_names();
std::unique_ptr<Policy> make_batch_heuristic(const std::string& name, const EnvSpec& spec,
                                             std::uint64_t seed);
}  // namespace marlsched

namespace marlsched::lstcb {

namespace {

class LstcbFactory final : public EnvFactory {
 public:
  LstcbFactory(const Config& cfg, int num_agents)
      : cfg_(std::make_shared<Config>(cfg)),
        spec_(std::make_shared<EnvSpec>(make_spec(cfg, num_agents))),
        profile_(select_profile(cfg)),
        n_(num_agents) {}
  const EnvSpec& spec() const override { return *spec_; }
  std::unique_ptr<marlsched::Shard> make_shard(int agent) const override {
    return std::make_unique<Shard>(cfg_, spec_, profile_, agent, n_);
  }
  std::vector<std::pair<std::string, double>> summarize(
      const std::map<std::string, double>& counters) const override {
    return lstcb::summarize(counters);
  }
  std::string metrics_note() const override { return latency::kQuantileNote; }

 private:
  std::shared_ptr<const Config> cfg_;
  std::shared_ptr<const EnvSpec> spec_;
  Profile profile_;
  int n_;
};

}  // namespace

EnvEntry entry() {
  return {"lstcb",
          "energy-efficient batching of inference requests on cooperating edge servers, "
          "long/short timescales (LSTCB model)",
          [] { return std::make_unique<Config>(); },
          [](const EnvConfig& c, int n) -> std::unique_ptr<EnvFactory> {
            return std::make_unique<LstcbFactory>(dynamic_cast<const Config&>(c), n);
          },
          marlsched::batch_heuristic_names,
          marlsched::make_batch_heuristic};
}

}  // namespace marlsched::lstcb
