/// \file entry.cpp
/// MAPPO's and IPPO's rows of the learner table: one learner (agents/mappo), the --mappo options
/// group; IPPO is MAPPO with each agent's critic reading only its own actor's input.

#include "agents/mappo/family.hpp"

namespace marlsched::learners {

namespace {

class MappoFamily final : public OnMappoNetworks {
 public:
  MappoFamily(std::string name, bool central_critic, std::string description)
      : name_(std::move(name)), description_(std::move(description)), central_(central_critic) {}
  std::string name() const override { return name_; }
  std::string description() const override { return description_; }
  std::vector<OptionsMaker> options() const override { return {options_of<MappoConfig>()}; }
  void validate(const LearnerConfigs& c) const override {
    const auto& m = c.get<MappoConfig>();
    m.validate();
    MARLSCHED_REQUIRE(central_ || m.critic == CriticKind::kConcat,
                      "--critic " << critic_name(m.critic)
                                  << ": IPPO's critics are decentralized (each sees its own "
                                     "actor's input); use --algo mappo");
  }
  std::unique_ptr<Learner> make(const LearnerConfigs& c, const LearnerLayout& l) const override {
    return std::make_unique<Mappo>(config(c.with_device<MappoConfig>()), l);
  }
  void export_policy(const std::vector<const Learner*>& ranks, const std::string& path,
                     const std::string& metadata, bool with_critic) const override {
    Mappo::export_torchscript(learners_as<Mappo>(ranks), path, metadata, with_critic);
  }
  int copy_group(const LearnerConfigs& c) const override {
    return c.get<MappoConfig>().common_episodes;
  }
  std::vector<NamedBaseline> baselines(const LearnerConfigs& c) const override {
    const auto& m = c.get<MappoConfig>();
    std::vector<NamedBaseline> v;
    if (!m.imitate.empty()) v.push_back({"--imitate", m.imitate});
    if (!m.base_policy.empty()) v.push_back({"--base-policy", m.base_policy});
    return v;
  }
  bool warm_starts() const override { return true; }
  void check_init(const LearnerConfigs& c, const EnvSpec& spec, int n, int k,
                  const std::string& model) const override {
    Mappo::check_model_layout(model, config(c.get<MappoConfig>()), spec, n, k);
  }

 private:
  /// The options as the learner takes them: IPPO's critic is the local one.
  MappoConfig config(MappoConfig m) const {
    if (!central_) m.critic = CriticKind::kLocal;
    return m;
  }
  std::string name_, description_;
  bool central_;
};

}  // namespace

std::unique_ptr<LearnerFamily> mappo() {
  return std::make_unique<MappoFamily>(
      "mappo", true,
      "multi-agent PPO: decentralised actors, a centralised critic (concat or pooled)");
}

std::unique_ptr<LearnerFamily> ippo() {
  return std::make_unique<MappoFamily>(
      "ippo", false, "independent PPO: each agent's critic sees only its own input");
}

}  // namespace marlsched::learners
