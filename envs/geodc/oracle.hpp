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
  /// exceed four million columns (hundreds of sites that can each reach every other).
  double utility = 0;
  int columns = 0;  ///< of the LP (where it gave up, when too large)
};

/// Solves the relaxation for the episode that `shards` (one per agent, in agent order) start with
/// these seeds. The shards are reset to that episode. Throws Error when the solver does not
/// reach an optimum (which a bounded, feasible LP always should).
BoundResult utility_bound(const Config& cfg, const EnvSpec& spec, std::vector<Shard*> shards,
                          std::uint64_t world_seed, const std::vector<std::uint64_t>& shard_seeds);

}  // namespace marlsched::geodc
