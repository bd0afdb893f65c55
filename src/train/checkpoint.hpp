#pragma once
/// \file checkpoint.hpp
/// Crash-safe checkpoints. A checkpoint is a directory `RUN_DIR/checkpoints/ckpt-NNNNNNNN` with
/// one model file and one state file per rank and a MANIFEST that names the complete set (size
/// and FNV-1a hash of every file, rank count, layout, version, config fingerprint). It is
/// written as `ckpt-NNNNNNNN.tmp` and renamed only after every rank has written and rank 0 has
/// written the manifest, so a directory without `.tmp` is always complete. The last K are kept.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "dist/comm.hpp"

namespace marlsched {

struct ManifestFile {
  std::string name;
  std::uint64_t size = 0, hash = 0;
};

struct Manifest {
  int iteration = 0;
  int ranks = 0;
  int agents_per_rank = 0;
  int envs_per_rank = 0;
  std::string version;
  std::string config_fingerprint;
  /// The trajectory segment that holds the steps up to this checkpoint (-1: none) and its rows.
  int traj_segment = -1;
  std::int64_t traj_rows = 0;
  std::vector<ManifestFile> files;
};

/// Writes `text` to `path` through `path.tmp` and a rename, so readers never see a partial
/// file; throws InputError if the write fails.
void write_file_atomic(const std::string& path, const std::string& text);

/// FNV-1a 64 of a file's bytes; throws InputError if unreadable.
std::uint64_t file_hash(const std::string& path, std::uint64_t* size = nullptr);

/// Fingerprint of a resolved config: a hash of its lines, except those keys a resumed run may
/// change (iterations, run-dir, quiet, evaluation, checkpoint and trajectory settings).
std::string config_fingerprint(const std::string& resolved_toml);

/// Parses a MANIFEST; throws InputError naming the file and line when malformed.
Manifest read_manifest(const std::string& path);
void write_manifest(const std::string& path, const Manifest& m);

/// The newest complete checkpoint directory of a run, if any.
std::optional<std::string> latest_checkpoint(const std::string& run_dir);

/// Checks a checkpoint against this run (rank count, layout, version, config) and this rank's
/// files against the manifest. Throws ConfigError/InputError with a clear message.
Manifest validate_checkpoint(const std::string& ckpt_dir, int rank, int ranks, int agents_per_rank,
                             int envs_per_rank, const std::string& fingerprint);

/// Collective: writes checkpoint `iteration`; `write_rank_files(dir)` writes this rank's files
/// (ckpt_model_file(rank) and ckpt_state_file(rank)) into `dir`. Keeps the newest `keep`.
void write_checkpoint(const dist::Comm& comm, const std::string& run_dir, int iteration, int keep,
                      const Manifest& header,
                      const std::function<void(const std::string& dir)>& write_rank_files);

/// Names of this rank's files in a checkpoint.
std::string ckpt_model_file(int rank);
std::string ckpt_state_file(int rank);

}  // namespace marlsched
