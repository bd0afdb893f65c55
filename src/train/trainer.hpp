#pragma once
/// \file trainer.hpp
/// The training loop (reads like LULESH's main loop): setup, barrier, timed iterations of
/// rollout + update, the slowest rank's time split reported by rank 0, and a final self-check
/// that shared parameters are bitwise identical on every rank.

#include <signal.h>

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "core/env.hpp"
#include "core/learner.hpp"
#include "core/options.hpp"
#include "core/team_reward.hpp"
#include "dist/comm.hpp"
#include "io/trajectory.hpp"

namespace marlsched {

/// Options of a run (the part that is neither env nor algorithm).
/// Bounds on the sizes of a run (declared in RunConfig::bind): far above any layout the project has
/// run (128 agents at 64 per rank, 32 env copies per rank), far below what would exhaust a node.
constexpr int kMaxAgentsPerRank = 1 << 16;
constexpr int kMaxEnvsPerRank = 1 << 16;
constexpr int kMaxEvalEpisodes = 1 << 20;

struct RunConfig {
  std::string env = "geodc";
  std::string algo = "mappo";
  std::uint64_t seed = 1;
  int iterations = 100;
  int agents_per_rank = 1;
  int envs_per_rank = 4;
  std::string run_dir = "runs/default";
  int eval_episodes = 8;
  std::uint64_t eval_seed = 1000;  ///< held-out seed: other start days and arrival streams
  bool eval_after = true;
  /// Evaluate learned policies greedily (the most probable action), as RL papers report
  /// deterministic policies; false samples from the policy as in training.
  bool eval_greedy = true;
  /// Next to the evaluation, the env's hindsight upper bound on each episode's utility (where
  /// the env has one: geodc's LP relaxation) and every policy's gap to it.
  bool eval_bound = true;
  int check_every = 10;      ///< iterations between parameter-identity checks across ranks
  int threads = 1;           ///< torch intra-op threads per rank
  int checkpoint_every = 0;  ///< iterations between checkpoints (0: none)
  int keep_checkpoints = 3;
  double watchdog_s = 1800;  ///< abort the job after this long without progress (0: never)
  bool quiet = false;
  bool tensorboard = true;  ///< TensorBoard event files in run_dir/tb
  /// Which agents the team part of a learner's reward, β·mean (its --team-reward), averages:
  /// all agents, or the agent's targets (EnvSpec::targets: itself and its neighbours, the
  /// neighbourhood reward of networked multi-agent RL, whose scale does not shrink with N).
  enum class TeamScope { kAll, kTargets };
  TeamScope team_scope = TeamScope::kAll;
  /// Warm start: a trained run directory (its model-rank-R.pt) or a checkpoint directory (its
  /// rank-R.pt) of the same layout and rank count, whose parameters a fresh run starts from
  /// (Learner::init_from); empty: none. A resume ignores it (the checkpoint holds the state).
  std::string init_from;
  TrajConfig traj;  ///< HDF5 trajectory logging

  /// `learners`: the names --algo accepts, for its help line (the assembling layer's table).
  void bind(OptionBinder& b, const std::vector<std::string>& learners);
  void validate() const;
  /// The options a resumed run may change (declared may_change_on_resume; only run options
  /// are): the resume check's fingerprint (config_fingerprint) leaves them out.
  std::vector<std::string> resumable_options() const;
};

/// What the env must offer the run's options (--team-scope targets: a targeted action space);
/// throws ConfigError. train() checks it too.
void check_env(const RunConfig& run, const EnvSpec& spec);

/// Whether --traj-chunk-steps keeps the largest HDF5 chunk within HDF5's 4 GiB limit for this
/// env and layout; throws ConfigError with the largest value that fits.
void check_traj_chunks(const RunConfig& run, const EnvSpec& spec);

/// Final figures of a run (identical on every rank).
struct TrainSummary {
  int iterations = 0;
  std::int64_t env_steps = 0;
  double wall_seconds = 0;
  bool parameters_identical = true;
  /// Nonzero when a signal (SIGUSR1, SIGTERM, SIGINT) stopped the run early: every rank
  /// finished the same update, a checkpoint was written, `iterations` is the last one done.
  int stop_signal = 0;
};

/// While alive, SIGUSR1 (Slurm's warning signal), SIGUSR2, SIGTERM and SIGINT only set a flag,
/// which the training loop reads between iterations (`stop_requested`); the previous handlers
/// come back afterwards. `marlsched train` holds one for the whole run, so a signal that arrives
/// after the last iteration is harmless too. (mpirun kills the job on SIGTERM and SIGINT rather
/// than forwarding them; launch/mpirun.sh forwards them as SIGUSR1 and SIGUSR2.)
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  static constexpr int kCount = 4;  ///< signals handled

 private:
  struct sigaction old_[kCount];
};

/// The last stop signal received while a StopSignals was alive (0: none).
int stop_requested();

/// Exit code of `marlsched train` stopped by a signal after checkpointing (EX_TEMPFAIL): the
/// Slurm templates requeue the job on it.
constexpr int kExitRequeue = 75;

/// Trains and writes `run_dir/{metrics.csv,timing.csv,config.toml,model-rank-R.pt}`, the
/// trajectories (`run_dir/trajectories/segment-NNN.h5`, unless `traj.every` is 0) and checkpoints
/// every `checkpoint_every` iterations; rank 0 prints one progress line per
/// iteration. `resolved_config` is the printed TOML of the run. With `resume_from` (a validated
/// checkpoint directory) the run continues after that checkpoint's iteration, reproducing the
/// uninterrupted run exactly; metrics rows after the checkpoint are dropped, not duplicated.
/// SIGUSR1, SIGTERM or SIGINT during training make every rank stop after the same update and
/// write a checkpoint (see TrainSummary::stop_signal).
TrainSummary train(const RunConfig& run, const LearnerRecipe& learner, const EnvFactory& factory,
                   const dist::Comm& comm, const std::string& resolved_config,
                   const std::string& resume_from = "");

/// Path of a rank's model file in a run directory.
std::string model_path(const std::string& run_dir, int rank);

/// The model file of `rank` that --init-from names: RUN_DIR/model-rank-R.pt, or CKPT/rank-R.pt
/// for a checkpoint directory (one with a MANIFEST).
std::string init_model_path(const std::string& source, int rank);

}  // namespace marlsched
