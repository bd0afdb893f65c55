#pragma once
/// \file trajectory.hpp
/// Trajectories to HDF5 with parallel I/O (MPI-IO). Every rank writes its own agents'
/// transitions into ONE file per run segment (the first run is segment 0, each resume starts the
/// next); nothing is gathered to rank 0. The layout (docs/hdf5-layout.md) is the flat D4RL /
/// Minari convention — observations, actions, rewards, terminations, truncations — with two
/// extra leading dimensions after time: the world (env copy) and the agent:
///
///     observations        float32 [S, W, N, obs_dim]   S rows (steps), W worlds, N agents
///     next_observations   float32 [S, W, N, obs_dim]   the terminal observation at episode ends
///     actions             int32   [S, W, N]
///     rewards             float32 [S, W, N]            the env's own reward of each agent
///     terminations        uint8   [S, W]               the MDP reached a terminal state
///     truncations         uint8   [S, W]               the episode was cut by its time limit
///     log_probs, values   float32 [S, W, N]            the behaviour policy's log π(a|o), V(s)
///     infos/reward_components float32 [S, W, N, C]
///     infos/episode_ids   int64 [S, W]    infos/episode_steps int32 [S, W]
///     infos/iterations    int32 [S]
///
/// Datasets are chunked ([chunk_steps, W, agents_per_rank, ...], so a chunk belongs to one rank
/// and collective compressed writes move no data between ranks) and compressed (deflate,
/// optionally after the shuffle filter; szip; or none). Rows are buffered in memory and written by
/// `flush()`, one collective extend + write per dataset, then H5Fflush and a barrier: the file on
/// disk is consistent after every completed flush and untouched between flushes, so a crash of
/// the run outside a flush leaves everything flushed readable (a crash of the node, everything up
/// to the last synced flush: `TrajConfig::sync`). Where every rank has a core to spare, a
/// background thread of each rank does that writing, on its own communicator, while the training
/// thread fills the next buffer; it is then the only thread of the process that calls HDF5.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/env.hpp"
#include "core/options.hpp"
#include "dist/comm.hpp"

namespace marlsched {

/// Which trajectories are written, and how.
struct TrajConfig {
  /// 0: no trajectory file; k >= 1: flush the buffered steps every k iterations (and at every
  /// checkpoint and at the end). Every transition of every logged world is written either way;
  /// 10 by default: each flush is a dozen collective writes and an H5Fflush, a fixed cost that
  /// flushing at every iteration would pay ten times as often (docs/performance.md measures it).
  int every = 10;
  /// Optional datasets to write; terminations, truncations and the infos/ bookkeeping
  /// (episode ids, episode steps, iterations) are always written.
  std::vector<std::string> fields = {"observations",     "next_observations", "actions",
                                     "rewards",          "log_probs",         "values",
                                     "reward_components"};
  std::string compression = "none";  ///< none | deflate | szip
  /// deflate level 1..9. Level 1 and no shuffle: on the default run's data this is both the
  /// fastest and the smallest of the combinations measured (docs/performance.md).
  int level = 1;
  bool shuffle = false;  ///< byte-shuffle filter before deflate
  int chunk_steps = 0;   ///< rows per chunk; 0 = rollout steps (capped at 1 MiB)
  /// Who writes: "thread", a background thread of each rank (double buffered: the training
  /// thread fills the next rows while the previous flush is written, compressed and synced; needs
  /// MPI_THREAD_MULTIPLE, else the training thread writes); "inline", the training thread; "auto"
  /// (default), the thread where the rank has a core to spare beyond its compute threads
  /// (Comm::cores_per_rank). A thread sharing its rank's only core slows the run down: its
  /// collectives spin against the training thread (docs/performance.md).
  std::string writer = "auto";
  /// When a flush waits for the storage (fsync, through HDF5's MPI_File_sync): "checkpoint"
  /// (default), at every checkpoint's flush and the last; other flushes hand their bytes to the
  /// OS only, which keeps them readable after the run is killed but not after the node crashes
  /// (a resume cuts a segment back to its checkpoint's rows anyway). "flush": every flush, at a
  /// cost that docs/performance.md ("Trajectory logging") explains.
  std::string sync = "checkpoint";

