/// \file entry.cpp
/// The coop env's row of the env table: its name, description, config and factory.

#include "envs/coop/coop.hpp"
#include "envs/registry.hpp"

namespace marlsched {
// The env's baselines (baselines.cpp).
const std::vector<std::string>& coop_heuristic_names();
std::unique_ptr<Policy> make_coop_heuristic(const std::string& name, const EnvSpec& spec,
                                            std::uint64_t seed);
}  // namespace marlsched

namespace marlsched::coop {

namespace {

class CoopFactory final : public EnvFactory {
 public:
  explicit CoopFactory(const Config& cfg) : spec_(std::make_shared<EnvSpec>(make_spec(cfg))) {}
  const EnvSpec& spec() const override { return *spec_; }
  std::unique_ptr<marlsched::Shard> make_shard(int agent) const override {
    return std::make_unique<Shard>(spec_, agent);
  }
  std::vector<std::pair<std::string, double>> summarize(
      const std::map<std::string, double>& counters) const override {
    const double d = counters.count("decisions") ? counters.at("decisions") : 0.0;
    return {{"match_rate", d > 0 ? counters.at("matches") / d : 0.0}};
  }

 private:
  std::shared_ptr<const EnvSpec> spec_;
};

}  // namespace

EnvEntry entry() {
  return {"coop",
          "a tiny cooperative test task with a known optimum: every agent must copy the leader's "
          "public signal (for testing learners)",
          [] { return std::make_unique<Config>(); },
          [](const EnvConfig& c, int) -> std::unique_ptr<EnvFactory> {
            return std::make_unique<CoopFactory>(dynamic_cast<const Config&>(c));
          },
          marlsched::coop_heuristic_names,
          marlsched::make_coop_heuristic};
}

}  // namespace marlsched::coop
