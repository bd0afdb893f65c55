/// \file entry.cpp
/// The two-timescale DQN's row of the learner table (agents/tsdqn): its --ts options group and
/// DQN's, which configures its short head.

#include "agents/registry.hpp"
#include "agents/tsdqn/tsdqn.hpp"

namespace marlsched::learners {

LearnerEntry tsdqn() {
  return {"tsdqn",
          "two-timescale DQN: a long-window head and a per-step head (LSTCB's method)",
          {options_of<DqnConfig>(), options_of<TsdqnConfig>()},
          [](const LearnerConfigs& c) {
            c.get<DqnConfig>().validate();
            c.get<TsdqnConfig>().validate();
          },
          [](const LearnerConfigs& c, const EnvSpec& spec) {
            check_tsdqn_env(spec);
            c.get<TsdqnConfig>().short_subset(spec);
          },
          [](const LearnerConfigs& c, const EnvSpec&) { return c.get<DqnConfig>().rollout_steps; },
          [](const LearnerConfigs& c) { return c.get<DqnConfig>().team_reward; },
          [](const LearnerConfigs& c) { return c.get<DqnConfig>().share; },
          [](const LearnerConfigs& c, const LearnerLayout& l) {
            return std::make_unique<TwoTimescaleDqn>(
                c.get<TsdqnConfig>(), c.with_device<DqnConfig>(), *l.spec, *l.comm, l.num_agents,
                l.first_agent, l.local_agents, l.copies, l.seed);
          },
          [](const std::vector<const Learner*>&, const std::string&, const std::string&, bool) {
            MARLSCHED_THROW(ConfigError,
                            "export: two-timescale DQN (tsdqn) policies cannot be exported yet; "
                            "evaluate them with `marlsched eval --model RUN_DIR`");
          }};
}

}  // namespace marlsched::learners
