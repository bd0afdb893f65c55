#pragma once
/// \file checkpoint.hpp
/// Crash-safe checkpoints. A checkpoint is a directory `RUN_DIR/checkpoints/ckpt-NNNNNNNN` with
/// one model file and one state file per rank and a MANIFEST that names the complete set (size
/// and FNV-1a hash of every file, rank count, layout, version, config fingerprint). It is
/// written as `ckpt-NNNNNNNN.tmp` and renamed only after every rank has written and rank 0 has
/// written the manifest, so a directory without `.tmp` is always complete. The last K are kept.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "dist/comm.hpp"
#include "train/manifest.hpp"

namespace marlsched {

/// The newest complete checkpoint directory of a run, if any.
std::optional<std::string> latest_checkpoint(const std::string& run_dir);

/// The complete checkpoint directories of a run (those with a MANIFEST), oldest first.
std::vector<std::string> checkpoints(const std::string& run_dir);

/// "" when the files of checkpoint `dir` match its MANIFEST (size and FNV-1a hash): every rank's
/// files, or only `rank`'s when rank >= 0; otherwise what is wrong, naming the file.
std::string checkpoint_damage(const std::string& dir, int rank = -1);

/// Checks a checkpoint's manifest against this run (rank count, layout, version, config).
/// Throws ConfigError/InputError with a clear message. Its files are checked against the
/// manifest by checkpoint_damage, which a resume runs first (to name the newest intact one).
Manifest validate_checkpoint(const std::string& ckpt_dir, int ranks, int agents_per_rank,
                             int envs_per_rank, const std::string& fingerprint);

/// Collective: writes checkpoint `iteration`; `write_rank_files(dir)` writes this rank's files
/// (ckpt_model_file(rank) and ckpt_state_file(rank)) into `dir`. Keeps the newest `keep`.
void write_checkpoint(const dist::Comm& comm, const std::string& run_dir, int iteration, int keep,
                      const Manifest& header,
                      const std::function<void(const std::string& dir)>& write_rank_files);

/// The trainer's part of a rank's checkpoint state (ckpt_state_file): the last iteration done,
/// the agent-steps so far, the running return of each env copy's episode and the world's state
/// (World::save_state). One field list, written and read in the same order.
struct TrainerState {
  int iteration = 0;
  std::int64_t agent_steps = 0;
  std::vector<double> episode_returns;  ///< [copy]
  std::vector<std::byte> world;

  /// Writes the state file at `path` (ckpt_state_file(rank) in a checkpoint directory).
  void save(const std::string& path) const;
  /// Reads it back; throws InputError when `path` is not a trainer state of `copies` env
  /// copies.
  static TrainerState load(const std::string& path, int copies);
};

/// Names of this rank's files in a checkpoint.
std::string ckpt_model_file(int rank);
std::string ckpt_state_file(int rank);

}  // namespace marlsched
