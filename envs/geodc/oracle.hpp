#pragma once
/// \file oracle.hpp
/// A hindsight upper bound on geodc's system utility: the linear relaxation of the episode's
/// scheduling problem, solved with COIN-OR CLP. docs/envs/geodc.md ("Oracle bound") gives the
/// formulation and what it relaxes.

#include <cstdint>
#include <string>
#include <vector>

#include "envs/geodc/geodc.hpp"

namespace marlsched::geodc {

struct BoundResult {
  /// The bound on the episode's utility (sum of every agent's rewards); NaN when the LP would
  /// exceed kMaxBoundColumns columns (thousands of sites that can each reach every other).
  double utility = 0;
  int columns = 0;          ///< of the LP (where it gave up, when too large)
  bool lagrangian = false;  ///< the Lagrangian dual's value, not the LP's optimum
  /// With `lagrangian`: a feasible point's value of the same LP (a greedy schedule of the
  /// relaxed jobs), so the LP's optimum lies in [lp_lower, utility].
  double lp_lower = 0;
  int iterations = 0;  ///< subgradient steps taken (with `lagrangian`)
};

/// Up to this many columns the LP is solved exactly (CLP's dual simplex: about 0.3 s per episode
/// at 4 sites); above it, the bound is the Lagrangian dual of the capacity rows (see
/// utility_bound), which costs time linear in the columns per step.
constexpr std::size_t kExactBoundColumns = 100'000;
constexpr std::size_t kMaxBoundColumns = 20'000'000;

/// Bounds the relaxation for the episode that `shards` (one per agent, in agent order) start
/// with these seeds; the shards are reset to that episode. Up to `exact_columns` columns, solves
/// the LP with CLP (throws Error when the solver does not reach an optimum, which a bounded,
/// feasible LP always should). Above it, prices the capacity rows with multipliers λ ≥ 0 and
/// lets each job take its best column: for any λ that is an upper bound on the LP (weak
/// duality), lowered by projected subgradient steps on λ (Polyak steps towards the value of a
/// greedy feasible schedule of the chosen columns) until the two are within 0.5 % or 400 steps;
/// the lowest value found is the bound.
BoundResult utility_bound(const Config& cfg, const EnvSpec& spec, std::vector<Shard*> shards,
                          std::uint64_t world_seed, const std::vector<std::uint64_t>& shard_seeds,
                          std::size_t exact_columns = kExactBoundColumns);

}  // namespace marlsched::geodc
