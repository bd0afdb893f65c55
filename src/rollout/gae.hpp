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

/// A rollout stored step-major, as on-policy learners record it: `rows` sequences (row =
/// copy * agents_per_copy + agent) of `steps` steps; reward, value and trunc_value are
/// [step * rows + row], done [step * copies + copy] (the copy's episode ended at that step).
struct RolloutSequences {
  const std::vector<float>* reward = nullptr;
  const std::vector<float>* value = nullptr;
  /// V(terminal state) where a copy's episode was truncated at that step, 0 where it terminated.
  const std::vector<float>* trunc_value = nullptr;
  const std::vector<std::uint8_t>* done = nullptr;
  int steps = 0, rows = 0, agents_per_copy = 1;
};

/// compute_gae over every row's sequence of a step-major rollout; `bootstrap[row]` is V of the
/// state after the last step. Writes advantage and return [step * rows + row].
void compute_rollout_gae(const RolloutSequences& r, const std::vector<float>& bootstrap,
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
