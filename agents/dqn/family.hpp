#pragma once
/// \file family.hpp
/// What the learner-table rows that train DQN's Q-networks (dqn, tsdqn's short head, cql) read
/// alike from the --dqn options: the rollout length, the reward mix and whether the network is
/// shared.

#include "agents/dqn/dqn.hpp"
#include "agents/registry.hpp"

namespace marlsched::learners {

class OnDqnNetworks : public LearnerFamily {
 public:
  int rollout_steps(const LearnerConfigs& c, const EnvSpec&) const override {
    return c.get<DqnConfig>().rollout_steps;
  }
  double team_reward(const LearnerConfigs& c) const override {
    return c.get<DqnConfig>().team_reward;
  }
  bool shared(const LearnerConfigs& c) const override { return c.get<DqnConfig>().share; }
};

}  // namespace marlsched::learners
