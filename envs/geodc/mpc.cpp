#include "envs/geodc/mpc.hpp"

#include <CoinTypes.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/error.hpp"
#include "envs/geodc/packing_lp.hpp"
#include "envs/geodc/workload.hpp"

namespace marlsched::geodc {

std::pair<double, double> forecast_prices(const Shard& site, Forecast forecast, int slot) {
  if (forecast == Forecast::kOracle) return site.energy_prices(slot);
  // Day-ahead persistence: the current hour is known; a later hour takes the value of the same
  // hour on the latest day already seen.
  const std::int64_t now = site.slot_hour(site.slot()), h = site.slot_hour(slot);
  if (h <= now) return site.energy_prices_at_hour(h);
  const std::int64_t days_back = (h - now + 23) / 24;
  return site.energy_prices_at_hour(h - 24 * days_back);
}

namespace {

/// The GPUs that one job, arriving at a site of `capacity` GPUs, holds `k` slots after it
/// arrives if it starts at once, in expectation over the configured job mix (workload.cpp's
/// draw_job: GPUs uniform over the type's powers of two, hours uniform, rounded to slots).
double expected_held(const Config& cfg, int capacity, int k) {
  double e = 0;
  for (int type = 0; type < kNumJobTypes; ++type) {
    const auto& ts = job_type_spec(type);
    double gpus = 0;
    int choices = 0;
    for (int g = ts.gpus_lo; g <= ts.gpus_hi; g *= 2, ++choices) gpus += std::min(g, capacity);
    const double dt = cfg.slot_hours();
    const double p_longer =
        k == 0 ? 1.0
               : std::clamp((ts.hours_hi - (k + 0.5) * dt) / (ts.hours_hi - ts.hours_lo), 0.0, 1.0);
    e += cfg.type_mix[static_cast<std::size_t>(type)] * gpus / choices * p_longer;
  }
  return e;
}

/// One column of the slot's LP: job `job` (its index in plan.jobs[site]) of site `site` starts
/// at agent `dest` in slot `start`.
struct Column {
  int site, job, dest, start, last;
  double gpus;
};

}  // namespace

SlotPlan plan_slot(const std::vector<const Shard*>& sites, const EnvSpec& spec, Forecast forecast,
                   int horizon, bool known_arrivals) {
  const int n = static_cast<int>(sites.size());
  MARLSCHED_CHECK(n > 0 && static_cast<int>(spec.targets.size()) == n,
                  "the MPC plans for every agent's site at once");
  const Config& cfg = sites[0]->config();
  const int t = sites[0]->slot(), end = cfg.episode_slots, L = std::max(1, end - t);
  const int H = std::max(1, std::min(horizon, L));
  const double dt = cfg.slot_hours();
  SlotPlan plan;
  plan.slot = t;
  plan.horizon = H;
  plan.run_now.assign(static_cast<std::size_t>(n), 0.0);
  plan.run_later.assign(static_cast<std::size_t>(n), 0.0);
  plan.moved.assign(static_cast<std::size_t>(n), std::vector<double>(static_cast<std::size_t>(n)));
  plan.used.assign(static_cast<std::size_t>(n), std::vector<double>(static_cast<std::size_t>(H)));
  plan.jobs.resize(static_cast<std::size_t>(n));
  plan.max_hops = cfg.max_hops;
  // Energy's weight in the reward per kWh at each site and slot to the episode's end, as
  // forecast now; each site's GPUs free of its running jobs.
  std::vector<double> per_kwh(static_cast<std::size_t>(n * L)), headroom(per_kwh.size());
  for (int s = 0; s < n; ++s) {
    const Shard& site = *sites[static_cast<std::size_t>(s)];
    MARLSCHED_CHECK(site.slot() == t, "the MPC's sites are at different slots");
    plan.capacity.push_back(site.capacity());
    for (int u = 0; u < L; ++u) {
      const auto [price, carbon] = forecast_prices(site, forecast, t + u);
      per_kwh[static_cast<std::size_t>(s * L + u)] =
          cfg.w_cost * price / 1000.0 + cfg.w_carbon * carbon / 1000.0;
      headroom[static_cast<std::size_t>(s * L + u)] = site.capacity();
    }
    int running = 0;
    for (const Job& j : site.running()) running += j.gpus;
    plan.free_now.push_back(site.capacity() - running);
    for (const Job& j : site.running())
      for (int u = 0; u < std::min(L, j.remaining); ++u) {
        headroom[static_cast<std::size_t>(s * L + u)] -= j.gpus;
        if (u < H) plan.used[static_cast<std::size_t>(s)][static_cast<std::size_t>(u)] += j.gpus;
      }
    // Arrivals are not known, but their expected load is (the configured rate): the GPUs that
    // jobs arriving after now would hold are kept free of the plan, so that the plan does not
    // put off today's jobs into capacity that tomorrow's will need.
    // With known arrivals, the jobs arriving within the horizon are columns and only the later
    // ones are expected.
    for (int u = 1; u < L; ++u) {
      double expected = 0;
      for (int v = known_arrivals ? H : 1; v <= u; ++v)
        expected +=
            site.arrival_rate_per_hour(t + v) * dt * expected_held(cfg, site.capacity(), u - v);
      headroom[static_cast<std::size_t>(s * L + u)] -= expected;
    }
  }
  // Columns: every queued job at its own site from when it is there, and (not in transfer, hops
  // left) at each other target from when a transfer started now would end; with known arrivals,
  // each job arriving within the horizon likewise from its arrival slot (job -1: no share).
  std::vector<Column> cols;
  std::vector<double> objective;
  std::vector<CoinBigIndex> starts;
  std::vector<int> lengths, rows;
  std::vector<double> values;
  int job_row = n * L;
  auto add_columns = [&](int s, const Job& j, int job) {
    const Shard& site = *sites[static_cast<std::size_t>(s)];
    const int now = std::max(t, j.arrival);  // when the site can first act on it
    const double busy_w = cfg.busy_watts[static_cast<std::size_t>(j.type)] - cfg.idle_watts;
    const int d = j.remaining;
    for (int dest : spec.targets[static_cast<std::size_t>(s)]) {
      const bool moved = dest != s;
      if (moved && (j.available > now || j.hops >= cfg.max_hops)) continue;
      const int first =
          moved ? now + site.transfer_slots(dest, j.data_gb) : std::max(now, j.available);
      const int stop = std::min(end, std::max(t + H, first + 1));
      const Shard& at = *sites[static_cast<std::size_t>(dest)];
      const double kwh = at.pue() * j.gpus * busy_w / 1000.0 * dt;
      const double util = cfg.w_util * j.gpus / at.capacity();
      const double transfer = moved ? per_kwh[static_cast<std::size_t>(s * L + now - t)] *
                                          cfg.transfer_kwh_per_gb * j.data_gb
                                    : 0.0;
      for (int tau = first; tau < stop; ++tau) {
        const int last = std::min(tau + d - 1, end - 1);
        const bool on_time = tau + d - 1 <= j.deadline;
        double c = -transfer;
        for (int u = tau; u <= last; ++u)
          c += util - kwh * per_kwh[static_cast<std::size_t>(dest * L + u - t)];
        if (on_time && tau + d - 1 <= end - 1) c += cfg.w_work * j.gpus * d * dt;
        if (on_time && !j.violated) c += cfg.w_sla;
        if (c <= 0) continue;  // never worth starting there then
        cols.push_back({s, job, dest, tau, last, static_cast<double>(j.gpus)});
        objective.push_back(c);
        starts.push_back(static_cast<CoinBigIndex>(rows.size()));
        for (int u = tau; u <= last; ++u) {
          rows.push_back(dest * L + u - t);
          values.push_back(j.gpus);
        }
        rows.push_back(job_row);
        values.push_back(1.0);
        lengths.push_back(last - tau + 2);
      }
    }
    ++job_row;
  };
  for (int s = 0; s < n; ++s) {
    const Shard& site = *sites[static_cast<std::size_t>(s)];
    std::vector<Job> queue = site.queue();  // in the order act() takes them
    std::sort(queue.begin(), queue.end(), [](const Job& a, const Job& b) {
      return a.deadline != b.deadline ? a.deadline < b.deadline : a.id < b.id;
    });
    auto& shares = plan.jobs[static_cast<std::size_t>(s)];
    for (const Job& j : queue) {
      SlotPlan::JobShare share;
      share.id = j.id;
      share.gpus = j.gpus;
      share.deadline = j.deadline;
      share.remaining = j.remaining;
      share.hops = j.hops;
      share.cls = cfg.action_class(j, t);
      share.in_transfer = j.available > t;
      share.to.assign(static_cast<std::size_t>(n), 0.0);
      shares.push_back(std::move(share));
      add_columns(s, j, static_cast<int>(shares.size()) - 1);
    }
    if (known_arrivals)
      for (const Job& j : site.upcoming_arrivals(H - 1)) add_columns(s, j, -1);
  }
  plan.columns = static_cast<int>(cols.size());
  if (cols.empty()) return plan;
  std::vector<double> row_hi(static_cast<std::size_t>(job_row), 1.0);
  for (std::size_t r = 0; r < headroom.size(); ++r) row_hi[r] = std::max(0.0, headroom[r]);
  std::vector<double> x;
  plan.objective = solve_packing_lp("the MPC's LP", job_row, starts, lengths, rows, values,
                                    objective, row_hi, &x);
  for (std::size_t i = 0; i < cols.size(); ++i) {
    const Column& c = cols[i];
    const double g = x[i] * c.gpus;
    if (g <= 1e-9) continue;
    for (int u = c.start; u <= c.last && u < t + H; ++u)
      plan.used[static_cast<std::size_t>(c.dest)][static_cast<std::size_t>(u - t)] += g;
    if (c.job < 0) continue;  // a job not here yet
    const auto s = static_cast<std::size_t>(c.site);
    auto& share = plan.jobs[s][static_cast<std::size_t>(c.job)];
    if (c.dest != c.site) {
      plan.moved[s][static_cast<std::size_t>(c.dest)] += g;
      share.to[static_cast<std::size_t>(c.dest)] += x[i];
    } else if (c.start == t) {
      plan.run_now[s] += g;
      share.now += x[i];
    } else {
      plan.run_later[s] += g;
      share.later += x[i];
    }
  }
  return plan;
}

int map_to_action(const SlotPlan& plan, const EnvSpec& spec, int site, bool with_deferral,
                  bool class_deferral) {
  const auto& tg = spec.targets[static_cast<std::size_t>(site)];
  const int T = static_cast<int>(tg.size()), C = spec.num_heads();
  MARLSCHED_CHECK(C <= Config::kNumJobClasses, "geodc has at most 3 job classes");
  const auto& jobs = plan.jobs[static_cast<std::size_t>(site)];
  const int me = static_cast<int>(std::find(tg.begin(), tg.end(), site) - tg.begin());
  // Shard::act's rule job by job under the per-class decisions d: the LP's share of what it does.
  auto score = [&](const int* d) {
    int idle = plan.free_now[static_cast<std::size_t>(site)];
    double sum = 0;
    for (const auto& j : jobs) {
      if (j.in_transfer) continue;
      const int decision = d[C == 1 ? 0 : j.cls];
      const bool defer = decision >= T;
      const int target = tg[static_cast<std::size_t>(defer ? decision - T : decision)];
      const bool urgent = plan.slot >= j.deadline - j.remaining + 1;
      if ((!defer || urgent) && j.gpus <= idle) {
        idle -= j.gpus;
        sum += j.now;
        continue;
      }
      const bool forward = target != site && j.hops < plan.max_hops && (defer ? !urgent : true);
      if (forward) {
        sum += j.to[static_cast<std::size_t>(target)];
        continue;
      }
      double elsewhere = 0;  // kept: right where the plan starts it later here or not at all
      for (double v : j.to) elsewhere += v;
      sum += 1.0 - j.now - elsewhere;
    }
    return sum;
  };
  // Candidates in tie order: run-fit before deferral, the site itself first.
  auto candidates = [&](bool deferral) {
    std::vector<int> order = {me};
    for (int k = 0; k < T; ++k)
      if (k != me) order.push_back(k);
    if (deferral) {
      order.push_back(T + me);
      for (int k = 0; k < T; ++k)
        if (k != me) order.push_back(T + k);
    }
    return order;
  };
  int d[Config::kNumJobClasses];
  int best = me;
  double best_score = -1;
  for (int action : candidates(with_deferral)) {
    std::fill(d, d + C, action);
    const double v = score(d);
    if (v > best_score + 1e-9) {
      best_score = v;
      best = action;
    }
  }
  std::fill(d, d + C, best);
  if (C == 1) return best;
  const std::vector<int> per_class = candidates(with_deferral || class_deferral);
  if (spec.num_actions() <= kMapExhaustive) {
    // Every combination, each class's decisions in tie order (an odometer over them).
    int chosen = encode_action(d, C, T);
    std::vector<std::size_t> at(static_cast<std::size_t>(C), 0);
    for (;;) {
      for (int c = 0; c < C; ++c) d[c] = per_class[at[static_cast<std::size_t>(c)]];
      const double v = score(d);
      if (v > best_score + 1e-9) {
        best_score = v;
        chosen = encode_action(d, C, T);
      }
      int c = C - 1;
      while (c >= 0 && ++at[static_cast<std::size_t>(c)] == per_class.size())
        at[static_cast<std::size_t>(c--)] = 0;
      if (c < 0) break;
    }
    return chosen;
  }
  // Larger spaces: each class's decision in turn, given the others' (two sweeps).
  for (int sweep = 0; sweep < 2; ++sweep)
    for (int c = 0; c < C; ++c) {
      double top = -1;
      int chosen = d[c];
      for (int action : per_class) {
        d[c] = action;
        const double v = score(d);
        if (v > top + 1e-9) {
          top = v;
          chosen = action;
        }
      }
      d[c] = chosen;
    }
  return encode_action(d, C, T);
}

namespace {

class Mpc final : public Policy {
 public:
  Mpc(std::string name, Forecast forecast, int horizon, bool known_arrivals)
      : name_(std::move(name)),
        forecast_(forecast),
        horizon_(horizon),
        known_arrivals_(known_arrivals) {}
  std::string name() const override { return name_; }
  ActionLaw action_law() const override { return ActionLaw::kDeterministic; }
  bool needs_every_agent() const override { return true; }

