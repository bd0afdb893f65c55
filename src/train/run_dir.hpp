#pragma once
/// \file run_dir.hpp
/// Who may write a run directory, and what in it belongs to a run (issue 22).
///
/// * One job at a time: every rank of a training holds an exclusive lock (flock) on
///   `RUN_DIR/.lock-rank-R` for as long as it runs, so a second job into the same directory
///   stops at its first rank that sees the first job's locks, whether the directory is shared or
///   node-local. The kernel drops a lock with its process, so a crashed or killed job leaves
///   nothing stuck (the lock files stay, unlocked).
/// * A run's own files (run_artifacts): what training, evaluation, export and report write.
///   A fresh training refuses a directory that holds any of them unless told to clear them;
///   clearing removes exactly those and leaves everything else (Slurm's job files and logs,
///   the user's notes) where it is.

#include <string>
#include <vector>

namespace marlsched {

/// This rank's hold on a run directory (see the file comment). Movable, not copyable.
class RunDirLock {
 public:
  /// Takes rank `rank`'s lock in `run_dir` (which must exist) without waiting; throws
  /// InputError naming the holder (host, pid, start time) when another job has it.
  RunDirLock(const std::string& run_dir, int rank);
  RunDirLock(RunDirLock&& o) noexcept;
  RunDirLock& operator=(RunDirLock&&) = delete;
  RunDirLock(const RunDirLock&) = delete;
  RunDirLock& operator=(const RunDirLock&) = delete;
  ~RunDirLock();

 private:
  int fd_ = -1;
};

/// "" when no job holds `run_dir` (or it has no lock file); else who holds it ("pid P on HOST
/// since T"), for readers (eval, export) that should say they read a run still being written.
std::string run_dir_holder(const std::string& run_dir);

/// The names (files and folders) of a run's own outputs present in `run_dir`, sorted; empty
/// when it holds none (or does not exist).
std::vector<std::string> run_artifacts(const std::string& run_dir);

/// Removes run_artifacts(run_dir) and nothing else.
void clear_run_artifacts(const std::string& run_dir);

/// How many ranks trained the run in `run_dir`, from its `model-rank-R.pt` files. Throws
/// InputError when it holds none, or when one below the highest is missing (naming it).
int trained_ranks(const std::string& run_dir);

/// Moves `path` (a damaged checkpoint directory or trajectory segment of the run in `run_dir`)
/// into `run_dir/quarantine/`, keeping its name (with `.1`, `.2`, … when taken); returns where
/// it went. Nothing is deleted: the user inspects or removes the quarantine.
std::string quarantine(const std::string& run_dir, const std::string& path);

/// Where an evaluation writes when not told (`--out`): `base/evals/K` for the first K = 1, 2, …
/// that does not exist yet, so that no evaluation replaces a training's tables or another
/// evaluation's.
std::string next_eval_dir(const std::string& base);

}  // namespace marlsched
