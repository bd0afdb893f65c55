#include "envs/geodc/oracle.hpp"

#include <CoinTypes.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/error.hpp"
#include "envs/geodc/packing_lp.hpp"

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
namespace {

/// What the LP needs of the sites: energy's weight in the reward per kWh at each agent and slot
/// [a * T + t] and the cheapest anywhere, each agent's GPUs and PUE, and the idle energy's
/// (constant) part of the reward.
struct SiteTerms {
  std::vector<double> per_kwh, pue;
  std::vector<int> capacity;
  double cheapest = std::numeric_limits<double>::infinity(), constant = 0;
};

SiteTerms site_terms(const Config& cfg, const std::vector<Shard*>& shards, int T) {
  const int n = static_cast<int>(shards.size());
  const double dt = cfg.slot_hours();
  SiteTerms st;
  st.per_kwh.resize(static_cast<std::size_t>(n * T));
  st.capacity.resize(static_cast<std::size_t>(n));
  st.pue.resize(static_cast<std::size_t>(n));
  for (int a = 0; a < n; ++a) {
    const auto si = static_cast<std::size_t>(cfg.site_of(a));
    st.capacity[static_cast<std::size_t>(a)] = cfg.gpus[si];
    st.pue[static_cast<std::size_t>(a)] = cfg.pue[si];
    const double idle_kwh = cfg.pue[si] * cfg.gpus[si] * cfg.idle_watts / 1000.0 * dt;
    for (int t = 0; t < T; ++t) {
      const auto [price, carbon] = shards[static_cast<std::size_t>(a)]->energy_prices(t);
      const double w = cfg.w_cost * price / 1000.0 + cfg.w_carbon * carbon / 1000.0;
      st.per_kwh[static_cast<std::size_t>(a * T + t)] = w;
      st.cheapest = std::min(st.cheapest, w);
      st.constant -= idle_kwh * w;
    }
  }
  return st;
}

/// Where a job from `origin` can run, and from which slot on (shortest transfer over at most
/// max_hops forwards along the targets); INT_MAX where it cannot.
std::vector<int> reachable(const Config& cfg, const EnvSpec& spec,
                           const std::vector<Shard*>& shards, const Job& j, int origin) {
  const int n = static_cast<int>(shards.size());
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
}

/// One column of the LP: job `job` (its row is n * T + job) runs at agent `site` over slots
/// [first, last] on `gpus` GPUs (on the capacity rows [site * T + u]), worth `value` in the
/// objective.
struct Column {
  int job, site, first, last;
  double gpus, value;
};

/// Maximises the columns' objective under the capacity and once-per-job rows with CLP.
double solve(const std::vector<Column>& cols, int jobs, const std::vector<int>& capacity, int T) {
  const int n = static_cast<int>(capacity.size()), rows = n * T + jobs;
  std::vector<CoinBigIndex> starts;
  std::vector<int> lengths, indices;
  std::vector<double> values, objective;
  for (const Column& c : cols) {
    starts.push_back(static_cast<CoinBigIndex>(indices.size()));
    for (int u = c.first; u <= c.last; ++u) {
      indices.push_back(c.site * T + u);
      values.push_back(c.gpus);
    }
    indices.push_back(n * T + c.job);
    values.push_back(1.0);
    lengths.push_back(c.last - c.first + 2);
    objective.push_back(c.value);
  }
  std::vector<double> row_hi(static_cast<std::size_t>(rows), 1.0);
  for (int a = 0; a < n; ++a)
    for (int t = 0; t < T; ++t)
      row_hi[static_cast<std::size_t>(a * T + t)] = capacity[static_cast<std::size_t>(a)];
  return solve_packing_lp("the oracle LP", rows, starts, lengths, indices, values, objective,
                          row_hi);
}

/// The Lagrangian dual of the capacity rows (utility_bound's comment): the lowest upper bound
/// found, and a greedy feasible value of the LP below it.
BoundResult lagrangian(const std::vector<Column>& cols, int jobs, const std::vector<int>& capacity,
                       int T, double constant) {
  constexpr int kSteps = 400;
  constexpr double kGap = 0.005;
  const int n = static_cast<int>(capacity.size());
  const auto NT = static_cast<std::size_t>(n) * static_cast<std::size_t>(T);
  std::vector<double> lambda(NT, 0.0), sub(NT),
      prefix(static_cast<std::size_t>(n) * static_cast<std::size_t>(T + 1));
  std::vector<double> best_r(static_cast<std::size_t>(jobs));
  std::vector<int> chosen(static_cast<std::size_t>(jobs)), order(static_cast<std::size_t>(jobs));
  std::vector<double> load(NT);
  BoundResult r;
  r.lagrangian = true;
  r.columns = static_cast<int>(cols.size());
  double upper = std::numeric_limits<double>::infinity(), lower = -upper, theta = 2.0;
  int stalled = 0;
  auto at = [T](int s, int u) {
    return static_cast<std::size_t>(s) * static_cast<std::size_t>(T) + static_cast<std::size_t>(u);
  };
  for (int k = 0; k < kSteps; ++k) {
    r.iterations = k + 1;
    for (int s = 0; s < n; ++s) {
      double* p = prefix.data() + static_cast<std::size_t>(s) * static_cast<std::size_t>(T + 1);
      p[0] = 0;
      for (int u = 0; u < T; ++u) p[u + 1] = p[u] + lambda[at(s, u)];
    }
    std::fill(best_r.begin(), best_r.end(), 0.0);
    std::fill(chosen.begin(), chosen.end(), -1);
    for (std::size_t i = 0; i < cols.size(); ++i) {
      const Column& c = cols[i];
      const double* p =
          prefix.data() + static_cast<std::size_t>(c.site) * static_cast<std::size_t>(T + 1);
      const double v = c.value - c.gpus * (p[c.last + 1] - p[c.first]);
      if (v > best_r[static_cast<std::size_t>(c.job)]) {
        best_r[static_cast<std::size_t>(c.job)] = v;
        chosen[static_cast<std::size_t>(c.job)] = static_cast<int>(i);
      }
    }
    double value = constant;
    for (int s = 0; s < n; ++s)
      for (int u = 0; u < T; ++u) value += lambda[at(s, u)] * capacity[static_cast<std::size_t>(s)];
    for (double v : best_r) value += v;
    if (k == 0 || value < upper - 1e-9 * std::max(1.0, std::abs(upper))) {
      upper = value;
      stalled = 0;
    } else if (++stalled >= 10) {
      theta /= 2;
      stalled = 0;
      if (theta < 1e-4) break;  // the steps no longer move the bound
    }
    // A feasible point: the chosen columns, best reduced value first, where they still fit.
    std::fill(load.begin(), load.end(), 0.0);
    for (int s = 0; s < n; ++s)
      for (int u = 0; u < T; ++u) sub[at(s, u)] = capacity[static_cast<std::size_t>(s)];
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int a, int b) {
      const double ra = best_r[static_cast<std::size_t>(a)],
                   rb = best_r[static_cast<std::size_t>(b)];
      return ra != rb ? ra > rb : a < b;
    });
    double feasible = constant;
    for (int j : order) {
      const int ci = chosen[static_cast<std::size_t>(j)];
      if (ci < 0) continue;
      const Column& c = cols[static_cast<std::size_t>(ci)];
      for (int u = c.first; u <= c.last; ++u) sub[at(c.site, u)] -= c.gpus;  // the subgradient
      bool fits = true;
      for (int u = c.first; u <= c.last && fits; ++u)
        fits = load[at(c.site, u)] + c.gpus <= capacity[static_cast<std::size_t>(c.site)] + 1e-9;
      if (!fits) continue;
      for (int u = c.first; u <= c.last; ++u) load[at(c.site, u)] += c.gpus;
      feasible += c.value;
    }
    lower = std::max(lower, feasible);
    if (upper - lower <= kGap * std::max(1.0, std::abs(upper))) break;
    double norm = 0;  // of the projected subgradient (λ at 0 cannot fall further)
    for (std::size_t q = 0; q < NT; ++q)
      if (lambda[q] > 0 || sub[q] < 0) norm += sub[q] * sub[q];
    if (norm <= 0) break;  // the chosen columns fit everywhere: λ is optimal
    const double step = theta * (value - lower) / norm;
    for (std::size_t q = 0; q < NT; ++q) lambda[q] = std::max(0.0, lambda[q] - step * sub[q]);
  }
  r.utility = upper;
  r.lp_lower = lower;
  return r;
}

}  // namespace

