#include "agents/registry.hpp"

#include <cmath>

#include "agents/nn.hpp"
#include "core/error.hpp"

namespace marlsched {

double Learner::stat(const UpdateStats& st, const std::string& column) const {
  const auto& names = stat_names();
  for (std::size_t i = 0; i < names.size() && i < st.values.size(); ++i)
    if (names[i].column == column) return st.values[i];
  return std::nan("");
}

const std::vector<std::string>& learner_names() {
  static const std::vector<std::string> names = {"mappo", "dqn", "tsdqn"};
  return names;
}

namespace {
[[noreturn]] void unknown(const std::string& algo) {
  std::string known;
  for (const auto& n : learner_names()) known += (known.empty() ? "" : ", ") + n;
  MARLSCHED_THROW(ConfigError, "unknown algorithm '" << algo << "' (known: " << known << ")");
}
}  // namespace

void LearnerConfigs::validate(const std::string& algo) const {
  nn::check_device(device);
  if (algo == "mappo") return mappo.validate();
  if (algo == "dqn") return dqn.validate();
  if (algo == "tsdqn") {
    dqn.validate();
    return tsdqn.validate();
  }
  unknown(algo);
}

void LearnerConfigs::check_env(const std::string& algo, const EnvSpec& spec) const {
  validate(algo);
  if (algo == "tsdqn") {
    MARLSCHED_REQUIRE(spec.action_heads.size() == 2,
                      "tsdqn needs an env with a long and a short action head (e.g. lstcb); env '"
                          << spec.name << "' has one action head");
    MARLSCHED_REQUIRE(spec.episode_length % spec.long_every == 0,
                      "tsdqn: episodes (" << spec.episode_length
                                          << " steps) must hold whole windows of "
                                          << spec.long_every << " steps");
    tsdqn.short_subset(spec);
  }
}

int LearnerConfigs::rollout_steps(const std::string& algo) const {
  if (algo == "mappo") return mappo.rollout_steps;
  if (algo == "dqn" || algo == "tsdqn") return dqn.rollout_steps;
  unknown(algo);
}

double LearnerConfigs::team_reward(const std::string& algo) const {
  if (algo == "mappo") return mappo.team_reward;
  if (algo == "dqn" || algo == "tsdqn") return dqn.team_reward;
  unknown(algo);
}

bool LearnerConfigs::shared(const std::string& algo) const {
  if (algo == "mappo") return mappo.share_actor;
  if (algo == "dqn" || algo == "tsdqn") return dqn.share;
  unknown(algo);
}

std::unique_ptr<Learner> make_learner(const std::string& algo, const LearnerConfigs& cfg,
                                      const EnvSpec& spec, const dist::Comm& comm, int num_agents,
                                      int first_agent, int local_agents, int copies,
                                      std::uint64_t seed) {
  cfg.validate(algo);
  DqnConfig dqn = cfg.dqn;
  dqn.device = cfg.device;
  if (algo == "tsdqn")
    return std::make_unique<TwoTimescaleDqn>(cfg.tsdqn, dqn, spec, comm, num_agents, first_agent,
                                             local_agents, copies, seed);
  if (algo == "dqn")
    return std::make_unique<Dqn>(dqn, spec, comm, num_agents, first_agent, local_agents, copies,
                                 seed);
  MappoConfig mappo = cfg.mappo;
  mappo.device = cfg.device;
  return std::make_unique<Mappo>(mappo, spec, comm, num_agents, first_agent, local_agents, copies,
                                 seed);
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
}  // namespace

void export_learners(const std::string& algo, const std::vector<const Learner*>& ranks,
                     const std::string& path, const std::string& metadata, bool with_critic) {
  if (algo == "mappo")
    return Mappo::export_torchscript(as<Mappo>(ranks), path, metadata, with_critic);
  if (algo == "dqn") {
    MARLSCHED_REQUIRE(!with_critic,
                      "--critic: DQN has no critic (its Q-values are exported as "
                      "the method q(obs, agent))");
    return Dqn::export_torchscript(as<Dqn>(ranks), path, metadata);
  }
  MARLSCHED_REQUIRE(algo != "tsdqn",
                    "export: two-timescale DQN (tsdqn) policies cannot be exported yet; evaluate "
                    "them with `marlsched eval --model RUN_DIR`");
  unknown(algo);
}

}  // namespace marlsched
