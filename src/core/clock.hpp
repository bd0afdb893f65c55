#pragma once
/// \file clock.hpp
/// The framework's one timer: seconds on a monotonic clock (std::chrono::steady_clock), for time
/// splits, benchmarks and the watchdog. Differences of two calls are meaningful; the value alone
/// is not a time of day.

#include <chrono>

namespace marlsched {

inline double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace marlsched
