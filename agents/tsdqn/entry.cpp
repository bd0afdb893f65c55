/// \file entry.cpp
/// The two-timescale DQN's row of the learner table (agents/tsdqn): its --ts options group and
/// DQN's, which configures its short head.

#include "agents/dqn/family.hpp"
#include "agents/tsdqn/tsdqn.hpp"

namespace marlsched::learners {

namespace {

class TsdqnFamily final : public OnDqnNetworks {
 public:
  std::string name() const override { return "tsdqn"; }
  std::string description() const override {
    return "two-timescale DQN: a long-window head and a per-step head (LSTCB's method)";
  }
  std::vector<OptionsMaker> options() const override {
    return {options_of<DqnConfig>(), options_of<TsdqnConfig>()};
  }
  void validate(const LearnerConfigs& c) const override {
    c.get<DqnConfig>().validate();
    c.get<TsdqnConfig>().validate();
  }
  void check_env(const LearnerConfigs& c, const EnvSpec& spec) const override {
    check_tsdqn_env(spec);
    c.get<TsdqnConfig>().short_subset(spec);
  }
  std::unique_ptr<Learner> make(const LearnerConfigs& c, const LearnerLayout& l) const override {
    return std::make_unique<TwoTimescaleDqn>(c.get<TsdqnConfig>(), c.with_device<DqnConfig>(), l);
  }
};

}  // namespace

std::unique_ptr<LearnerFamily> tsdqn() {
  return std::make_unique<TsdqnFamily>();
}

}  // namespace marlsched::learners
