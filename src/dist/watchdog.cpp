#include "dist/watchdog.hpp"

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/clock.hpp"

namespace marlsched::dist {

namespace {
std::atomic<double> g_last_beat{0.0};
std::atomic<const char*> g_phase{"start"};

}  // namespace

void heartbeat(const char* phase) {
  g_phase.store(phase, std::memory_order_relaxed);
  g_last_beat.store(now(), std::memory_order_relaxed);
}

Watchdog::Watchdog(double timeout_s, int rank, int size)
    : timeout_s_(timeout_s), rank_(rank), size_(size) {
  if (timeout_s_ <= 0) return;
  heartbeat("start");
  thread_ = std::thread([this] { watch(); });
}

Watchdog::~Watchdog() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Watchdog::watch() {
  const double stagger = std::min(3.0, 0.5 * rank_);
  const auto poll = std::chrono::duration<double>(std::clamp(timeout_s_ / 20, 0.05, 1.0));
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, poll, [this] { return done_; })) {
    const double silent = now() - g_last_beat.load(std::memory_order_relaxed);
    if (silent < timeout_s_ + stagger) continue;
    char line[512];
    const int n = std::snprintf(
        line, sizeof line,
        "marlsched: error on rank %d of %d: watchdog: no progress for %.0f s (last phase: %s); "
        "a rank is stuck or waits for one that is (--watchdog-s %.0f); aborting the job\n",
        rank_, size_, silent, g_phase.load(std::memory_order_relaxed), timeout_s_);
    std::fflush(stdout);
    if (n > 0) (void)!::write(2, line, static_cast<std::size_t>(std::min<int>(n, sizeof line - 1)));
    MPI_Abort(MPI_COMM_WORLD, 3);
    std::_Exit(3);
  }
}

}  // namespace marlsched::dist
