/// \file entry.cpp
/// The bc and awr rows of the learner table: MAPPO's networks trained from a dataset; the
/// --mappo options shape the networks, the offline options name the dataset.

#include "agents/offline/offline.hpp"
#include "agents/registry.hpp"

namespace marlsched::learners {

namespace {

LearnerEntry offline(const std::string& name, OfflineMethod method,
                     const std::string& description) {
  return {
      name,
      description,
      {options_of<MappoConfig>(), options_of<OfflineConfig>()},
      [](const LearnerConfigs& c) {
        c.get<MappoConfig>().validate();
        c.get<OfflineConfig>().validate();
      },
      [](const LearnerConfigs& c, const EnvSpec& spec) { c.get<MappoConfig>().check_env(spec); },
      [](const LearnerConfigs& c, const EnvSpec&) { return c.get<MappoConfig>().rollout_steps; },
      [](const LearnerConfigs& c) { return c.get<MappoConfig>().team_reward; },
      [](const LearnerConfigs& c) { return c.get<MappoConfig>().share_actor; },
      [method](const LearnerConfigs& c, const EnvSpec& spec, const dist::Comm& comm, int n,
               int first, int k, int copies, std::uint64_t seed) {
        return std::make_unique<OfflineLearner>(method, c.get<OfflineConfig>(),
                                                c.with_device<MappoConfig>(), spec, comm, n, first,
                                                k, copies, seed);
      },
      [](const std::vector<const Learner*>& ranks, const std::string& path,
         const std::string& metadata, bool with_critic) {
        std::vector<const Mappo*> nets;
        for (const auto* l : learners_as<OfflineLearner>(ranks)) nets.push_back(&l->mappo());
        Mappo::export_torchscript(nets, path, metadata, with_critic);
      },
      1,
      [](const LearnerConfigs& c, const EnvSpec& spec, int n, int rank, int ranks) {
        check_offline_dataset(c.get<OfflineConfig>(), spec, n, rank, ranks);
      },
      [](const LearnerConfigs& c, const EnvSpec& spec, int n, int k, const std::string& model) {
        Mappo::check_model_layout(model, c.get<MappoConfig>(), spec, n, k);
      }};
}

}  // namespace

LearnerEntry bc() {
  return offline("bc", OfflineMethod::kClone,
                 "behaviour cloning: MAPPO's actor fitted to a dataset's actions (--dataset)");
}

LearnerEntry awr() {
  return offline("awr", OfflineMethod::kAwr,
                 "offline RL: advantage-weighted regression of MAPPO's actor and critic on a "
                 "dataset (--dataset)");
}

}  // namespace marlsched::learners