  void act(const PolicyInput& in, std::vector<int>& actions) override {
    const int n = in.num_agents, k = in.local_agents;
    MARLSCHED_CHECK(static_cast<int>(in.every_shard.size()) == in.copies * n,
                    name_ << " plans for every site at once: the world must hand it every shard "
                             "(World::set_every_shard)");
    actions.resize(static_cast<std::size_t>(in.copies * k));
    std::vector<const Shard*> sites(static_cast<std::size_t>(n));
    for (int c = 0; c < in.copies; ++c) {
      for (int a = 0; a < n; ++a) {
        sites[static_cast<std::size_t>(a)] =
            dynamic_cast<const Shard*>(in.every_shard[static_cast<std::size_t>(c * n + a)]);
        MARLSCHED_CHECK(sites[static_cast<std::size_t>(a)] != nullptr,
                        name_ << " runs on geodc's shards only");
      }
      const auto t0 = std::chrono::steady_clock::now();
      const int horizon = horizon_ > 0 ? horizon_ : hindsight_horizon(n);
      const SlotPlan plan = plan_slot(sites, *in.spec, forecast_, horizon, known_arrivals_);
      solve_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      ++solves_;
      for (int kk = 0; kk < k; ++kk)
        actions[static_cast<std::size_t>(c * k + kk)] =
            map_to_action(plan, *in.spec, in.first_agent + kk, false, known_arrivals_);
    }
  }

