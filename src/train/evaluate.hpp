#pragma once
/// \file evaluate.hpp
/// Runs policies for whole episodes and summarises the system-level outcome, so that a learned
/// policy and every heuristic baseline are compared on the same seeds (the same episode start
/// days and the same arrival streams).

#include <cstdint>
#include <string>
#include <vector>

#include "core/env.hpp"
#include "core/policy.hpp"
#include "dist/comm.hpp"

namespace marlsched {

/// Per-episode system totals (summed over agents and slots), averaged over episodes; a mean
/// component (EnvSpec::mean_components) is its mean over agents, slots and episodes instead.
struct EvalRow {
  std::string policy;
  int episodes = 0;
  double utility = 0, utility_sd = 0;  ///< episode return of the system (sum of rewards)
  std::vector<double> returns;         ///< each episode's utility, in episode order
  std::vector<double> components;      ///< env reward components, per episode (or mean)
  /// The env's system metrics over all evaluation episodes (EnvFactory::summarize).
  std::vector<std::pair<std::string, double>> metrics;
};

struct EvalSettings {
  int agents_per_rank = 1;
  int copies = 1;
  int episodes = 4;  ///< rounded up to a multiple of copies
  std::uint64_t seed = 1000;
};

/// Collective over `comm`: every rank calls it with the same settings.
EvalRow evaluate(Policy& policy, const EnvFactory& factory, const dist::Comm& comm,
                 const EvalSettings& s);

/// A policy under evaluation and the name of its row (empty: the policy's own name()).
struct EvalEntry {
  Policy* policy = nullptr;
  std::string name;
};

/// Collective: evaluates every entry, in order, on the same held-out episodes; where
/// `with_bound`, brackets the optimum of those episodes: the env's hindsight bound above
/// (EnvFactory::episode_bound) and `hindsight`, a feasible schedule that may read the future,
/// below (either may be absent), with each policy's gap to both. A policy that needs every
/// agent (Policy::needs_every_agent) gets every shard at every rank (World::set_every_shard)
/// and acts the same at any rank count. Rank 0 prints the table and writes eval.csv, eval.md and
/// eval-episodes.csv into `out_dir` (none if empty).
void evaluate_and_report(const std::vector<EvalEntry>& entries, const EnvFactory& factory,
                         const dist::Comm& comm, const EvalSettings& es, bool with_bound,
                         const std::string& out_dir, Policy* hindsight = nullptr);

/// A table with one row per policy: utility, each reward component (labelled by
/// EnvSpec::component_label), then the env's system metrics (4 significant digits).
std::string format_eval_table(const EnvSpec& spec, const std::vector<EvalRow>& rows, bool markdown);
std::string format_eval_csv(const EnvSpec& spec, const std::vector<EvalRow>& rows);
/// One line per policy and episode (policy,episode,utility): what `marlsched compare` pairs
/// across training seeds (the episodes of one eval seed are the same for every policy and run).
std::string format_eval_episodes_csv(const std::vector<EvalRow>& rows);

}  // namespace marlsched
