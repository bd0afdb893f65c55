#pragma once
/// \file minibatch.hpp
/// The order in which an epoch visits a rollout's rows: a seeded shuffle of units of `unit`
/// consecutive rows (single rows, or whole groups that must stay together, e.g. the (step, copy)
/// groups of a pooled critic), the same wherever the same generator state is used.

#include <cstdint>
#include <vector>

#include "core/rng.hpp"

namespace marlsched {

/// Fills `order` with a permutation of [0, units * unit): a Fisher-Yates shuffle of the units
/// (drawing units - 1 numbers from `rng`), each unit's rows kept consecutive and in order.
inline void shuffle_units(int units, int unit, Rng& rng, std::vector<std::int64_t>& order) {
  std::vector<std::int64_t> uperm(static_cast<std::size_t>(units));
  for (int i = 0; i < units; ++i) uperm[static_cast<std::size_t>(i)] = i;
  for (int i = units - 1; i > 0; --i)
    std::swap(uperm[static_cast<std::size_t>(i)],
              uperm[rng.below(static_cast<std::uint64_t>(i + 1))]);
  order.resize(static_cast<std::size_t>(units * unit));
  for (int i = 0; i < units * unit; ++i)
    order[static_cast<std::size_t>(i)] =
        uperm[static_cast<std::size_t>(i / unit)] * unit + i % unit;
}

}  // namespace marlsched
