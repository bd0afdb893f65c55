/// \file entry.cpp
/// DQN's row of the learner table (agents/dqn, the --dqn options group).

#include "agents/dqn/dqn.hpp"
#include "agents/registry.hpp"

namespace marlsched::learners {

LearnerEntry dqn() {
  return {"dqn",
          "deep Q-learning: independent learners, replay, target network (ASET's method)",
          {options_of<DqnConfig>()},
          [](const LearnerConfigs& c) { c.get<DqnConfig>().validate(); },
          [](const LearnerConfigs&, const EnvSpec&) {},
          [](const LearnerConfigs& c, const EnvSpec&) { return c.get<DqnConfig>().rollout_steps; },
          [](const LearnerConfigs& c) { return c.get<DqnConfig>().team_reward; },
          [](const LearnerConfigs& c) { return c.get<DqnConfig>().share; },
          [](const LearnerConfigs& c, const LearnerLayout& l) {
            return std::make_unique<Dqn>(c.with_device<DqnConfig>(), *l.spec, *l.comm, l.num_agents,
                                         l.first_agent, l.local_agents, l.copies, l.seed);
          },
          [](const std::vector<const Learner*>& ranks, const std::string& path,
             const std::string& metadata, bool with_critic) {
            MARLSCHED_REQUIRE(!with_critic,
                              "--critic: DQN has no critic (its Q-values are exported as "
                              "the method q(obs, agent))");
            Dqn::export_torchscript(learners_as<Dqn>(ranks), path, metadata);
          }};
}

}  // namespace marlsched::learners
