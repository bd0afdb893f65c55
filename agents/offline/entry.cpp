/// \file entry.cpp
/// The offline rows of the learner table: bc and awr train MAPPO's networks from a dataset (the
/// --mappo options shape them), cql DQN's (the --dqn options); the offline options name the
/// dataset.

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
      [method](const LearnerConfigs& c, const LearnerLayout& l) {
        return std::make_unique<OfflineLearner>(
            method, c.get<OfflineConfig>(), c.with_device<MappoConfig>(), *l.spec, *l.comm,
            l.num_agents, l.first_agent, l.local_agents, l.copies, l.seed, l.team_targets);
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

LearnerEntry cql() {
  return {"cql",
          "offline RL: conservative Q-learning (discrete CQL) of DQN's Q-networks on a dataset "
          "(--dataset)",
          {options_of<DqnConfig>(), options_of<OfflineConfig>()},
          [](const LearnerConfigs& c) {
            c.get<DqnConfig>().validate();
            c.get<OfflineConfig>().validate();
          },
          [](const LearnerConfigs&, const EnvSpec&) {},
          [](const LearnerConfigs& c, const EnvSpec&) { return c.get<DqnConfig>().rollout_steps; },
          [](const LearnerConfigs& c) { return c.get<DqnConfig>().team_reward; },
          [](const LearnerConfigs& c) { return c.get<DqnConfig>().share; },
          [](const LearnerConfigs& c, const LearnerLayout& l) {
            return std::make_unique<CqlLearner>(c.get<OfflineConfig>(), c.with_device<DqnConfig>(),
                                                *l.spec, *l.comm, l.num_agents, l.first_agent,
                                                l.local_agents, l.copies, l.seed, l.team_targets);
          },
          [](const std::vector<const Learner*>& ranks, const std::string& path,
             const std::string& metadata, bool with_critic) {
            MARLSCHED_REQUIRE(!with_critic,
                              "--critic: cql has no critic (its Q-values are exported as the "
                              "method q(obs, agent))");
            std::vector<const Dqn*> nets;
            for (const auto* l : learners_as<CqlLearner>(ranks)) nets.push_back(&l->dqn());
            Dqn::export_torchscript(nets, path, metadata);
          },
          1,
          [](const LearnerConfigs& c, const EnvSpec& spec, int n, int rank, int ranks) {
            check_offline_dataset(c.get<OfflineConfig>(), spec, n, rank, ranks,
                                  !c.get<DqnConfig>().share);
          }};
}

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
