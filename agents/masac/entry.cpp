/// \file entry.cpp
/// MASAC's and MADDPG's rows of the learner table: one off-policy learner (agents/masac), the
/// --sac options group.

#include "agents/masac/masac.hpp"
#include "agents/registry.hpp"

namespace marlsched::learners {

namespace {

LearnerEntry family(const std::string& name, bool maddpg, const std::string& description) {
  return {
      name,
      description,
      {options_of<MasacConfig>()},
      [](const LearnerConfigs& c) { c.get<MasacConfig>().validate(); },
      [](const LearnerConfigs&, const EnvSpec&) {},
      [](const LearnerConfigs& c, const EnvSpec&) { return c.get<MasacConfig>().rollout_steps; },
      [](const LearnerConfigs& c) { return c.get<MasacConfig>().team_reward; },
      [](const LearnerConfigs&) { return true; },
      [maddpg](const LearnerConfigs& c, const LearnerLayout& l) {
        return std::make_unique<Masac>(c.with_device<MasacConfig>(), *l.spec, *l.comm, l.num_agents,
                                       l.first_agent, l.local_agents, l.copies, l.seed, maddpg);
      },
      [name](const std::vector<const Learner*>& ranks, const std::string& path,
             const std::string& metadata, bool with_critic) {
        MARLSCHED_REQUIRE(!with_critic, "--critic: " << name
                                                     << "'s critics take the other agents' "
                                                        "actions, so they are not exported; "
                                                        "the policy is");
        Masac::export_torchscript(learners_as<Masac>(ranks), path, metadata);
      }};
}

}  // namespace

LearnerEntry masac() {
  return family("masac", false,
                "multi-agent soft actor-critic: discrete actions, replay, centralised critics");
}

LearnerEntry maddpg() {
  return family("maddpg", true,
                "multi-agent DDPG: Gumbel-softmax actors, replay, centralised critics");
}

}  // namespace marlsched::learners
