/// \file entry.cpp
/// Evolution strategies' row of the learner table (agents/es, the --es options group).

#include "agents/es/es.hpp"
#include "agents/registry.hpp"

namespace marlsched::learners {

namespace {

class EsFamily final : public LearnerFamily {
 public:
  std::string name() const override { return "es"; }
  std::string description() const override {
    return "evolution strategies: augmented random search with common random numbers";
  }
  std::vector<OptionsMaker> options() const override { return {options_of<EsConfig>()}; }
  void validate(const LearnerConfigs& c) const override { c.get<EsConfig>().validate(); }
  void check_env(const LearnerConfigs& c, const EnvSpec& spec) const override {
    c.get<EsConfig>().check_env(spec);
  }
  std::vector<NamedBaseline> baselines(const LearnerConfigs& c) const override {
    const auto& es = c.get<EsConfig>();
    std::vector<NamedBaseline> v;
    if (!es.imitate.empty()) v.push_back({"--es-imitate", es.imitate});
    if (!es.base.empty()) v.push_back({"--es-base", es.base});
    return v;
  }
  /// One whole episode per copy per iteration.
  int rollout_steps(const LearnerConfigs&, const EnvSpec& spec) const override {
    return spec.episode_length;
  }
  /// Its fitness sums the learner reward over every agent: the team return for any β.
  double team_reward(const LearnerConfigs&) const override { return 1.0; }
  std::unique_ptr<Learner> make(const LearnerConfigs& c, const LearnerLayout& l) const override {
    const auto& es = c.get<EsConfig>();
    return std::make_unique<Es>(es, l);
  }
  void export_policy(const std::vector<const Learner*>& ranks, const std::string& path,
                     const std::string& metadata, bool with_critic) const override {
    MARLSCHED_REQUIRE(!with_critic, "--critic: ES has no critic");
    Es::export_torchscript(learners_as<Es>(ranks), path, metadata);
  }
  int copy_group(const LearnerConfigs&) const override { return Es::kCopyGroup; }
};

}  // namespace

std::unique_ptr<LearnerFamily> es() {
  return std::make_unique<EsFamily>();
}

}  // namespace marlsched::learners
