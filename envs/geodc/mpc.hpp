#pragma once
/// \file mpc.hpp
/// Model-predictive control for geodc: the rival an operator with the project's LP model and
/// day-ahead forecasts would deploy. At every slot it solves, with COIN-OR CLP, a linear program
/// over the jobs present (queued or in transfer at every site) and the next `horizon` start
/// slots, with each site's GPUs minus what its running jobs hold, and applies the first slot's
/// decisions through the env's own action space (map_to_action). Arrivals are not forecast: it
/// plans the jobs it knows. docs/envs/geodc.md ("MPC baselines") gives the formulation.
///
/// Two forecasts of carbon intensity and price:
/// * oracle (`mpc-oracle`): the episode's true future values;
/// * day-ahead persistence (`mpc`): an hour not yet seen takes the value of the same hour on
///   the latest day already seen (the current hour is known).

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/policy.hpp"
#include "envs/geodc/geodc.hpp"

namespace marlsched::geodc {

enum class Forecast { kOracle, kPersistence };

/// The (price USD/MWh, carbon g/kWh) that `forecast` gives, at the current slot of `site`, for
/// `slot` of its episode (>= the current slot).
std::pair<double, double> forecast_prices(const Shard& site, Forecast forecast, int slot);

/// One slot's plan: for each site, the GPUs of its queued jobs the LP starts there now, starts
/// there later, and starts at each other agent; and the GPUs planned to run at each site and
/// slot of the horizon (running jobs included), with the free capacity those must respect.
struct SlotPlan {
  /// One queued job as the plan sees it, in the env's queue order (earliest deadline first):
  /// what act() needs to decide on it, and the LP's shares of it.
  struct JobShare {
    std::uint64_t id = 0;
    int gpus = 0, deadline = 0, remaining = 0, hops = 0;
    int cls = 0;                ///< its class for the action (Config::action_class)
    bool in_transfer = false;   ///< not yet here: act() leaves it alone
    double now = 0, later = 0;  ///< started here now, started here later
    std::vector<double> to;     ///< [destination agent]: started there
  };
  int slot = 0, horizon = 0, max_hops = 0;
  std::vector<std::vector<JobShare>> jobs;  ///< [site]
  std::vector<int> free_now;                ///< [site]: GPUs not held by running jobs
  std::vector<double> run_now, run_later;   ///< [site]
  std::vector<std::vector<double>> moved;   ///< [site][destination agent]
  std::vector<std::vector<double>> used;    ///< [site][slot - plan slot], GPUs
  std::vector<int> capacity;                ///< [site]
  double objective = 0;                     ///< of the LP (the plan's value in reward terms)
  int columns = 0;
};

/// Solves the slot's LP for `sites` (every agent, in agent order, all at the same slot). With
/// `known_arrivals` the LP also holds the jobs that will arrive within the horizon
/// (Shard::upcoming_arrivals, hindsight no real policy has) instead of reserving their expected
/// load: they compete for capacity but get no action now.
SlotPlan plan_slot(const std::vector<const Shard*>& sites, const EnvSpec& spec, Forecast forecast,
                   int horizon, bool known_arrivals = false);

/// The mapping rule from a site's plan to its action (mode x target, EnvSpec::targets): the
/// action whose first-slot decisions agree most with the plan. Each candidate action is played
/// through the env's own rule for a slot (geodc.cpp, Shard::act: earliest deadline first, run
/// what fits — under deferral only urgent jobs —, forward the rest to the target or keep it),
/// and scores, per job, the LP's share of what that action does with it (started here now,
/// forwarded to the target, or kept: started here later or not run). Ties go to run-fit before
/// deferral, and to the site itself before other targets. The candidates are the T run-fit
/// actions, and with `with_deferral` the T deferral actions too. The baselines leave deferral
/// out: it holds every non-urgent job of the site, so a plan that starts some jobs now and others
/// later ends up deferring them all (on training seeds it lost at every horizon tried;
/// docs/envs/geodc.md, "MPC baselines"). With job classes (--action-classes) the action is one
/// (mode, target) per class: starting from the best action that takes one decision for every
/// class, every combination of the classes' decisions is scored, each class's candidates in the
/// tie order, and a better one taken; above kMapExhaustive actions, each class's decision in
/// turn is the best given the others' (two sweeps; the classes interact only through the GPUs
/// that earlier jobs take). With `class_deferral` the classes' candidates include deferral (it
/// holds only that class's jobs): the hindsight schedule maps so; the MPC baselines do not (on
/// training seeds it made them worse, docs/envs/geodc.md, "Job classes").
int map_to_action(const SlotPlan& plan, const EnvSpec& spec, int site, bool with_deferral = false,
                  bool class_deferral = false);
constexpr int kMapExhaustive = 4096;  ///< map_to_action scores every action up to this many

/// The MPC baselines: "mpc" and "mpc-oracle", each optionally with ":H", the horizon in slots
/// (default kMpcHorizon); and "hindsight" (default horizon hindsight_horizon()): the oracle MPC
/// that also knows the arrivals, the lower end of the bracket on the optimum that evaluations
/// print (EnvEntry::hindsight_schedule), not a baseline; nullptr for any other name.
std::unique_ptr<Policy> make_mpc(const std::string& name);
constexpr int kMpcHorizon = 8;         ///< tuned on training seeds (docs/envs/geodc.md)
constexpr int kHindsightHorizon = 32;  ///< tuned on training seeds (docs/envs/geodc.md)
/// The hindsight schedule's horizon above kHindsightSmall sites, where the 32-slot LP costs
/// seconds per decision and did no better on training seeds (docs/envs/geodc.md).
constexpr int kHindsightHorizonAtScale = 16;
constexpr int kHindsightSmall = 8;
/// The hindsight schedule's default horizon at `sites` sites.
inline int hindsight_horizon(int sites) {
  return sites <= kHindsightSmall ? kHindsightHorizon : kHindsightHorizonAtScale;
}

}  // namespace marlsched::geodc
