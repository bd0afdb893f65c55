/// \file entry.cpp
/// The bc row of the learner table: behaviour cloning of MAPPO's actor from a dataset; the
/// --mappo options shape the actor, the bc options name the dataset.

#include "agents/bc/bc.hpp"
#include "agents/registry.hpp"

namespace marlsched::learners {

namespace {
std::vector<const Mappo*> inner(const std::vector<const Learner*>& ranks) {
  std::vector<const Mappo*> out;
  for (const auto* b : learners_as<BehaviourCloning>(ranks)) out.push_back(&b->mappo());
  return out;
}
}  // namespace

LearnerEntry bc() {
  return {
      "bc",
      "behaviour cloning: MAPPO's actor fitted to a dataset's actions (--dataset), offline",
      {options_of<MappoConfig>(), options_of<BcConfig>()},
      [](const LearnerConfigs& c) {
        c.get<MappoConfig>().validate();
        c.get<BcConfig>().validate();
      },
      [](const LearnerConfigs& c, const EnvSpec& spec) { c.get<MappoConfig>().check_env(spec); },
      [](const LearnerConfigs& c, const EnvSpec&) { return c.get<MappoConfig>().rollout_steps; },
      [](const LearnerConfigs&) { return 0.0; },
      [](const LearnerConfigs& c) { return c.get<MappoConfig>().share_actor; },
      [](const LearnerConfigs& c, const EnvSpec& spec, const dist::Comm& comm, int n, int first,
         int k, int copies, std::uint64_t seed) {
        return std::make_unique<BehaviourCloning>(c.get<BcConfig>(), c.with_device<MappoConfig>(),
                                                  spec, comm, n, first, k, copies, seed);
      },
      [](const std::vector<const Learner*>& ranks, const std::string& path,
         const std::string& metadata, bool with_critic) {
        Mappo::export_torchscript(inner(ranks), path, metadata, with_critic);
      },
      1,
      [](const LearnerConfigs& c, const EnvSpec& spec, int n, int rank, int ranks) {
        check_bc_dataset(c.get<BcConfig>(), spec, n, rank, ranks);
      }};
}

}  // namespace marlsched::learners
