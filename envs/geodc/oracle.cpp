#include "geodc/oracle.hpp"

#include <ClpSimplex.hpp>
#include <CoinPackedMatrix.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.hpp"

namespace marlsched::geodc {

// The relaxation. Variables x(j, s, τ) in [0, 1]: the fraction of job j that runs at agent s from
// slot τ for its whole duration. Constraints: each job runs at most once in total; at each agent
// and slot the running jobs' GPUs fit the capacity. Objective: every reward term that a schedule
// changes, exactly as the env charges it, plus the constant terms (idle power; one violation per
// job that would be counted inside the episode unless the job completes on time). What it relaxes
// (so that no policy can score more): jobs may be split (fractional x); a job may start at any
// agent the env lets it reach as soon as it could arrive there (forwarded at its arrival slot, so
// after the shortest transfer), regardless of the one-mode-per-slot action; transfer energy is
// charged at the cheapest slot of the episode; queues have no capacity (no drops).
BoundResult utility_bound(const Config& cfg, const EnvSpec& spec, std::vector<Shard*> shards,
                          std::uint64_t world_seed, const std::vector<std::uint64_t>& shard_seeds) {
  const int n = static_cast<int>(shards.size());
  const int T = cfg.episode_slots;
  MARLSCHED_REQUIRE(n > 0 && static_cast<int>(shard_seeds.size()) == n &&
                        static_cast<int>(spec.targets.size()) == n,
                    "the bound needs every agent's shard and seed");
  const double dt = cfg.slot_hours();
  std::vector<std::vector<Job>> arrivals(static_cast<std::size_t>(n));
  for (int a = 0; a < n; ++a)
    arrivals[static_cast<std::size_t>(a)] = shards[static_cast<std::size_t>(a)]->episode_arrivals(
        world_seed, shard_seeds[static_cast<std::size_t>(a)]);
  // Energy's weight in the reward per kWh at each agent and slot, and the cheapest anywhere.
  std::vector<double> per_kwh(static_cast<std::size_t>(n * T));
  double constant = 0, cheapest = std::numeric_limits<double>::infinity();
  std::vector<int> capacity(static_cast<std::size_t>(n));
  std::vector<double> pue(static_cast<std::size_t>(n));
  for (int a = 0; a < n; ++a) {
    const auto si = static_cast<std::size_t>(cfg.site_of(a));
    capacity[static_cast<std::size_t>(a)] = cfg.gpus[si];
    pue[static_cast<std::size_t>(a)] = cfg.pue[si];
    const double idle_kwh = cfg.pue[si] * cfg.gpus[si] * cfg.idle_watts / 1000.0 * dt;
    for (int t = 0; t < T; ++t) {
      const auto [price, carbon] = shards[static_cast<std::size_t>(a)]->energy_prices(t);
      const double w = cfg.w_cost * price / 1000.0 + cfg.w_carbon * carbon / 1000.0;
      per_kwh[static_cast<std::size_t>(a * T + t)] = w;
      cheapest = std::min(cheapest, w);
      constant -= idle_kwh * w;
    }
  }
  // Where a job from `origin` can run, and from which slot on (shortest transfer over at most
  // max_hops forwards along the targets).
  auto reachable = [&](const Job& j, int origin) {
    std::vector<int> earliest(static_cast<std::size_t>(n), std::numeric_limits<int>::max());
    earliest[static_cast<std::size_t>(origin)] = j.arrival;
    for (int hop = 0; hop < cfg.max_hops; ++hop) {
      auto next = earliest;
      for (int u = 0; u < n; ++u) {
        if (earliest[static_cast<std::size_t>(u)] == std::numeric_limits<int>::max()) continue;
        for (int v : spec.targets[static_cast<std::size_t>(u)])
          if (v != u)
            next[static_cast<std::size_t>(v)] =
                std::min(next[static_cast<std::size_t>(v)],
                         earliest[static_cast<std::size_t>(u)] +
                             shards[static_cast<std::size_t>(u)]->transfer_slots(v, j.data_gb));
      }
      earliest = std::move(next);
    }
    return earliest;
  };

  // Past this many columns the LP takes minutes and gigabytes (hundreds of sites that can each
  // reach every other): no bound rather than a stalled evaluation.
  constexpr std::size_t kMaxColumns = 4'000'000;
  const int capacity_rows = n * T;
  int row = capacity_rows;  // then one row per job
  std::vector<CoinBigIndex> starts;
  std::vector<int> lengths, indices;
  std::vector<double> values, objective;
  for (int origin = 0; origin < n; ++origin)
    for (const Job& j : arrivals[static_cast<std::size_t>(origin)]) {
      const int d = j.duration;
      // A violation is counted inside the episode unless the job completes on time, whenever its
      // latest on-time start falls in the episode (T - 2 leaves the slot in which a forwarded
      // record is in flight); charged here, credited back by on-time columns.
      const bool violation = j.deadline - d + 1 <= T - 2;
      if (violation) constant -= cfg.w_sla;
      const auto earliest = reachable(j, origin);
      const double busy_w = cfg.busy_watts[static_cast<std::size_t>(j.type)] - cfg.idle_watts;
      for (int s = 0; s < n; ++s) {
        const int e = earliest[static_cast<std::size_t>(s)];
        if (e == std::numeric_limits<int>::max()) continue;
        const double kwh = pue[static_cast<std::size_t>(s)] * j.gpus * busy_w / 1000.0 * dt;
        const double util = cfg.w_util * j.gpus / capacity[static_cast<std::size_t>(s)];
        const double transfer = s == origin ? 0.0 : cheapest * cfg.transfer_kwh_per_gb * j.data_gb;
        for (int tau = e; tau < T; ++tau) {
          const int last = std::min(tau + d - 1, T - 1);
          const bool on_time = tau + d - 1 <= j.deadline;
          double c = -transfer;
          for (int u = tau; u <= last; ++u)
            c += util - kwh * per_kwh[static_cast<std::size_t>(s * T + u)];
          if (on_time && tau + d - 1 <= T - 1) c += cfg.w_work * j.gpus * d * dt;
          if (on_time && violation) c += cfg.w_sla;
          if (c <= 0) continue;  // never worth running: x = 0 is as good
          if (objective.size() >= kMaxColumns) {
            BoundResult too_large;
            too_large.utility = std::numeric_limits<double>::quiet_NaN();
            too_large.columns = static_cast<int>(objective.size());
            return too_large;
          }
          starts.push_back(static_cast<CoinBigIndex>(indices.size()));
          for (int u = tau; u <= last; ++u) {
            indices.push_back(s * T + u);
            values.push_back(j.gpus);
          }
          indices.push_back(row);
          values.push_back(1.0);
          lengths.push_back(last - tau + 2);
          objective.push_back(c);
        }
      }
      ++row;
    }
  BoundResult r;
  r.columns = static_cast<int>(objective.size());
  if (objective.empty()) {
    r.utility = constant;
    return r;
  }
  const CoinPackedMatrix matrix(true, row, r.columns, static_cast<CoinBigIndex>(values.size()),
                                values.data(), indices.data(), starts.data(), lengths.data());
  std::vector<double> col_lo(objective.size(), 0.0), col_hi(objective.size(), 1.0);
  std::vector<double> row_lo(static_cast<std::size_t>(row), -COIN_DBL_MAX);
  std::vector<double> row_hi(static_cast<std::size_t>(row), 1.0);
  for (int a = 0; a < n; ++a)
    for (int t = 0; t < T; ++t)
      row_hi[static_cast<std::size_t>(a * T + t)] = capacity[static_cast<std::size_t>(a)];
  ClpSimplex lp;
  lp.setLogLevel(0);
  lp.loadProblem(matrix, col_lo.data(), col_hi.data(), objective.data(), row_lo.data(),
                 row_hi.data());
  lp.setOptimizationDirection(-1);  // maximise
  lp.dual();
  MARLSCHED_CHECK(lp.isProvenOptimal(),
                  "the oracle LP was not solved to optimality (CLP status " << lp.status() << ")");
  r.utility = constant + lp.objectiveValue();
  return r;
}

}  // namespace marlsched::geodc
