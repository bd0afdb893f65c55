#include "agents/registry.hpp"

#include <cmath>
#include <functional>

#include "agents/nn.hpp"
#include "core/error.hpp"

namespace marlsched {

void require_copy_groups(const std::string& name, int group, int copies) {
  MARLSCHED_REQUIRE(copies >= group && copies % group == 0,
                    name << " trains on groups of " << group
                         << " env copies that share episodes: --envs-per-rank must be a "
                            "multiple of "
                         << group << ", got " << copies);
}

double Learner::stat(const UpdateStats& st, const std::string& column) const {
  const auto& names = stat_names();
  for (std::size_t i = 0; i < names.size() && i < st.values.size(); ++i)
    if (names[i].column == column) return st.values[i];
  return std::nan("");
}

namespace {
template <class T>
std::vector<const T*> as(const std::vector<const Learner*>& ranks) {
  std::vector<const T*> out;
  for (const Learner* l : ranks) {
    const T* t = dynamic_cast<const T*>(l);
    MARLSCHED_CHECK(t != nullptr, "export: learner is not a " << l->name());
    out.push_back(t);
  }
  return out;
}

// The table of learners: one row per algorithm (adding one = a folder under agents/ and a row).
struct LearnerEntry {
  std::string name;
  std::string description;  ///< one line for `marlsched list`
  std::function<void(const LearnerConfigs&)> validate;
  std::function<void(const LearnerConfigs&, const EnvSpec&)> check_env;  // after validate
  std::function<int(const LearnerConfigs&, const EnvSpec&)> rollout_steps;
  std::function<double(const LearnerConfigs&)> team_reward;
  std::function<bool(const LearnerConfigs&)> shared;
  std::function<std::unique_ptr<Learner>(const LearnerConfigs&, const EnvSpec&, const dist::Comm&,
                                         int, int, int, int, std::uint64_t)>
      make;
  /// Writes the learners of every training rank as one TorchScript policy (path, metadata,
  /// with_critic).
  std::function<void(const std::vector<const Learner*>&, const std::string&, const std::string&,
                     bool)>
      exporter;
  /// Copies per group of common episodes that training needs (Learner::common_episodes): the
  /// env copies per rank must be a multiple of it.
  int copy_group = 1;
};

MappoConfig mappo_config(const LearnerConfigs& c, bool central_critic) {
  MappoConfig m = c.mappo;
  m.device = c.device;
  if (!central_critic) m.critic = "local";
  return m;
}
MasacConfig masac_config(const LearnerConfigs& c) {
  MasacConfig m = c.masac;
  m.device = c.device;
  return m;
}
DqnConfig dqn_config(const LearnerConfigs& c) {
  DqnConfig d = c.dqn;
  d.device = c.device;
  return d;
}

LearnerEntry mappo_family(const std::string& name, bool central_critic,
                          const std::string& description) {
  return {name,
          description,
          [central_critic](const LearnerConfigs& c) {
            c.mappo.validate();
            MARLSCHED_REQUIRE(central_critic || c.mappo.critic_kind() == CriticKind::kConcat,
                              "--critic " << c.mappo.critic
                                          << ": IPPO's critics are decentralized (each sees its "
                                             "own actor's input); use --algo mappo");
          },
          [](const LearnerConfigs& c, const EnvSpec& spec) { c.mappo.check_env(spec); },
          [](const LearnerConfigs& c, const EnvSpec&) { return c.mappo.rollout_steps; },
          [](const LearnerConfigs& c) { return c.mappo.team_reward; },
          [](const LearnerConfigs& c) { return c.mappo.share_actor; },
          [central_critic](const LearnerConfigs& c, const EnvSpec& spec, const dist::Comm& comm,
                           int n, int first, int k, int copies, std::uint64_t seed) {
            return std::make_unique<Mappo>(mappo_config(c, central_critic), spec, comm, n, first, k,
                                           copies, seed);
          },
          [](const std::vector<const Learner*>& ranks, const std::string& path,
             const std::string& metadata, bool with_critic) {
            Mappo::export_torchscript(as<Mappo>(ranks), path, metadata, with_critic);
          }};
}

/// MASAC, and MADDPG (`maddpg`): one off-policy learner (agents/masac), the --sac-* options.
LearnerEntry actor_critic_off_policy(const std::string& name, bool maddpg,
                                     const std::string& description) {
  return {name,
          description,
          [](const LearnerConfigs& c) { c.masac.validate(); },
          [](const LearnerConfigs&, const EnvSpec&) {},
          [](const LearnerConfigs& c, const EnvSpec&) { return c.masac.rollout_steps; },
          [](const LearnerConfigs& c) { return c.masac.team_reward; },
          [](const LearnerConfigs&) { return true; },
          [maddpg](const LearnerConfigs& c, const EnvSpec& spec, const dist::Comm& comm, int n,
                   int first, int k, int copies, std::uint64_t seed) {
            return std::make_unique<Masac>(masac_config(c), spec, comm, n, first, k, copies, seed,
                                           maddpg);
          },
          [name](const std::vector<const Learner*>& ranks, const std::string& path,
                 const std::string& metadata, bool with_critic) {
            MARLSCHED_REQUIRE(!with_critic, "--critic: " << name
                                                         << "'s critics take the other agents' "
                                                            "actions, so they are not exported; "
                                                            "the policy is");
            Masac::export_torchscript(as<Masac>(ranks), path, metadata);
          }};
}

const std::vector<LearnerEntry>& table() {
  static const std::vector<LearnerEntry> t = {
      mappo_family(
          "mappo", true,
          "multi-agent PPO: decentralised actors, a centralised critic (concat or pooled)"),
      mappo_family("ippo", false, "independent PPO: each agent's critic sees only its own input"),
      {"dqn", "deep Q-learning: independent learners, replay, target network (ASET's method)",
       [](const LearnerConfigs& c) { c.dqn.validate(); },
       [](const LearnerConfigs&, const EnvSpec&) {},
       [](const LearnerConfigs& c, const EnvSpec&) { return c.dqn.rollout_steps; },
       [](const LearnerConfigs& c) { return c.dqn.team_reward; },
       [](const LearnerConfigs& c) { return c.dqn.share; },
       [](const LearnerConfigs& c, const EnvSpec& spec, const dist::Comm& comm, int n, int first,
          int k, int copies, std::uint64_t seed) {
         return std::make_unique<Dqn>(dqn_config(c), spec, comm, n, first, k, copies, seed);
       },
       [](const std::vector<const Learner*>& ranks, const std::string& path,
          const std::string& metadata, bool with_critic) {
         MARLSCHED_REQUIRE(!with_critic,
                           "--critic: DQN has no critic (its Q-values are exported as "
                           "the method q(obs, agent))");
         Dqn::export_torchscript(as<Dqn>(ranks), path, metadata);
       }},
      {"tsdqn", "two-timescale DQN: a long-window head and a per-step head (LSTCB's method)",
       [](const LearnerConfigs& c) {
         c.dqn.validate();
         c.tsdqn.validate();
       },
       [](const LearnerConfigs& c, const EnvSpec& spec) {
         check_tsdqn_env(spec);
         c.tsdqn.short_subset(spec);
       },
       [](const LearnerConfigs& c, const EnvSpec&) { return c.dqn.rollout_steps; },
       [](const LearnerConfigs& c) { return c.dqn.team_reward; },
       [](const LearnerConfigs& c) { return c.dqn.share; },
       [](const LearnerConfigs& c, const EnvSpec& spec, const dist::Comm& comm, int n, int first,
          int k, int copies, std::uint64_t seed) {
         return std::make_unique<TwoTimescaleDqn>(c.tsdqn, dqn_config(c), spec, comm, n, first, k,
                                                  copies, seed);
       },
       [](const std::vector<const Learner*>&, const std::string&, const std::string&, bool) {
         MARLSCHED_THROW(ConfigError,
                         "export: two-timescale DQN (tsdqn) policies cannot be exported yet; "
                         "evaluate them with `marlsched eval --model RUN_DIR`");
       }},
      actor_critic_off_policy("masac", false,
                              "multi-agent soft actor-critic: discrete actions, replay, "
                              "centralised critics"),
      actor_critic_off_policy("maddpg", true,
                              "multi-agent DDPG: Gumbel-softmax actors, replay, centralised "
                              "critics"),
      {"es", "evolution strategies: augmented random search with common random numbers",
       [](const LearnerConfigs& c) { c.es.validate(); },
       [](const LearnerConfigs& c, const EnvSpec& spec) { c.es.check_env(spec); },
       // One whole episode per copy per iteration.
       [](const LearnerConfigs&, const EnvSpec& spec) { return spec.episode_length; },
       // Its fitness sums the learner reward over every agent: the team return for any β.
       [](const LearnerConfigs&) { return 1.0; }, [](const LearnerConfigs&) { return true; },
       [](const LearnerConfigs& c, const EnvSpec& spec, const dist::Comm& comm, int n, int first,
          int k, int copies, std::uint64_t seed) {
         return std::make_unique<Es>(c.es, spec, comm, n, first, k, copies, seed);
       },
       [](const std::vector<const Learner*>& ranks, const std::string& path,
          const std::string& metadata, bool with_critic) {
         MARLSCHED_REQUIRE(!with_critic, "--critic: ES has no critic");
         Es::export_torchscript(as<Es>(ranks), path, metadata);
       },
       Es::kCopyGroup},
  };
  return t;
}

const LearnerEntry& entry(const std::string& algo) {
  for (const auto& e : table())
    if (e.name == algo) return e;
  std::string known;
  for (const auto& e : table()) known += (known.empty() ? "" : ", ") + e.name;
  MARLSCHED_THROW(ConfigError, "unknown algorithm '" << algo << "' (known: " << known << ")");
}
}  // namespace

std::string learner_description(const std::string& algo) {
  return entry(algo).description;
}

const std::vector<std::string>& learner_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& e : table()) v.push_back(e.name);
    return v;
  }();
  return names;
}

