#pragma once
/// \file gae.hpp
/// Generalised advantage estimation (Schulman et al. 2016) for one sequence of steps, with
/// correct episode boundaries: at a termination the next value is 0; at a truncation (time
/// limit) it is V(terminal state), so timeouts are not mistaken for terminal states.

#include <cstdint>
#include <vector>

namespace marlsched {

/// For step t: `next_value[t]` is V(s_{t+1}) as seen by the caller (V(terminal) at truncation,
/// 0 at termination), and `episode_end[t]` cuts the λ-recursion after t.
/// Writes advantages and returns (advantage + value).
void compute_gae(const std::vector<float>& reward, const std::vector<float>& value,
                 const std::vector<float>& next_value, const std::vector<std::uint8_t>& episode_end,
                 float gamma, float lambda, std::vector<float>& advantage,
                 std::vector<float>& returns);

/// Running mean and variance over batches, merged exactly (Chan et al.); used for value
/// normalisation. Ranks merge their batch moments by allreduce before calling `update`, so the
/// statistics are identical everywhere.
struct RunningMoments {
  double count = 0, mean = 0, m2 = 0;
  /// Merges a batch given by its count, sum and sum of squares.
  void update(double n, double sum, double sumsq);
  double var() const { return count > 1 ? m2 / count : 1.0; }
  double std() const;
};

}  // namespace marlsched
