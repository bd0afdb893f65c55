#pragma once
/// \file latency_histogram.hpp
/// Latency histograms that can be summed across shards and ranks as plain counters: bin 0 holds
/// latencies up to 0.1 ms, then 10 log-spaced bins per decade up to 1 s (the last bin holds all
/// above). A percentile is reported as the upper edge of the bin that holds it (within +26 %).

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace marlsched::latency {

constexpr int kBins = 41;

inline int bin(double ms) {
  if (!(ms > 0.1)) return 0;
  const int b = 1 + static_cast<int>(std::floor(10.0 * std::log10(ms / 0.1)));
  return std::min(b, kBins - 1);
}

inline double bin_upper(int b) {
  return 0.1 * std::pow(10.0, b / 10.0);
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
