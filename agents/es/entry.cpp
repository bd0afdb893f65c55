/// \file entry.cpp
/// Evolution strategies' row of the learner table (agents/es, the --es options group).

#include "agents/es/es.hpp"
#include "agents/registry.hpp"
#include "envs/baselines.hpp"

namespace marlsched::learners {

LearnerEntry es() {
  LearnerEntry e{"es",
                 "evolution strategies: augmented random search with common random numbers",
                 {options_of<EsConfig>()},
                 [](const LearnerConfigs& c) { c.get<EsConfig>().validate(); },
                 [](const LearnerConfigs& c, const EnvSpec& spec) {
                   const auto& es = c.get<EsConfig>();
                   es.check_env(spec);
                   if (!es.imitate.empty())
                     make_heuristic(es.imitate, spec, 0);  // a baseline of this env
                   if (!es.base.empty()) make_heuristic(es.base, spec, 0);
                 },
                 // One whole episode per copy per iteration.
                 [](const LearnerConfigs&, const EnvSpec& spec) { return spec.episode_length; },
                 // Its fitness sums the learner reward over every agent: the team return for any β.
                 [](const LearnerConfigs&) { return 1.0; },
                 [](const LearnerConfigs&) { return true; },
                 [](const LearnerConfigs& c, const LearnerLayout& l) {
                   const auto& es = c.get<EsConfig>();
                   Es::TeacherMaker teacher;
                   if (!es.imitate.empty())
                     teacher = [name = es.imitate, spec = l.spec, seed = l.seed] {
                       return make_heuristic(name, *spec, seed);
                     };
                   Es::TeacherMaker base;
                   if (!es.base.empty())
                     base = [name = es.base, spec = l.spec, seed = l.seed] {
                       return make_heuristic(name, *spec, seed);
                     };
                   return std::make_unique<Es>(es, *l.spec, *l.comm, l.num_agents, l.first_agent,
                                               l.local_agents, l.copies, l.seed, std::move(teacher),
                                               std::move(base));
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