void LearnerConfigs::validate(const std::string& algo) const {
  const auto& e = entry(algo);
  nn::check_device(device);
  e.validate(*this);
}

void LearnerConfigs::check_env(const std::string& algo, const EnvSpec& spec) const {
  validate(algo);
  entry(algo).check_env(*this, spec);
}

void LearnerConfigs::check_copies(const std::string& algo, int copies) const {
  require_copy_groups(algo, entry(algo).copy_group, copies);
}

int LearnerConfigs::rollout_steps(const std::string& algo, const EnvSpec& spec) const {
  return entry(algo).rollout_steps(*this, spec);
}

double LearnerConfigs::team_reward(const std::string& algo) const {
  return entry(algo).team_reward(*this);
}

bool LearnerConfigs::shared(const std::string& algo) const {
  return entry(algo).shared(*this);
}

std::unique_ptr<Learner> make_learner(const std::string& algo, const LearnerConfigs& cfg,
                                      const EnvSpec& spec, const dist::Comm& comm, int num_agents,
                                      int first_agent, int local_agents, int copies,
                                      std::uint64_t seed) {
  cfg.validate(algo);
  return entry(algo).make(cfg, spec, comm, num_agents, first_agent, local_agents, copies, seed);
}

LearnerRecipe learner_recipe(const std::string& algo, const LearnerConfigs& cfg,
                             const EnvSpec& spec) {
  cfg.validate(algo);
  LearnerRecipe r;
  r.rollout_steps = cfg.rollout_steps(algo, spec);
  r.team_reward = cfg.team_reward(algo);
  r.make = [algo, cfg](const LearnerLayout& l) {
    return make_learner(algo, cfg, *l.spec, *l.comm, l.num_agents, l.first_agent, l.local_agents,
                        l.copies, l.seed);
  };
  return r;
}

void export_learners(const std::string& algo, const std::vector<const Learner*>& ranks,
                     const std::string& path, const std::string& metadata, bool with_critic) {
  entry(algo).exporter(ranks, path, metadata, with_critic);
}

}  // namespace marlsched
