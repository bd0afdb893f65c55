#pragma once
/// \file trainer.hpp
/// The training loop (reads like LULESH's main loop): setup, barrier, timed iterations of
/// rollout + update, the slowest rank's time split reported by rank 0, and a final self-check
/// that shared parameters are bitwise identical on every rank.

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "agents/registry.hpp"
#include "core/env.hpp"
#include "core/options.hpp"
#include "dist/comm.hpp"
#include "io/trajectory.hpp"

namespace marlsched {

/// Options of a run (the part that is neither env nor algorithm).
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
  int check_every = 10;      ///< iterations between parameter-identity checks across ranks
  int threads = 1;           ///< torch intra-op threads per rank
  int checkpoint_every = 0;  ///< iterations between checkpoints (0: none)
  int keep_checkpoints = 3;
  bool quiet = false;
  TrajConfig traj;  ///< HDF5 trajectory logging

  void bind(OptionBinder& b);
  void validate() const;
};

/// Final figures of a run (identical on every rank).
struct TrainSummary {
  int iterations = 0;
  std::int64_t env_steps = 0;
  double wall_seconds = 0;
  bool parameters_identical = true;
};

/// Trains and writes `run_dir/{metrics.csv,timing.csv,config.toml,model-rank-R.pt}`, the
/// trajectories (`run_dir/trajectories/segment-NNN.h5`, unless `traj.every` is 0) and checkpoints
/// every `checkpoint_every` iterations; rank 0 prints one progress line per
/// iteration. `resolved_config` is the printed TOML of the run. With `resume_from` (a validated
/// checkpoint directory) the run continues after that checkpoint's iteration, reproducing the
/// uninterrupted run exactly; metrics rows after the checkpoint are dropped, not duplicated.
TrainSummary train(const RunConfig& run, const LearnerConfigs& learners, const EnvFactory& factory,
                   const dist::Comm& comm, const std::string& resolved_config,
                   const std::string& resume_from = "");

/// Path of a rank's model file in a run directory.
std::string model_path(const std::string& run_dir, int rank);

/// Compares the policy saved in `run_dir` (if any) with every heuristic baseline on held-out
/// seeds; prints the table on rank 0 and writes eval.csv and eval.md into `out_dir`.
void evaluate_all(const RunConfig& run, const LearnerConfigs& learners, const EnvFactory& factory,
                  const dist::Comm& comm, const std::string& model_run_dir,
                  const std::vector<std::string>& baselines, bool deterministic,
                  const std::string& out_dir);

}  // namespace marlsched
