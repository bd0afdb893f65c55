#pragma once
/// \file latency_histogram.hpp
/// Latency histograms that can be summed across shards and ranks as plain counters. Bin 0 holds
/// latencies up to 0.1 ms; bins 1-39 have 10 edges per decade at the R10 preferred numbers
/// (ISO 3: 1, 1.25, 1.6, 2, 2.5, 3.15, 4, 5, 6.3, 8 times a power of ten) up to 800 ms; bin 40
/// holds everything above 800 ms. A quantile is reported as the upper edge of the bin that holds
/// it: a bound, at most 28 % above the true value, and exact at round values such as 10, 20,
/// 40, 50 or 100 ms, so that "p99 <= 50" can be compared with a 50 ms objective. A quantile in
/// the open last bin is +inf (it is above 800 ms).

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace marlsched::latency {

constexpr int kBins = 41;

/// How evaluation tables explain a quantile metric (EnvFactory::metrics_note).
inline constexpr const char* kQuantileNote =
    "p99_* = upper edge of the latency-histogram bin holding the 99th percentile (a bound, "
    "edges at the R10 numbers 1, 1.25, 1.6, 2, 2.5, 3.15, 4, 5, 6.3, 8 ms x 10^k; inf = above "
    "800 ms)";

/// Upper edge of bin b in ms (+inf for the last, open bin).
inline double bin_upper(int b) {
  static constexpr int kR10[10] = {100, 125, 160, 200, 250, 315, 400, 500, 630, 800};
  if (b >= kBins - 1) return std::numeric_limits<double>::infinity();
  double scale = 1.0;  // 10^(b / 10), exactly
  for (int d = 0; d < b / 10; ++d) scale *= 10.0;
  return kR10[b % 10] * scale / 1000.0;
}

/// The bin of a latency (ms): the first whose upper edge is at least `ms`.
inline int bin(double ms) {
  if (!(ms > 0.1)) return 0;
  if (!(ms <= bin_upper(kBins - 2))) return kBins - 1;
  int b = std::clamp(static_cast<int>(std::floor(10.0 * std::log10(ms / 0.1))), 0, kBins - 1);
  while (b > 0 && ms <= bin_upper(b - 1)) --b;
  while (ms > bin_upper(b)) ++b;
  return b;
}

/// Upper edge of the bin holding quantile q of the counts `h` (kBins of them); NaN when empty.
inline double quantile_upper(const std::vector<double>& h, double q) {
  double total = 0;
  for (double v : h) total += v;
  double run = 0;
  for (int b = 0; b < kBins && total > 0; ++b) {
    run += h[static_cast<std::size_t>(b)];
    if (run >= q * total) return bin_upper(b);
  }
  return std::numeric_limits<double>::quiet_NaN();
}

}  // namespace marlsched::latency
