#include "train/time_split.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <vector>

namespace marlsched {

double rss_mib() {
  std::ifstream in("/proc/self/statm");
  long pages = 0, resident = 0;
  in >> pages >> resident;
  return static_cast<double>(resident) * static_cast<double>(::sysconf(_SC_PAGESIZE)) / 1048576.0;
}

double peak_rss_mib() {
  struct rusage u {};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // kilobytes on Linux
}

void report_time_split(const dist::Comm& comm, const StepTimes& world, const LoopTimes& loop,
                       double wall_seconds, std::int64_t agent_steps, bool parameters_identical,
                       bool trained, int iterations) {
  // The busiest rank's own shares of the wall time, with "other" (bookkeeping, metrics,
  // checkpoints), add up to 100 %; a second line gives the spread of that busy time over the
  // ranks (load imbalance).
  constexpr int kParts = 7, kRow = kParts + 2;
  const double mine[kRow] = {world.env, world.exchange, world.gather,
                             loop.act,  loop.update,    loop.allreduce,
                             loop.log,  peak_rss_mib(), loop.writer};
  std::vector<double> all(static_cast<std::size_t>(kRow * comm.size()));
  comm.allgather(mine, kRow, all.data());
  const auto at = [&](int r, int j) { return all[static_cast<std::size_t>(r * kRow + j)]; };
  const auto busy = [&](int r) { return at(r, 0) + at(r, 3) + at(r, 4) + at(r, 6); };
  int busiest = 0;
  double busy_sum = 0, busy_min = busy(0), peak_rss = 0;
  for (int r = 0; r < comm.size(); ++r) {
    if (busy(r) > busy(busiest)) busiest = r;
    busy_sum += busy(r);
    busy_min = std::min(busy_min, busy(r));
    peak_rss = std::max(peak_rss, at(r, kParts));
  }
  if (!comm.is_root()) return;
  if (!trained) {
    std::cout << "nothing to do: the run already has " << iterations << " iterations" << std::endl;
    return;
  }
  const double wall = std::max(1e-9, wall_seconds);
  const char* names[kParts] = {"env step",          "work exchange (alltoallv)", "obs allgather",
                               "policy forward",    "update fwd/bwd+optim",      "grad allreduce",
                               "trajectory logging"};
  std::cout << "time split of rank " << busiest << (comm.size() > 1 ? ", the busiest" : "") << " ("
            << std::fixed << std::setprecision(2) << wall << " s wall, " << std::setprecision(0)
            << static_cast<double>(agent_steps) / wall << " agent-steps/s):";
  double accounted = 0;
  for (int i = 0; i < kParts; ++i) {
    accounted += at(busiest, i);
    std::cout << (i ? ", " : " ") << names[i] << " " << std::setprecision(1)
              << 100.0 * at(busiest, i) / wall << "%";
  }
  std::cout << ", other " << 100.0 * std::max(0.0, wall - accounted) / wall << "%";
  if (at(busiest, kParts + 1) > 0)
    std::cout << "\ntrajectory writer thread (beside the training thread, not in the split): "
              << std::setprecision(2) << at(busiest, kParts + 1) << " s";
  if (comm.size() > 1)
    std::cout << "\nbusy time (env step, policy forward, update, logging) over " << comm.size()
              << " ranks: max " << std::setprecision(2) << busy(busiest) << " s, min " << busy_min
              << " s, max/mean " << busy(busiest) / std::max(1e-9, busy_sum / comm.size());
  std::cout << "\npeak resident memory (largest rank): " << std::setprecision(0) << peak_rss
            << " MiB\nparameters identical on all ranks: " << (parameters_identical ? "yes" : "NO")
            << std::endl;
}

}  // namespace marlsched