  std::string note() const override {
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "%s: %.2f ms per decision (one LP over every site, mean of %lld solves)",
                  name_.c_str(),
                  solves_ > 0 ? 1000.0 * solve_s_ / static_cast<double>(solves_) : 0.0, solves_);
    return buf;
  }

 private:
  std::string name_;
  Forecast forecast_;
  int horizon_;
  bool known_arrivals_;
  double solve_s_ = 0;
  long long solves_ = 0;
};

}  // namespace

std::unique_ptr<Policy> make_mpc(const std::string& name) {
  const auto colon = name.find(':');
  const std::string base = name.substr(0, colon);
  if (base != "mpc" && base != "mpc-oracle" && base != "hindsight") return nullptr;
  const bool hindsight = base == "hindsight";
  int horizon = hindsight ? 0 : kMpcHorizon;  // 0: hindsight_horizon() of the site count
  if (colon != std::string::npos) {
    const std::string text = name.substr(colon + 1);
    char* stop = nullptr;
    const long h = std::strtol(text.c_str(), &stop, 10);
    MARLSCHED_REQUIRE(!text.empty() && stop == text.c_str() + text.size() && h >= 1 && h <= 10000,
                      "baseline '" << name
                                   << "': the horizon after ':' must be a whole number of slots "
                                      "in [1, 10000]");
    horizon = static_cast<int>(h);
  }
  return std::make_unique<Mpc>(name, base == "mpc" ? Forecast::kPersistence : Forecast::kOracle,
                               horizon, hindsight);
}

}  // namespace marlsched::geodc
