#pragma once
/// \file trajectory_recorder.hpp
/// The training loop's side of the trajectory file: which segment a run (or a resumed run)
/// writes, this rank's rows of every step gathered from the world and the learner, and the
/// flushes. The file itself is io/trajectory.hpp's.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/learner.hpp"
#include "dist/comm.hpp"
#include "io/trajectory.hpp"
#include "train/world.hpp"

namespace marlsched {

class TrajectoryRecorder {
 public:
  /// Where the steps before `start_iteration` are: the checkpoint's segment and row count
  /// (segment -1: none was logged).
  struct Resume {
    int segment = -1;
    std::int64_t rows = 0;
  };
  /// Collective. Rank 0 first cuts the resumed run's segment back to the checkpoint and removes
  /// newer segments (so no step is on disk twice); then, unless logging is off or nothing is
  /// left to train, every rank opens the next segment.
  TrajectoryRecorder(const dist::Comm& comm, const World& world, const TrajConfig& cfg,
                     const std::string& run_dir, const TrajMeta& meta, int last_iteration,
                     int compute_threads, Resume from);

  /// Before World::step: the observations the agents act on, and the learner's decisions on
  /// them (actions, log-probabilities, values).
  void before_step(const World& world, int iteration, const Decisions& d);
  /// After World::step: rewards, components, episode ends and next observations; buffers the
  /// step.
  void after_step(const World& world);
  /// Flushes if this iteration is a flush point (every `every`, a checkpoint, the last); the
  /// checkpoint's and the last flush are on disk when it returns.
  void end_iteration(int iteration, bool checkpoint, bool last);

  /// The segment and rows a checkpoint records.
  int segment() const { return segment_; }
  std::int64_t rows() const { return rows_; }
  /// Seconds the training thread spent recording and flushing.
  double seconds() const { return seconds_; }
  /// Seconds a background writer thread spent (0 without one).
  double writer_seconds() const { return writer_seconds_; }

 private:
  /// This rank's rows of a copy's global observations, into `out` at [copy * K + k][d].
  void local_obs(const World& world, const GlobalObs& g, int copy, std::vector<float>& out) const;

  std::unique_ptr<TrajectoryWriter> writer_;
  TrajStep step_;
  int every_ = 0, segment_ = -1;
  std::int64_t rows_ = 0;
  double seconds_ = 0, writer_seconds_ = 0;
};

}  // namespace marlsched
