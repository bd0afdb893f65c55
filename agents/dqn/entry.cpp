/// \file entry.cpp
/// DQN's row of the learner table (agents/dqn, the --dqn options group).

#include "agents/dqn/family.hpp"

namespace marlsched::learners {

namespace {

class DqnFamily final : public OnDqnNetworks {
 public:
  std::string name() const override { return "dqn"; }
  std::string description() const override {
    return "deep Q-learning: independent learners, replay, target network (ASET's method)";
  }
  std::vector<OptionsMaker> options() const override { return {options_of<DqnConfig>()}; }
  void validate(const LearnerConfigs& c) const override { c.get<DqnConfig>().validate(); }
  std::unique_ptr<Learner> make(const LearnerConfigs& c, const LearnerLayout& l) const override {
    return std::make_unique<Dqn>(c.with_device<DqnConfig>(), l);
  }
  void export_policy(const std::vector<const Learner*>& ranks, const std::string& path,
                     const std::string& metadata, bool with_critic) const override {
    MARLSCHED_REQUIRE(!with_critic,
                      "--critic: DQN has no critic (its Q-values are exported as the method "
                      "q(obs, agent))");
    Dqn::export_torchscript(learners_as<Dqn>(ranks), path, metadata);
  }
};

}  // namespace

std::unique_ptr<LearnerFamily> dqn() {
  return std::make_unique<DqnFamily>();
}

}  // namespace marlsched::learners
