#pragma once
/// \file manifest.hpp
/// A checkpoint's MANIFEST (what `train/checkpoint.hpp` writes and checks), crash-safe file
/// writes and file hashes. Plain std: no MPI, no torch (the manifest fuzzer builds it alone).

#include <cstdint>
#include <string>
#include <vector>

#include "core/file.hpp"

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
  /// The BLAS the run's ranks loaded (BlasInfo::describe()): results are reproducible only on
  /// the same one. Informative: a resume on another BLAS is allowed.
  std::string blas;
  /// The trajectory segment that holds the steps up to this checkpoint (-1: none) and its rows.
  int traj_segment = -1;
  std::int64_t traj_rows = 0;
  std::vector<ManifestFile> files;
};

/// FNV-1a 64 of a file's bytes; throws InputError if unreadable.
std::uint64_t file_hash(const std::string& path, std::uint64_t* size = nullptr);

/// Fingerprint of a resolved config: a hash of its lines, except those of the keys in
/// `may_change` (the options a resumed run may change: RunConfig::resumable_options()).
std::string config_fingerprint(const std::string& resolved_toml,
                               const std::vector<std::string>& may_change);

/// A run's config.toml as written: `toml` and a last comment line "# marlsched checksum HEX"
/// (FNV-1a 64 of the bytes before it), so that a resume or an evaluation that reads the file
/// back can tell a changed byte from what the run wrote.
std::string sealed_config(const std::string& toml);
/// Checks the checksum line of a config.toml written by sealed_config; a file without one (an
/// older run, or a file the user took over by deleting it) passes. Throws InputError naming the
/// file and what to do when a byte changed.
void check_sealed_config(const std::string& path);

/// Parses a MANIFEST; throws InputError naming the file and line when malformed.
Manifest read_manifest(const std::string& path);
void write_manifest(const std::string& path, const Manifest& m);

}  // namespace marlsched
