/// \file entry.cpp
/// MAPPO's and IPPO's rows of the learner table: one learner (agents/mappo), the --mappo options
/// group; IPPO is MAPPO with each agent's critic reading only its own actor's input.

#include "agents/mappo/mappo.hpp"
#include "agents/registry.hpp"

namespace marlsched::learners {

namespace {

LearnerEntry family(const std::string& name, bool central_critic, const std::string& description) {
  return {
      name,
      description,
      {options_of<MappoConfig>()},
      [central_critic](const LearnerConfigs& c) {
        const auto& m = c.get<MappoConfig>();
        m.validate();
        MARLSCHED_REQUIRE(central_critic || m.critic_kind() == CriticKind::kConcat,
                          "--critic " << m.critic
                                      << ": IPPO's critics are decentralized (each sees its "
                                         "own actor's input); use --algo mappo");
      },
      [](const LearnerConfigs& c, const EnvSpec& spec) { c.get<MappoConfig>().check_env(spec); },
      [](const LearnerConfigs& c, const EnvSpec&) { return c.get<MappoConfig>().rollout_steps; },
      [](const LearnerConfigs& c) { return c.get<MappoConfig>().team_reward; },
      [](const LearnerConfigs& c) { return c.get<MappoConfig>().share_actor; },
      [central_critic](const LearnerConfigs& c, const LearnerLayout& l) {
        MappoConfig m = c.with_device<MappoConfig>();
        if (!central_critic) m.critic = "local";
        return std::make_unique<Mappo>(m, *l.spec, *l.comm, l.num_agents, l.first_agent,
                                       l.local_agents, l.copies, l.seed);
      },
      [](const std::vector<const Learner*>& ranks, const std::string& path,
         const std::string& metadata, bool with_critic) {
        Mappo::export_torchscript(learners_as<Mappo>(ranks), path, metadata, with_critic);
      },
      1,
      {},
      [central_critic](const LearnerConfigs& c, const EnvSpec& spec, int n, int k,
                       const std::string& model) {
        MappoConfig m = c.get<MappoConfig>();
        if (!central_critic) m.critic = "local";
        Mappo::check_model_layout(model, m, spec, n, k);
      },
      [](const LearnerConfigs& c) { return c.get<MappoConfig>().common_episodes; }};
}

}  // namespace

LearnerEntry mappo() {
  return family("mappo", true,
                "multi-agent PPO: decentralised actors, a centralised critic (concat or pooled)");
}

LearnerEntry ippo() {
  return family("ippo", false, "independent PPO: each agent's critic sees only its own input");
}

}  // namespace marlsched::learners
