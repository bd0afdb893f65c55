#pragma once
/// \file time_split.hpp
/// Where a run's wall time went, reported at its end: the busiest rank's own split (env step,
/// exchange, gather, policy, update, allreduce, logging, other) and the spread of busy time over
/// the ranks; plus the largest resident set.

#include <cstdint>

#include "dist/comm.hpp"
#include "train/world.hpp"

namespace marlsched {

/// This rank's seconds in the trainer's parts of the loop (the world keeps its own, StepTimes).
struct LoopTimes {
  double act = 0;        ///< policy forward and record
  double update = 0;     ///< update without its gradient allreduce
  double allreduce = 0;  ///< the update's gradient allreduce
  double log = 0;        ///< trajectory logging on the training thread
  double writer = 0;     ///< a background trajectory writer thread (beside the split)
};

/// Resident set size of this process now, and its peak so far, in MiB.
double rss_mib();
double peak_rss_mib();

/// Collective. Rank 0 prints the split of the busiest rank (the one with the most time outside
/// communication: the others wait for it inside the collectives) over `wall` seconds, in which
/// `agent_steps` were taken, then the busy-time spread, the peak resident set and whether the
/// shared parameters stayed identical. With `trained` false it prints that there was nothing to
/// do instead.
void report_time_split(const dist::Comm& comm, const StepTimes& world, const LoopTimes& loop,
                       double wall, std::int64_t agent_steps, bool parameters_identical,
                       bool trained, int iterations);

}  // namespace marlsched
