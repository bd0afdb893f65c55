/// \file entry.cpp
/// Evolution strategies' row of the learner table (agents/es, the --es options group).

#include "agents/es/es.hpp"
#include "agents/registry.hpp"

namespace marlsched::learners {

LearnerEntry es() {
  LearnerEntry e{
      "es",
      "evolution strategies: augmented random search with common random numbers",
      {options_of<EsConfig>()},
      [](const LearnerConfigs& c) { c.get<EsConfig>().validate(); },
      [](const LearnerConfigs& c, const EnvSpec& spec) { c.get<EsConfig>().check_env(spec); },
      // One whole episode per copy per iteration.
      [](const LearnerConfigs&, const EnvSpec& spec) { return spec.episode_length; },
      // Its fitness sums the learner reward over every agent: the team return for any β.
      [](const LearnerConfigs&) { return 1.0; },
      [](const LearnerConfigs&) { return true; },
      [](const LearnerConfigs& c, const LearnerLayout& l) {
        return std::make_unique<Es>(c.get<EsConfig>(), *l.spec, *l.comm, l.num_agents,
                                    l.first_agent, l.local_agents, l.copies, l.seed);
      },
      [](const std::vector<const Learner*>& ranks, const std::string& path,
         const std::string& metadata, bool with_critic) {
        MARLSCHED_REQUIRE(!with_critic, "--critic: ES has no critic");
        Es::export_torchscript(learners_as<Es>(ranks), path, metadata);
      }};
  e.copy_group = Es::kCopyGroup;
  return e;
}

}  // namespace marlsched::learners
