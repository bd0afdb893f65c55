#pragma once
/// \file family.hpp
/// What the learner-table rows that train MAPPO's networks (mappo, ippo, bc, awr) read alike
/// from the --mappo options: the env check, the rollout length, the reward mix and whether the
/// actor is shared.

#include "agents/mappo/mappo.hpp"
#include "agents/registry.hpp"

namespace marlsched::learners {

class OnMappoNetworks : public LearnerFamily {
 public:
  void check_env(const LearnerConfigs& c, const EnvSpec& spec) const override {
    c.get<MappoConfig>().check_env(spec);
  }
  int rollout_steps(const LearnerConfigs& c, const EnvSpec&) const override {
    return c.get<MappoConfig>().rollout_steps;
  }
  double team_reward(const LearnerConfigs& c) const override {
    return c.get<MappoConfig>().team_reward;
  }
  bool shared(const LearnerConfigs& c) const override { return c.get<MappoConfig>().share_actor; }
};

}  // namespace marlsched::learners