BoundResult utility_bound(const Config& cfg, const EnvSpec& spec, std::vector<Shard*> shards,
                          std::uint64_t world_seed, const std::vector<std::uint64_t>& shard_seeds,
                          std::size_t exact_columns) {
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
  SiteTerms st = site_terms(cfg, shards, T);
  const auto& per_kwh = st.per_kwh;
  const auto& capacity = st.capacity;
  const auto& pue = st.pue;
  const double cheapest = st.cheapest;
  double constant = st.constant;

  // Past kMaxBoundColumns (gigabytes), no bound rather than a stalled evaluation.
  std::vector<Column> cols;
  int job = 0;  // the row of the job in the once-per-job rows
  for (int origin = 0; origin < n; ++origin)
    for (const Job& j : arrivals[static_cast<std::size_t>(origin)]) {
      const int d = j.duration;
      // A violation is counted inside the episode unless the job completes on time, whenever its
      // latest on-time start falls in the episode (T - 2 leaves the slot in which a forwarded
      // record is in flight); charged here, credited back by on-time columns.
      const bool violation = j.deadline - d + 1 <= T - 2;
      if (violation) constant -= cfg.w_sla;
      const auto earliest = reachable(cfg, spec, shards, j, origin);
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
          if (cols.size() >= kMaxBoundColumns) {
            BoundResult too_large;
            too_large.utility = std::numeric_limits<double>::quiet_NaN();
            too_large.columns = static_cast<int>(cols.size());
            return too_large;
          }
          cols.push_back({job, s, tau, last, static_cast<double>(j.gpus), c});
        }
      }
      ++job;
    }
  if (cols.size() > exact_columns) return lagrangian(cols, job, capacity, T, constant);
  BoundResult r;
  r.columns = static_cast<int>(cols.size());
  r.utility = cols.empty() ? constant : constant + solve(cols, job, capacity, T);
  return r;
}

}  // namespace marlsched::geodc
