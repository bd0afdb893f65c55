#pragma once
/// \file learner.hpp
/// What the trainer asks of a learning algorithm, on top of Policy: record each step's feedback,
/// update from what it recorded, report named statistics, save and load itself, and prove that
/// the parameters it shares across ranks are still identical. MAPPO (on-policy, rollouts) and
/// DQN (off-policy, replay) both fit: the trainer runs `rollout_steps()` environment steps, each
/// followed by record(), then one update().

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/policy.hpp"

namespace marlsched {

namespace dist {
class Comm;
}

/// Per-step feedback recorded into the learner after World::step.
struct StepFeedback {
  std::vector<float> reward;          ///< [copy * local_agents + k], team-mixed
  std::vector<char> done, truncated;  ///< [copy]
  std::vector<GlobalObs> terminal;    ///< [copy], valid where done
};

/// Throws ConfigError unless `copies` env copies per rank make whole groups of `group` copies
/// that share episodes (Learner::common_episodes), as learner `name` needs to train.
void require_copy_groups(const std::string& name, int group, int copies);

/// The name of one update statistic: its metrics.csv column and its TensorBoard tag.
struct StatName {
  std::string column, tag;
};

/// Scalars from one update in `Learner::stat_names()` order, averaged over ranks (identical on
/// every rank), and where the update's time went.
struct UpdateStats {
  std::vector<double> values;
  double time_forward_backward = 0, time_allreduce = 0;
  /// False when the update took no gradient step (a replay buffer still warming up): its
  /// loss statistics are then NaN by design. After a step, every statistic must be finite.
  bool stepped = true;
};

/// What a learner's act() returns for this rank's agents in every env copy, each indexed
/// [copy * local_agents + k].
struct Decisions {
  std::vector<int> actions;
  std::vector<float> log_probs;  ///< log π(a|o) of each action
  std::vector<float> values;     ///< the learner's value estimate of each state (training mode)
};

class Learner : public Policy {
 public:
  /// Chooses this rank's actions (training mode: explores, and keeps what record() needs) and
  /// returns them with their log-probabilities and values.
  virtual Decisions act(const PolicyInput& in) = 0;
  /// Policy::act, for evaluation: the actions of act(in).
  void act(const PolicyInput& in, std::vector<int>& actions) final { actions = act(in).actions; }
  /// Training mode explores and records; evaluation mode only acts.
  virtual void set_training(bool training) = 0;
  /// In evaluation mode: the greedy action instead of a sampled one.
  virtual void set_deterministic(bool deterministic) = 0;
  /// Records the outcome of the last `act` (training mode).
  virtual void record(const StepFeedback& fb) = 0;
  /// Learns from what was recorded since the last update; `last` are the global observations
  /// after the final step. A collective: every rank calls it.
  virtual UpdateStats update(const PolicyInput& last) = 0;
  /// Common random numbers: the world runs copies c and c' of one rank the same episodes when
  /// c / common_episodes() == c' / common_episodes() (ES's antithetic pairs); 1: every copy its
  /// own.
  virtual int common_episodes() const { return 1; }
  /// Whether the global observations it records must carry every agent's privileged fields
  /// (EnvSpec::privileged_fields; World::set_privileged), for a critic that trains on them.
  virtual bool wants_privileged() const { return false; }
  /// Names of UpdateStats::values, fixed for the learner's lifetime.
  virtual const std::vector<StatName>& stat_names() const = 0;
  /// Saves/loads this rank's networks, optimiser state and RNGs (checkpoint and model files).
  virtual void save(const std::string& path) const = 0;
  virtual void load(const std::string& path) = 0;
  /// Warm start (train --init-from): this rank's parameters from a model file of the same
  /// layout, written by this learner or one whose networks it shares (MAPPO's by bc and awr);
  /// optimisers and RNGs start afresh. Collective where loading is. Learners that cannot throw
  /// ConfigError (the default).
  virtual void init_from(const std::string& path);
  /// Collective: true when every rank holds bitwise-identical shared parameters.
  virtual bool shared_parameters_identical() const = 0;
  /// Digest of the shared parameters.
  virtual std::uint64_t shared_parameter_digest() const = 0;

  /// The value of a named statistic in `st` (NaN when the learner has none of that name).
  double stat(const UpdateStats& st, const std::string& column) const;
};

/// Where a learner sits in a run: the env, the ranks, and this rank's agents and env copies.
struct LearnerLayout {
  const EnvSpec* spec = nullptr;
  const dist::Comm* comm = nullptr;
  int num_agents = 1;    ///< over all ranks
  int first_agent = 0;   ///< this rank's first agent
  int local_agents = 1;  ///< agents on this rank
  int copies = 1;        ///< env copies per rank
  std::uint64_t seed = 1;
  /// --team-scope targets: the team part of the reward is the mean over each agent's targets.
  /// Online learners get their rewards mixed by the trainer; offline learners mix a dataset's
  /// rewards themselves and read it here.
  bool team_targets = false;
  /// The env's baselines, for a learner that imitates one or acts over one (empty where the
  /// run names none).
  BaselineMaker baselines;
};

/// What the trainer needs of a learner it does not know by name: a way to build it once the
/// world's layout is known, and the two numbers the loop runs by. The layer that assembles runs
/// fills it from its table of learners (agents/registry.hpp: learner_recipe), so the framework
/// depends on no learner.
struct LearnerRecipe {
  std::function<std::unique_ptr<Learner>(const LearnerLayout&)> make;
  int rollout_steps = 1;     ///< env steps per iteration
  double team_reward = 0.0;  ///< β of the reward mix (1-β)·own + β·team
  /// The behaviour policy the trajectory file names (`behaviour_policy`, `behaviour_epsilon`):
  /// empty for a training run, whose learner (--algo) collects its own data; a dataset's policy
  /// for `marlsched collect` (train/behaviour.hpp).
  std::string behaviour;
  double behaviour_epsilon = 0.0;
};

}  // namespace marlsched
