#pragma once
/// \file baselines.hpp
/// Heuristic baselines, one set per env, in the env's folder (envs/<env>/baselines.cpp) and its
/// table row (EnvEntry::baseline_names, make_baseline).
///
/// geodc: for the geodc action layout (run or defer x targets, EnvSpec::targets: every site, or
/// with --site-neighbours K the site and its K ring neighbours; "site" below means one of the
/// agent's targets). They read the public observation fields (free_gpu_frac, carbon, price) of the
/// targets, as Green-DCC's rule-based strategies do.
///   random        uniform over all actions
///   round-robin   send waiting jobs to target (t + i) mod T in turn (own turn: run locally)
///   local-only    run what fits locally, never forward
///   least-loaded  run what fits locally, overflow to the site with most free GPUs
///   lowest-carbon send waiting jobs to the site with the lowest carbon intensity now
///   lowest-price  send waiting jobs to the site with the lowest electricity price now
///   wait-awhile   carbon- and price-aware deferral ("Let's Wait Awhile", Wiesner et al.,
///                 Middleware 2021; Google's carbon-aware computing): while the coming four
///                 hours' energy (price and carbon in the reward's units) is cheaper than now by
///                 more than a threshold, defer (only jobs without slack left start); otherwise
///                 least-loaded. `wait-awhile:0.1` sets the threshold (default: tuned on
///                 training seeds, bench/tune_deferral.sh).
///   green-fit     run what fits here; overflow to the other site whose energy (price and carbon
///                 in the reward's units) is cheapest now among those with at least a share θ of
///                 GPUs free, else the least-loaded one (`green-fit:0.1` sets θ; default tuned
///                 on training seeds). Green-DCC's carbon-aware placement with a capacity guard.
///   fixed-overflow run what fits here; overflow always to one site (`fixed-overflow:K`, agent
///                 index K; default tuned on training seeds): static spill-over routing to a
///                 large, green site. At that site itself it is local-only.
///   guarded-overflow fixed-overflow with admission control (holds overflow while the site's
///                 queue is above a tuned level).
///   mpc, mpc-oracle model-predictive control (envs/geodc/mpc.hpp): an LP over every site
///                 re-solved each slot with day-ahead persistence or true forecasts. They read
///                 every shard (PolicyInput::shards), so they run where one rank holds every
///                 agent; `mpc:H` sets the horizon in slots.
///   hindsight     not a baseline: the oracle MPC that also knows the arrivals ahead, the
///                 feasible lower end of the bracket that `eval` prints beside the LP bound
///                 (`hindsight:H` evaluates it with another horizon).
///
/// aset (ASET's static policies; see envs/aset/baselines.cpp): local-only, cloud-only,
/// least-loaded, random-proportional.
///
/// lstcb (batching baselines; see envs/lstcb/baselines.cpp): no-batching, fixed-batch,
/// timeout-batching, aimd, slack-batching.
///
/// coop (the learners' test task; see envs/coop/baselines.cpp): random, follow-leader.

#include <memory>
#include <string>
#include <vector>

#include "core/policy.hpp"
#include "core/rng.hpp"

namespace marlsched {

/// Names of an env's heuristic baselines, in table order; for "" every env's (deduplicated).
const std::vector<std::string>& heuristic_names(const std::string& env = "");
/// Makes a heuristic for the env of `spec`; throws ConfigError for a name that env lacks.
/// `seed` picks the PolicyInput::draw stream of the randomised ones: they act the same at every
/// rank count.
std::unique_ptr<Policy> make_heuristic(const std::string& name, const EnvSpec& spec,
                                       std::uint64_t seed);
/// make_heuristic for the env of `spec` (which must outlive it), as the layer that assembles
/// runs hands it to learners (a teacher, a residual's base).
BaselineMaker baseline_maker(const EnvSpec& spec);
/// The env's feasible hindsight schedule (EnvEntry::hindsight_schedule), or null when it has none.
std::unique_ptr<Policy> make_hindsight_schedule(const EnvSpec& spec);

}  // namespace marlsched
