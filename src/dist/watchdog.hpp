#pragma once
/// \file watchdog.hpp
/// A per-rank watchdog for hangs that MPI does not report: a rank stuck in a loop, in a
/// blocked file system call, or waiting forever in a collective for a rank that hangs. The
/// code calls `heartbeat(phase)` wherever it makes progress (every env step, update, checkpoint);
/// a thread checks the time since the last beat and, after `timeout_s` without one, prints one
/// line naming the rank, the phase and the silence, and aborts the whole job (MPI_Abort), so an
/// allocation is never held by a hung run. Ranks fire a little apart (0.5 s per rank, at most
/// 3 s) so that usually one message is printed. A dead rank (SIGKILL, node loss) is reported
/// by the launcher (mpirun/srun) already; this covers ranks that are alive but silent.

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace marlsched::dist {

/// Records progress (cheap: two relaxed atomic stores). `phase` must be a string literal.
void heartbeat(const char* phase);

class Watchdog {
 public:
  /// Starts the watch thread; `timeout_s` <= 0 disables the watchdog. `rank`/`size` only name
  /// the rank in the message.
  Watchdog(double timeout_s, int rank, int size);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  void watch();
  double timeout_s_;
  int rank_, size_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace marlsched::dist