  void bind(OptionBinder& b);
  void validate() const;
};

/// The optional fields `TrajConfig::fields` may name.
const std::vector<std::string>& traj_optional_fields();

/// What a trajectory file records about its run (root attributes).
struct TrajMeta {
  EnvSpec spec;
  std::string algo, config_toml;
  /// The policy that chose the actions (a training run: the learner, `algo`) and the ε of its
  /// uniform randomisation.
  std::string behaviour_policy;
  double behaviour_epsilon = 0.0;
  std::uint64_t seed = 0;
  int agents_per_rank = 1, worlds = 1, rollout_steps = 1;
  int segment = 0, first_iteration = 1;
};

/// One step of this rank's agents in every world, indexed [world * K + k] (× inner size).
struct TrajStep {
  std::int32_t iteration = 0;
  std::vector<float> observations, next_observations;   ///< [W*K*obs_dim]
  std::vector<std::int32_t> actions;                    ///< [W*K]
  std::vector<float> rewards, log_probs, values;        ///< [W*K]
  std::vector<float> reward_components;                 ///< [W*K*C]
  std::vector<std::uint8_t> terminations, truncations;  ///< [W]
  std::vector<std::int64_t> episode_ids;                ///< [W]
  std::vector<std::int32_t> episode_steps;              ///< [W]
};

/// `RUN_DIR/trajectories/segment-NNN.h5`.
std::string traj_segment_path(const std::string& run_dir, int segment);

class TrajectoryWriter {
 public:
  /// Collective: creates the segment file with its datasets and attributes. `compute_threads`
  /// is the rank's own thread count, for the "auto" writer.
  TrajectoryWriter(const dist::Comm& comm, const TrajConfig& cfg, const std::string& path,
                   const TrajMeta& meta, int compute_threads = 1);
  ~TrajectoryWriter();
  TrajectoryWriter(const TrajectoryWriter&) = delete;
  TrajectoryWriter& operator=(const TrajectoryWriter&) = delete;

  /// Buffers one step (local, no I/O).
  void append(const TrajStep& step);
  /// Collective: writes the buffered rows, updates `rows` and `last_flushed_iteration`,
  /// H5Fflush, barrier. `last_iteration` is the newest iteration whose rows are all buffered.
  /// With a background thread it first waits for the previous flush, hands the rows over and
  /// returns, unless `durable` (a checkpoint's rows must be on disk): then it returns after
  /// the barrier. A durable flush also syncs the file to the storage (as every flush does with
  /// `TrajConfig::sync` "flush"). An error of the writer thread is thrown here, at the next flush
  /// or close.
  void flush(int last_iteration, bool durable = false);
  /// Collective: flushes, marks the file complete (attribute `complete` = 1) and closes it.
  void close(int last_iteration);

  int segment() const;
  /// Rows on disk as of the last completed flush (identical on every rank); after a durable
  /// flush or close, every row appended.
  std::int64_t rows_written() const;
  /// Seconds the training thread spent in append, flush and close so far (with a background
  /// writer: copying rows and waiting for the previous flush).
  double seconds() const;
  /// Seconds the background thread spent writing (0 without one).
  double writer_seconds() const;
  /// Whether a background thread writes.
  bool background() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Checks, without changing anything, that `segment` of a run can be cut back to `rows` rows on
/// resume: it is a marlsched trajectory file of this format with at least that many rows, and
/// those rows read back intact (every chunk passes its Fletcher32 checksum). Throws InputError
/// with a clear message otherwise. A segment < 0 means none was logged.
void check_segment_for_resume(const std::string& run_dir, int segment, std::int64_t rows);

/// On resume from a checkpoint (rank 0 only, serial I/O): cuts `segment` back to `rows` rows
/// and `last_iteration`, and removes the newer segments, so no step after the checkpoint is
/// left on disk twice. A segment < 0 removes every segment; a missing segment (moved to the
/// run's quarantine after check_segment_for_resume refused it) is skipped.
void cut_segments_for_resume(const std::string& run_dir, int segment, std::int64_t rows,
                             int last_iteration);

}  // namespace marlsched
