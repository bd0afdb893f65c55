#pragma once
/// \file registry.hpp
/// The table of learners (trained by `marlsched train`); the heuristic baselines are the envs'
/// (envs/baselines.hpp). Adding a learner takes today: a folder under agents/, a
/// member of LearnerConfigs with its bind line and include below, one row in registry.cpp's
/// table, and its sources in agents/CMakeLists.txt. Issue 24 brings this down to one folder and
/// one row.

#include <memory>
#include <string>
#include <vector>

#include "agents/dqn/dqn.hpp"
#include "agents/es/es.hpp"
#include "agents/mappo/mappo.hpp"
#include "agents/masac/masac.hpp"
#include "agents/tsdqn/tsdqn.hpp"
#include "core/learner.hpp"

namespace marlsched {

/// Options of every learner (each binds its own group of flags).
struct LearnerConfigs {
  MappoConfig mappo;
  DqnConfig dqn;
  TsdqnConfig tsdqn;  ///< with `dqn` for its short head
  MasacConfig masac;
  EsConfig es;
  std::string device = "cpu";  ///< --device, for every learner (nn::check_device)
  void bind(OptionBinder& b) {
    b.group("Agent: every learner");
    b.add("device", device,
          "where the learner's networks run: cpu, cuda (each rank takes its node-local rank's "
          "GPU) or cuda:N; CUDA needs marlsched built against a CUDA libtorch");
    mappo.bind(b);
    dqn.bind(b);
    tsdqn.bind(b);
    masac.bind(b);
    es.bind(b);
  }
  /// Validates the named learner's options; throws ConfigError for an unknown name.
  void validate(const std::string& algo) const;
  /// Throws ConfigError when the named learner cannot act in an env of this spec (before any
  /// collective, so that the error is one clear line).
  void check_env(const std::string& algo, const EnvSpec& spec) const;
  /// Throws ConfigError when the named learner cannot train on `copies` env copies per rank
  /// (ES: antithetic pairs of copies that share episodes, so an even number).
  void check_copies(const std::string& algo, int copies) const;
  /// Environment steps per iteration in an env of this spec, and β of the team reward, of the
  /// named learner.
  int rollout_steps(const std::string& algo, const EnvSpec& spec) const;
  double team_reward(const std::string& algo) const;
  /// Whether the named learner keeps one network for all agents (else one per agent).
  bool shared(const std::string& algo) const;
};

const std::vector<std::string>& learner_names();
/// The named learner's one-line description (for `marlsched list`).
std::string learner_description(const std::string& algo);

/// Builds the named learner for this rank's layout; throws ConfigError for an unknown name.
std::unique_ptr<Learner> make_learner(const std::string& algo, const LearnerConfigs& cfg,
                                      const EnvSpec& spec, const dist::Comm& comm, int num_agents,
                                      int first_agent, int local_agents, int copies,
                                      std::uint64_t seed);

/// The named learner as the trainer takes it (core/learner.hpp): its builder, rollout length in
/// an env of this spec and team-reward β. Validates the learner's options first.
LearnerRecipe learner_recipe(const std::string& algo, const LearnerConfigs& cfg,
                             const EnvSpec& spec);

/// Writes the learners of every training rank (made by make_learner with `algo`) as one
/// TorchScript policy; `with_critic` adds MAPPO's critic (other learners have none: error).
void export_learners(const std::string& algo, const std::vector<const Learner*>& ranks,
                     const std::string& path, const std::string& metadata, bool with_critic);

}  // namespace marlsched
