/// \file entry.cpp
/// The offline rows of the learner table: bc and awr train MAPPO's networks from a dataset (the
/// --mappo options shape them), cql DQN's (the --dqn options); the offline options name the
/// dataset.

#include "agents/dqn/family.hpp"
#include "agents/mappo/family.hpp"
#include "agents/offline/offline.hpp"

namespace marlsched::learners {

namespace {

/// bc and awr: MAPPO's actor (and awr's critic) fitted to a dataset.
class PolicyFromData final : public OnMappoNetworks {
 public:
  PolicyFromData(std::string name, OfflineMethod method, std::string description)
      : name_(std::move(name)), description_(std::move(description)), method_(method) {}
  std::string name() const override { return name_; }
  std::string description() const override { return description_; }
  std::vector<OptionsMaker> options() const override {
    return {options_of<MappoConfig>(), options_of<OfflineConfig>()};
  }
  void validate(const LearnerConfigs& c) const override {
    const auto& m = c.get<MappoConfig>();
    m.validate();
    c.get<OfflineConfig>().validate();
    // Options with no effect are refused: a dataset has no teacher, and the fitted actor acts
    // alone.
    MARLSCHED_REQUIRE(m.imitate.empty() && m.base_policy.empty(),
                      name_ << " fits MAPPO's networks to --dataset; --imitate and --base-policy "
                               "belong to online MAPPO");
  }
  std::unique_ptr<Learner> make(const LearnerConfigs& c, const LearnerLayout& l) const override {
    return std::make_unique<OfflineLearner>(method_, c.get<OfflineConfig>(),
                                            c.with_device<MappoConfig>(), l);
  }
  void export_policy(const std::vector<const Learner*>& ranks, const std::string& path,
                     const std::string& metadata, bool with_critic) const override {
    std::vector<const Mappo*> nets;
    for (const auto* l : learners_as<OfflineLearner>(ranks)) nets.push_back(&l->mappo());
    Mappo::export_torchscript(nets, path, metadata, with_critic);
  }
  bool reads_inputs() const override { return true; }
  void check_inputs(const LearnerConfigs& c, const EnvSpec& spec, int n, int rank,
                    int ranks) const override {
    check_offline_dataset(c.get<OfflineConfig>(), spec, n, rank, ranks);
  }
  bool warm_starts() const override { return true; }
  void check_init(const LearnerConfigs& c, const EnvSpec& spec, int n, int k,
                  const std::string& model) const override {
    Mappo::check_model_layout(model, c.get<MappoConfig>(), spec, n, k);
  }

 private:
  std::string name_, description_;
  OfflineMethod method_;
};

/// cql: DQN's Q-networks fitted to a dataset by conservative Q-learning.
class CqlFamily final : public OnDqnNetworks {
 public:
  std::string name() const override { return "cql"; }
  std::string description() const override {
    return "offline RL: conservative Q-learning (discrete CQL) of DQN's Q-networks on a dataset "
           "(--dataset)";
  }
  std::vector<OptionsMaker> options() const override {
    return {options_of<DqnConfig>(), options_of<OfflineConfig>()};
  }
  void validate(const LearnerConfigs& c) const override {
    c.get<DqnConfig>().validate();
    c.get<OfflineConfig>().validate();
  }
  std::unique_ptr<Learner> make(const LearnerConfigs& c, const LearnerLayout& l) const override {
    return std::make_unique<CqlLearner>(c.get<OfflineConfig>(), c.with_device<DqnConfig>(), l);
  }
  void export_policy(const std::vector<const Learner*>& ranks, const std::string& path,
                     const std::string& metadata, bool with_critic) const override {
    MARLSCHED_REQUIRE(!with_critic,
                      "--critic: cql has no critic (its Q-values are exported as the method "
                      "q(obs, agent))");
    std::vector<const Dqn*> nets;
    for (const auto* l : learners_as<CqlLearner>(ranks)) nets.push_back(&l->dqn());
    Dqn::export_torchscript(nets, path, metadata);
  }
  bool reads_inputs() const override { return true; }
  void check_inputs(const LearnerConfigs& c, const EnvSpec& spec, int n, int rank,
                    int ranks) const override {
    check_offline_dataset(c.get<OfflineConfig>(), spec, n, rank, ranks, !c.get<DqnConfig>().share);
  }
};

}  // namespace

std::unique_ptr<LearnerFamily> cql() {
  return std::make_unique<CqlFamily>();
}

std::unique_ptr<LearnerFamily> bc() {
  return std::make_unique<PolicyFromData>(
      "bc", OfflineMethod::kClone,
      "behaviour cloning: MAPPO's actor fitted to a dataset's actions (--dataset)");
}

std::unique_ptr<LearnerFamily> awr() {
  return std::make_unique<PolicyFromData>(
      "awr", OfflineMethod::kAwr,
      "offline RL: advantage-weighted regression of MAPPO's actor and critic on a dataset "
      "(--dataset)");
}

}  // namespace marlsched::learners
