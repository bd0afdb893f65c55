#pragma once
/// \file metrics_sink.hpp
/// Where each training iteration's figures go, on rank 0: a row of metrics.csv and of
/// timing.csv, TensorBoard scalars and the progress line. Other ranks hold an empty sink.

#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "core/env.hpp"
#include "core/learner.hpp"
#include "io/tensorboard.hpp"

namespace marlsched {

/// One iteration's figures, identical on every rank except the timings.
struct IterationRecord {
  int iteration = 0;
  std::int64_t agent_steps = 0;             ///< since the run began
  int episodes = 0;                         ///< finished in this iteration
  double reward_per_slot = 0;               ///< system reward per (step, copy), summed over agents
  double episode_return = 0;                ///< mean return of the finished episodes (NaN: none)
  std::vector<double> components_per_slot;  ///< sums over agents, or means (mean components)
  const UpdateStats* update = nullptr;
  double agent_steps_per_s = 0, eta_s = 0;
  /// This rank's seconds in this iteration: all, env step, exchange, gather, policy, update,
  /// allreduce, logging; and the largest resident set over ranks (MiB).
  double wall_s = 0, env_s = 0, exchange_s = 0, gather_s = 0, act_s = 0, update_s = 0,
         allreduce_s = 0, log_s = 0, max_rss_mib = 0;
};

class MetricsSink {
 public:
  /// On rank 0 (`root`): opens RUN_DIR/metrics.csv and timing.csv (a resumed run keeps their rows
  /// up to `first_iteration` - 1 and appends) and the TensorBoard directory; throws InputError when
  /// the run directory cannot be written.
  MetricsSink(bool root, const std::string& run_dir, const EnvSpec& spec,
              const std::vector<StatName>& stats, int iterations, bool tensorboard, bool quiet,
              int first_iteration, std::int64_t agent_steps, bool resuming);
  void record(const IterationRecord& r);

 private:
  bool root_, quiet_;
  std::string run_dir_;
  const EnvSpec& spec_;
  std::vector<StatName> stats_;
  int iterations_;
  std::ofstream metrics_, timing_;
  std::unique_ptr<TensorBoardWriter> tb_;
};

}  // namespace marlsched
