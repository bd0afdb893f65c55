#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "envs/geodc/geodc.hpp"
#include "envs/geodc/mpc.hpp"
#include "envs/geodc/oracle.hpp"
#include "envs/registry.hpp"
#include "test_util.hpp"

using namespace marlsched;

namespace {

/// An in-process world of N shards with the same routing the MPI exchange performs.
struct LocalWorld {
  explicit LocalWorld(const geodc::Config& cfg, int n) : n(n) {
    cfg.validate(n);
    factory = find_env("geodc").make_factory(cfg, n);
    for (int a = 0; a < n; ++a) shards.push_back(factory->make_shard(a));
  }
  void reset(std::uint64_t seed, std::uint64_t ep) {
    for (int a = 0; a < n; ++a)
      shards[static_cast<std::size_t>(a)]->reset(
          derive_seed(seed, {ep}), derive_seed(seed, {ep, static_cast<std::uint64_t>(a) + 1}));
  }
  std::vector<float> observe() {
    const int d = factory->spec().obs_dim();
    std::vector<float> g(static_cast<std::size_t>(n * d));
    for (int a = 0; a < n; ++a) shards[static_cast<std::size_t>(a)]->observe(g.data() + a * d);
    return g;
  }
  std::vector<StepOutcome> step(const std::vector<int>& actions) {
    auto g = observe();
    GlobalObs view{g.data(), n, factory->spec().obs_dim()};
    std::vector<WorkRecord> out, all;
    std::vector<StepOutcome> res;
    for (int a = 0; a < n; ++a) {
      out.clear();
      shards[static_cast<std::size_t>(a)]->act(actions[static_cast<std::size_t>(a)], view, out);
      res.push_back(shards[static_cast<std::size_t>(a)]->advance());
      all.insert(all.end(), out.begin(), out.end());
    }
    for (const auto& r : all) shards[static_cast<std::size_t>(r.dest)]->receive(r);
    return res;
  }
  geodc::Shard& shard(int a) {
    return dynamic_cast<geodc::Shard&>(*shards[static_cast<std::size_t>(a)]);
  }
  std::map<std::string, double> totals() {
    std::map<std::string, double> t;
    for (auto& s : shards)
      for (const auto& [k, v] : s->counters()) t[k] += v;
    return t;
  }
  int n;
  std::unique_ptr<EnvFactory> factory;
  std::vector<std::unique_ptr<Shard>> shards;
};

double conserved_gap(const std::map<std::string, double>& t) {
  return t.at("arrived") - (t.at("completed") + t.at("dropped") + t.at("discarded_at_reset") +
                            t.at("queued") + t.at("running"));
}

}  // namespace

TEST(GeoDc, SpecMatchesTheSiteCount) {
  geodc::Config cfg;
  const auto spec = geodc::make_spec(cfg, 4);
  EXPECT_EQ(spec.obs_dim(), 14);
  EXPECT_EQ(spec.num_public, 4);
  EXPECT_EQ(spec.num_actions(), 8);
  EXPECT_EQ(spec.obs_index("carbon"), 1);
  EXPECT_EQ(spec.episode_length, 96);
}

TEST(GeoDc, SiteNeighboursGiveEverySiteItsRingOfTargets) {
  EXPECT_EQ(geodc::targets_of(0, 8, 3), (std::vector<int>{0, 1, 7, 2}));
  EXPECT_EQ(geodc::targets_of(5, 8, 4), (std::vector<int>{5, 6, 4, 7, 3}));
  EXPECT_EQ(geodc::targets_of(1, 3, 2), (std::vector<int>{1, 2, 0}));
  EXPECT_EQ(geodc::targets_of(2, 4, 0), (std::vector<int>{0, 1, 2, 3}));
  geodc::Config cfg;
  cfg.replicate_sites = true;
  EXPECT_EQ(geodc::make_spec(cfg, 8).num_actions(), 16);  // every site: 2N
  cfg.neighbours = 3;
  const auto spec = geodc::make_spec(cfg, 8);
  EXPECT_EQ(spec.num_actions(), 8);  // 2 x (self + 3), whatever N is
  EXPECT_EQ(spec.num_targets(), 4);
  EXPECT_EQ(spec.num_modes(), 2);
  EXPECT_EQ(spec.action_names[1], "run-fit/overflow->nbr1");
  EXPECT_EQ(spec.action_names[4], "defer/send->self");
  EXPECT_EQ(geodc::make_spec(cfg, 128).num_actions(), 8);
  // The pair feature: no transfer to itself, 1 Gbps within a region, slower across regions
  // (agent 0 is US; its neighbour 1 is EU, 7 is AP, 2 is AP).
  EXPECT_EQ(spec.target_features[0][0], 0.f);
  EXPECT_NEAR(spec.target_features[0][1], 8000.0 / 160 / 60, 1e-6);
  EXPECT_NEAR(spec.target_features[0][2], 8000.0 / 50 / 60, 1e-6);
  EXPECT_NEAR(spec.target_features[2][1], 8000.0 / 1000 / 60, 1e-6);  // 2 (SG) -> 3 (JP-TK)
  // Action "run what fits, overflow to neighbour 2" of agent 0 sends only to agent 7.
  cfg.arrival_rates = {40, 3.5, 3.2, 4.0};  // site 0 overflows
  LocalWorld w(cfg, 8);
  w.reset(3, 0);
  std::vector<int> act(8, 0);  // everyone else: run here, keep the rest
  act[0] = 2;
  double sent = 0;
  for (int t = 0; t < 12; ++t) {
    w.step(act);
    for (int a = 1; a < 7; ++a) EXPECT_EQ(w.shard(a).counters().at("received"), 0) << "agent " << a;
    sent = w.shard(0).counters().at("forwarded");
  }
  EXPECT_GT(sent, 0);
  EXPECT_EQ(w.shard(7).counters().at("received"), sent);
  cfg.neighbours = 8;
  EXPECT_THROW(cfg.validate(8), ConfigError);
}

TEST(GeoDc, JobsAreConservedAcrossForwardingAndCapacityHolds) {
  geodc::Config cfg;
  cfg.max_queue = 4;  // force some drops too
  LocalWorld w(cfg, 4);
  Rng rng(99);
  double forwarded = 0;
  for (std::uint64_t ep = 0; ep < 3; ++ep) {
    w.reset(5, ep);
    for (int t = 0; t < cfg.episode_slots; ++t) {
      std::vector<int> a(4);
      for (auto& x : a) x = static_cast<int>(rng.below(8));
      const auto res = w.step(a);
      for (int s = 0; s < 4; ++s) {
        ASSERT_LE(w.shard(s).busy_gpus(), cfg.gpus[static_cast<std::size_t>(s)]);
        for (const auto& j : w.shard(s).running()) ASSERT_LE(j.remaining, j.duration);
      }
      const auto tot = w.totals();
      ASSERT_EQ(conserved_gap(tot), 0.0) << "episode " << ep << " slot " << t;
      ASSERT_EQ(tot.at("forwarded"), tot.at("received"));
      forwarded = tot.at("forwarded");
      if (t + 1 == cfg.episode_slots)
        for (const auto& r : res) EXPECT_TRUE(r.truncated);
      else
        for (const auto& r : res) ASSERT_FALSE(r.truncated);
    }
  }
  EXPECT_GT(forwarded, 100);
  EXPECT_GT(w.totals().at("dropped"), 0);
  // No job id is duplicated anywhere.
  std::set<std::uint64_t> ids;
  for (int s = 0; s < 4; ++s) {
    for (const auto& j : w.shard(s).queue()) ASSERT_TRUE(ids.insert(j.id).second);
    for (const auto& j : w.shard(s).running()) ASSERT_TRUE(ids.insert(j.id).second);
  }
}

TEST(GeoDc, EnergyCostAndCarbonFollowThePowerModel) {
  geodc::Config cfg;
  LocalWorld w(cfg, 4);
  w.reset(1, 0);
  for (int t = 0; t < 40; ++t) {
    std::vector<int> a = {0, 1, 2, 3};  // all local
    // Expected energy of the slot from the state after act(): compute by stepping one shard.
    auto g = w.observe();
    GlobalObs view{g.data(), 4, 14};
    std::vector<WorkRecord> out;
    auto& s = w.shard(2);
    s.act(2, view, out);
    ASSERT_TRUE(out.empty());
    double watts = 0;
    int busy = 0;
    for (const auto& j : s.running()) {
      watts += j.gpus * cfg.busy_watts[static_cast<std::size_t>(j.type)];
      busy += j.gpus;
    }
    watts += (cfg.gpus[2] - busy) * cfg.idle_watts;
    const double kwh = cfg.pue[2] * watts / 1000.0 * 0.25;
    const auto h = s.epoch_hour();
    (void)h;
    const auto o = s.advance();
    EXPECT_NEAR(o.components[2], kwh, 1e-9);
    EXPECT_NEAR(o.components[1], static_cast<double>(busy) / cfg.gpus[2], 1e-12);
    EXPECT_NEAR(o.components[3] / o.components[2], o.components[3] / kwh, 1e-9);
    EXPECT_GT(o.components[4], 0);
    const double r = cfg.w_work * o.components[0] + cfg.w_util * o.components[1] -
                     cfg.w_cost * o.components[3] - cfg.w_carbon * o.components[4] -
                     cfg.w_sla * o.components[5];
    EXPECT_NEAR(o.reward, r, 1e-9);
    // keep the others in step
    for (int k : {0, 1, 3}) {
      out.clear();
      w.shard(k).act(k, view, out);
      w.shard(k).advance();
    }
  }
}

TEST(GeoDc, DeferStartsOnlyUrgentJobs) {
  geodc::Config cfg;
  cfg.arrival_rates = {20, 20, 20, 20};
  LocalWorld w(cfg, 4);
  w.reset(3, 0);
  int urgent_started = 0;
  for (int t = 0; t < 30; ++t) {
    auto g = w.observe();
    GlobalObs view{g.data(), 4, 14};
    std::vector<WorkRecord> out;
    auto& s = w.shard(0);
    std::set<std::uint64_t> before;
    for (const auto& j : s.running()) before.insert(j.id);
    s.act(4 + 0, view, out);  // defer, keep waiting jobs here
    ASSERT_TRUE(out.empty());
    for (const auto& j : s.running())
      if (!before.count(j.id)) {
        ASSERT_GE(s.slot(), j.deadline - j.duration + 1) << "a non-urgent job started";
        ++urgent_started;
      }
    s.advance();
  }
  EXPECT_GT(urgent_started, 0);
}

TEST(GeoDc, ForwardedJobsWaitForTheirTransfer) {
  geodc::Config cfg;
  LocalWorld w(cfg, 4);
  w.reset(2, 0);
  // US -> AP: 50 GB at 50 Mbps = 8000 s + RTT -> 9 slots of 15 min; US -> US-like same region 1.
  EXPECT_EQ(w.shard(0).transfer_slots(2, 50.0), 9);
  EXPECT_EQ(w.shard(0).transfer_slots(1, 5.0), 1);
  EXPECT_EQ(w.shard(2).transfer_slots(3, 50.0), 1);       // SG -> JP-TK, both AP
  for (int t = 0; t < 20; ++t) w.step({4 + 2, 1, 2, 3});  // site 0 sends everything to SG
  for (const auto& j : w.shard(2).queue()) EXPECT_TRUE(j.origin != 0 || j.hops == 1);
  for (const auto& j : w.shard(2).running()) EXPECT_TRUE(j.origin != 0 || j.hops == 1);
  EXPECT_GT(w.totals().at("received"), 0);
}

TEST(GeoDc, SameSeedsSameTrajectory) {
  geodc::Config cfg;
  LocalWorld a(cfg, 4), b(cfg, 4);
  a.reset(7, 1);
  b.reset(7, 1);
  for (int t = 0; t < 96; ++t) {
    const std::vector<int> act = {t % 8, (t + 3) % 8, (t + 5) % 8, 7 - t % 8};
    const auto ra = a.step(act), rb = b.step(act);
    for (int s = 0; s < 4; ++s)
      ASSERT_EQ(ra[static_cast<std::size_t>(s)].reward, rb[static_cast<std::size_t>(s)].reward);
  }
  EXPECT_EQ(a.observe(), b.observe());
}

TEST(GeoDc, ConfigErrorsNameTheBadValue) {
  geodc::Config cfg;
  auto msg = [&](int n) {
    try {
      cfg.validate(n);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("(valid)");
  };
  EXPECT_EQ(msg(4), "(valid)");
  EXPECT_NE(msg(8).find("defines 4 data centers but the run has 8 agents"), std::string::npos);
  cfg.replicate_sites = true;
  EXPECT_EQ(msg(8), "(valid)");
  EXPECT_NE(msg(3).find("the run has only 3 agents"), std::string::npos);  // would drop a site
  cfg.keep_sites(3);
  EXPECT_EQ(msg(3), "(valid)");
  EXPECT_EQ(cfg.sites.size(), 3u);
  EXPECT_EQ(cfg.arrival_rates.size(), 3u);
  cfg.keep_sites(4);  // never grows
  EXPECT_EQ(cfg.gpus.size(), 3u);
  cfg = geodc::Config{};
  cfg.replicate_sites = true;
  cfg.gpus = {64, -1, 32, 48};
  EXPECT_NE(msg(4).find("--gpus: site DE-LU must be in [1, 1000000], got -1"), std::string::npos);
  cfg.gpus = {64, 48, 32};
  EXPECT_NE(msg(4).find("--gpus has 3 values but --sites has 4"), std::string::npos);
  cfg = geodc::Config{};
  cfg.slot_minutes = 0;
  EXPECT_NE(msg(4).find("--slot-minutes"), std::string::npos);
  cfg = geodc::Config{};
  cfg.w_carbon = std::nan("");
  EXPECT_NE(msg(4).find("--w-carbon must be in [-1000000, 1000000], got nan"), std::string::npos);
  cfg = geodc::Config{};
  cfg.sites[0] = "XX";
  EXPECT_NO_THROW(cfg.validate(4));
  EXPECT_THROW(find_env("geodc").make_factory(cfg, 4), ConfigError);  // no synthetic profile
  EXPECT_THROW(find_env("nope"), ConfigError);
}

TEST(GeoDc, AlibabaWorkloadDrivesArrivals) {
  const auto dir = test::temp_dir("geodc-ali");
  geodc::write_pai_task_table(dir + "/pai.csv", 400, 4);
  geodc::Config cfg;
  cfg.workload = "alibaba";
  cfg.workload_file = dir + "/pai.csv";
  LocalWorld w(cfg, 4);
  w.reset(1, 0);
  for (int t = 0; t < 96; ++t) w.step({0, 1, 2, 3});
  const auto tot = w.totals();
  EXPECT_GT(tot.at("arrived"), 10);
  EXPECT_EQ(conserved_gap(tot), 0.0);
}

TEST(GeoDc, RealTracesDriveTheEnv) {
  const auto dir = marlsched::test::shared_data();
  if (dir.empty()) GTEST_SKIP() << "../shared/data not present";
  geodc::Config cfg;
  cfg.carbon_files.clear();
  cfg.price_files.clear();
  for (const auto& z : cfg.sites) {
    cfg.carbon_files.push_back(dir + "/carbon_intensity/" + z + "_2023_hourly.csv");
    cfg.price_files.push_back(dir + "/electricity_prices/" + z + "_electricity_prices_2023.csv");
  }
  LocalWorld w(cfg, 4);
  w.reset(1, 0);
  const auto g = w.observe();
  // Observation "carbon" = CI / 500 from the real trace at the episode's start hour.
  const auto h = w.shard(1).epoch_hour();
  const auto de = geodc::load_carbon_csv(cfg.carbon_files[1]);
  EXPECT_NEAR(g[14 + 1], de.at(h) / 500.0, 1e-5);
}

TEST(GeoDc, SavedStateContinuesExactly) {
  geodc::Config cfg;
  LocalWorld a(cfg, 4), b(cfg, 4);
  a.reset(9, 0);
  b.reset(1, 5);  // a different state, overwritten below
  for (int t = 0; t < 30; ++t) a.step({4 + 1, 2, 4 + 0, 3});
  for (int s = 0; s < 4; ++s)
    b.shards[static_cast<std::size_t>(s)]->load_state(
        a.shards[static_cast<std::size_t>(s)]->save_state());
  EXPECT_EQ(a.observe(), b.observe());
  for (int t = 0; t < 60; ++t) {
    const std::vector<int> act = {t % 8, 4 + t % 4, 2, (3 * t) % 8};
    const auto ra = a.step(act), rb = b.step(act);
    for (int s = 0; s < 4; ++s)
      ASSERT_EQ(ra[static_cast<std::size_t>(s)].reward, rb[static_cast<std::size_t>(s)].reward);
  }
  EXPECT_EQ(a.totals(), b.totals());
  auto state = a.shards[0]->save_state();
  state.resize(state.size() / 2);
  EXPECT_THROW(b.shards[0]->load_state(state), InputError);
  EXPECT_THROW(b.shards[1]->load_state(a.shards[0]->save_state()), InputError);  // other agent
}

// The hindsight bound (geodc/oracle.hpp) is an upper bound: no schedule, whatever its actions,
// scores more on the same episode. Random actions (run, defer, forward anywhere), local-only and
// always-defer schedules are checked on several episodes; the bound must not be loose by orders
// of magnitude either.
TEST(GeoDc, OracleBoundIsAboveEverySchedule) {
  geodc::Config cfg;
  cfg.episode_slots = 48;
  LocalWorld w(cfg, 4);
  Rng rng(3);
  for (std::uint64_t ep = 0; ep < 3; ++ep) {
    const std::vector<std::uint64_t> seeds = {derive_seed(11, {ep, 1}), derive_seed(11, {ep, 2}),
                                              derive_seed(11, {ep, 3}), derive_seed(11, {ep, 4})};
    const double bound = w.factory->episode_bound(derive_seed(11, {ep}), seeds);
    ASSERT_TRUE(std::isfinite(bound));
    double best = -1e300;
    for (int policy = 0; policy < 4; ++policy) {
      w.reset(11, ep);
      double ret = 0;
      for (int t = 0; t < cfg.episode_slots; ++t) {
        std::vector<int> a(4);
        for (int s = 0; s < 4; ++s)
          a[static_cast<std::size_t>(s)] = policy == 0   ? s      // local
                                           : policy == 1 ? 4 + s  // defer
                                           : policy == 2
                                               ? (t % 2 ? s : (s + 1) % 4)        // spill
                                               : static_cast<int>(rng.below(8));  // random
        for (const auto& r : w.step(a)) ret += r.reward;
      }
      EXPECT_LE(ret, bound + 1e-6) << "episode " << ep << " schedule " << policy;
      best = std::max(best, ret);
    }
    EXPECT_LT(bound - best, std::abs(best) * 10 + 200) << "a bound this loose says nothing";
  }
}

// The MPC baselines (envs/geodc/mpc.hpp): the forecasts, the plan's feasibility, the mapping rule.
TEST(GeoDcMpc, PersistenceForecastTakesTheSameHourOfTheLatestDaySeen) {
  geodc::Config cfg;
  LocalWorld w(cfg, 4);
  w.reset(5, 0);
  for (int t = 0; t < 10; ++t) w.step({0, 1, 2, 3});  // slot 10: hour 2 of the episode
  const auto& s = w.shard(1);
  const int now = s.slot(), per_hour = 60 / cfg.slot_minutes;
  const std::int64_t h0 = s.slot_hour(now);
  for (int u = now; u < now + 40; ++u) {
    EXPECT_EQ(geodc::forecast_prices(s, geodc::Forecast::kOracle, u), s.energy_prices(u));
    const std::int64_t h = s.slot_hour(u);
    const auto want = h == h0 ? s.energy_prices(u) : s.energy_prices_at_hour(h - 24);
    EXPECT_EQ(geodc::forecast_prices(s, geodc::Forecast::kPersistence, u), want) << "slot " << u;
  }
  // Past a day ahead, the latest day seen is two days back.
  const int later = now + 30 * per_hour;
  EXPECT_EQ(geodc::forecast_prices(s, geodc::Forecast::kPersistence, later),
            s.energy_prices_at_hour(s.slot_hour(later) - 48));
}

TEST(GeoDcMpc, PlanRespectsCapacitiesAndPlansOnlyQueuedWork) {
  geodc::Config cfg;
  cfg.arrival_rates = {12, 12, 10, 12};  // queues build up under deferral
  LocalWorld w(cfg, 4);
  const auto& spec = w.factory->spec();
  w.reset(7, 0);
  for (int t = 0; t < 30; ++t) {
    w.step({4, 5, 6, 7});  // defer everywhere
    if (t % 5 != 4) continue;
    std::vector<const geodc::Shard*> sites;
    for (int a = 0; a < 4; ++a) sites.push_back(&w.shard(a));
    for (auto f : {geodc::Forecast::kOracle, geodc::Forecast::kPersistence}) {
      const auto plan = geodc::plan_slot(sites, spec, f, 12);
      ASSERT_EQ(plan.horizon, 12);
      for (int a = 0; a < 4; ++a) {
        for (double used : plan.used[static_cast<std::size_t>(a)])
          EXPECT_LE(used, plan.capacity[static_cast<std::size_t>(a)] + 1e-6);
        double queued = 0, planned = plan.run_now[static_cast<std::size_t>(a)] +
                                     plan.run_later[static_cast<std::size_t>(a)];
        for (const auto& j : sites[static_cast<std::size_t>(a)]->queue()) queued += j.gpus;
        for (double m : plan.moved[static_cast<std::size_t>(a)]) planned += m;
        EXPECT_LE(planned, queued + 1e-6);
        const int act = geodc::map_to_action(plan, spec, a);
        EXPECT_TRUE(act >= 0 && act < spec.num_actions());
      }
    }
  }
}

TEST(GeoDcMpc, MappingRulePicksTheActionThatAgreesMostWithThePlan) {
  geodc::Config cfg;
  const auto spec = geodc::make_spec(cfg, 4);  // targets of every site: 0, 1, 2, 3; T = 4
  auto plan = [](std::vector<geodc::SlotPlan::JobShare> jobs) {
    geodc::SlotPlan p;
    p.slot = 0;
    p.max_hops = 1;
    p.free_now = {8, 8, 8, 8};
    p.jobs.resize(4);
    for (std::size_t k = 0; k < jobs.size(); ++k) {
      jobs[k].id = k;
      jobs[k].gpus = 8;
      jobs[k].deadline = 50;  // not urgent at slot 0
      jobs[k].remaining = 4;
      jobs[k].to.resize(4, 0.0);
    }
    p.jobs[1] = std::move(jobs);
    return p;
  };
  geodc::SlotPlan::JobShare now, later, to2, to3;
  now.now = 1;
  later.later = 1;
  to2.to = {0, 0, 1, 0};
  to3.to = {0, 0, 0, 1};
  EXPECT_EQ(geodc::map_to_action(plan({}), spec, 1), 1);          // nothing queued: run-fit here
  EXPECT_EQ(geodc::map_to_action(plan({now}), spec, 1), 1);       // run here
  EXPECT_EQ(geodc::map_to_action(plan({now, to3}), spec, 1), 3);  // run one, overflow to 3
  EXPECT_EQ(geodc::map_to_action(plan({later}), spec, 1, true), 4 + 1);  // defer here
  EXPECT_EQ(geodc::map_to_action(plan({to2}), spec, 1, true), 4 + 2);    // send to 2 (it fits)
  EXPECT_EQ(geodc::map_to_action(plan({later}), spec, 1), 1);            // run-fit only: here
  EXPECT_EQ(geodc::map_to_action(plan({now, to2}), spec, 1), 2);         // run one, overflow to 2
  auto urgent = plan({to2});
  urgent.slot = 47;  // 47 >= deadline - remaining + 1: urgent, starts even under deferral
  EXPECT_EQ(geodc::map_to_action(urgent, spec, 1, true), 1);  // none forwards it: run-fit here
}

TEST(GeoDcMpc, OracleMpcStaysUnderTheBoundAndBeatsLocalOnly) {
  geodc::Config cfg;
  cfg.episode_slots = 96;
  LocalWorld w(cfg, 4);
  const auto& spec = w.factory->spec();
  for (std::uint64_t ep = 0; ep < 2; ++ep) {
    const std::vector<std::uint64_t> seeds = {derive_seed(13, {ep, 1}), derive_seed(13, {ep, 2}),
                                              derive_seed(13, {ep, 3}), derive_seed(13, {ep, 4})};
    const double bound = w.factory->episode_bound(derive_seed(13, {ep}), seeds);
    double mpc = 0, local = 0;
    for (int run_mpc = 0; run_mpc < 2; ++run_mpc) {
      w.reset(13, ep);
      for (int t = 0; t < cfg.episode_slots; ++t) {
        std::vector<int> a = {0, 1, 2, 3};
        if (run_mpc) {
          std::vector<const geodc::Shard*> sites;
          for (int s = 0; s < 4; ++s) sites.push_back(&w.shard(s));
          const auto plan = geodc::plan_slot(sites, spec, geodc::Forecast::kOracle, 8);
          for (int s = 0; s < 4; ++s)
            a[static_cast<std::size_t>(s)] = geodc::map_to_action(plan, spec, s);
        }
        for (const auto& r : w.step(a)) (run_mpc ? mpc : local) += r.reward;
      }
    }
    EXPECT_LE(mpc, bound + 1e-6) << "episode " << ep;
    EXPECT_GT(mpc, local) << "episode " << ep;
  }
}

// The feasible end of the bracket: the oracle MPC that knows the arrivals within its horizon.
// Played in the env it is a schedule the env accepts, so it never exceeds the LP bound, and its
// plans keep every site's GPUs within capacity at every slot of the horizon.
TEST(GeoDcMpc, HindsightScheduleStaysUnderTheBoundAndItsPlansFit) {
  geodc::Config cfg;
  cfg.episode_slots = 48;
  LocalWorld w(cfg, 4);
  const auto& spec = w.factory->spec();
  for (std::uint64_t ep = 0; ep < 2; ++ep) {
    const std::vector<std::uint64_t> seeds = {derive_seed(17, {ep, 1}), derive_seed(17, {ep, 2}),
                                              derive_seed(17, {ep, 3}), derive_seed(17, {ep, 4})};
    const double bound = w.factory->episode_bound(derive_seed(17, {ep}), seeds);
    w.reset(17, ep);
    double utility = 0;
    int planned_ahead = 0;
    for (int t = 0; t < cfg.episode_slots; ++t) {
      std::vector<const geodc::Shard*> sites;
      for (int s = 0; s < 4; ++s) sites.push_back(&w.shard(s));
      const auto plan = geodc::plan_slot(sites, spec, geodc::Forecast::kOracle, 16, true);
      for (int s = 0; s < 4; ++s)
        for (int u = 0; u < plan.horizon; ++u) {
          const double used = plan.used[static_cast<std::size_t>(s)][static_cast<std::size_t>(u)];
          ASSERT_LE(used, plan.capacity[static_cast<std::size_t>(s)] + 1e-6)
              << "site " << s << " slot " << t + u;
          if (u > 0 && used > 0) ++planned_ahead;
        }
      std::vector<int> a(4);
      for (int s = 0; s < 4; ++s)
        a[static_cast<std::size_t>(s)] = geodc::map_to_action(plan, spec, s);
      for (const auto& r : w.step(a)) utility += r.reward;
    }
    EXPECT_GT(planned_ahead, 0);
    EXPECT_LE(utility, bound + 1e-6) << "episode " << ep;
  }
}

// The jobs a shard says will arrive are the ones that do, whatever the actions, and asking
// leaves the shard as it was.
TEST(GeoDc, UpcomingArrivalsAreTheJobsThatArrive) {
  geodc::Config cfg;
  cfg.episode_slots = 24;
  LocalWorld w(cfg, 4);
  w.reset(21, 0);
  for (int t = 0; t < 5; ++t) w.step({0, 1, 2, 3});
  const auto ahead = w.shard(1).upcoming_arrivals(6);
  const double before = w.shard(1).counters().at("arrived");
  for (int t = 0; t < 6; ++t) w.step({4, 5, 6, 7});  // defer: arrivals stay queued here
  EXPECT_EQ(static_cast<double>(ahead.size()), w.shard(1).counters().at("arrived") - before);
  ASSERT_FALSE(ahead.empty());
  auto probe = w.factory->make_shard(1);
  std::vector<std::uint64_t> expected;
  for (const auto& j : dynamic_cast<geodc::Shard&>(*probe).episode_arrivals(
           derive_seed(21, {0}), derive_seed(21, {0, 2})))
    if (j.arrival > 5 && j.arrival <= 11) expected.push_back(j.id);
  std::vector<std::uint64_t> got;
  for (const auto& j : ahead) got.push_back(j.id);
  EXPECT_EQ(got, expected);
  // Near the episode's end there is less to see.
  for (int t = 11; t < 22; ++t) w.step({0, 1, 2, 3});
  for (const auto& j : w.shard(1).upcoming_arrivals(10)) EXPECT_LT(j.arrival, 24);
}

// With no jobs every schedule earns the same (idle power only), and the bound is exactly that.
TEST(GeoDc, OracleBoundIsExactWithoutJobs) {
  geodc::Config cfg;
  cfg.arrival_rates = {0, 0, 0, 0};
  cfg.episode_slots = 24;
  LocalWorld w(cfg, 4);
  const std::vector<std::uint64_t> seeds = {1, 2, 3, 4};
  for (int a = 0; a < 4; ++a)
    w.shards[static_cast<std::size_t>(a)]->reset(9, seeds[static_cast<std::size_t>(a)]);
  double ret = 0;
  for (int t = 0; t < cfg.episode_slots; ++t)
    for (const auto& r : w.step({0, 1, 2, 3})) ret += r.reward;
  EXPECT_NEAR(w.factory->episode_bound(9, seeds), ret, 1e-9 * std::abs(ret));
}

// The hindsight arrivals are the jobs that the episode brings under any actions.
TEST(GeoDc, EpisodeArrivalsMatchTheEpisode) {
  geodc::Config cfg;
  cfg.episode_slots = 24;
  LocalWorld w(cfg, 4);
  auto probe = w.factory->make_shard(2);
  const auto jobs = dynamic_cast<geodc::Shard&>(*probe).episode_arrivals(derive_seed(5, {0}),
                                                                         derive_seed(5, {0, 3}));
  w.reset(5, 0);
  for (int t = 0; t < cfg.episode_slots; ++t) w.step({4, 5, 6, 7});  // defer everything here
  EXPECT_EQ(static_cast<double>(jobs.size()), w.shard(2).counters().at("arrived"));
  for (std::size_t i = 1; i < jobs.size(); ++i) EXPECT_LE(jobs[i - 1].arrival, jobs[i].arrival);
}

TEST(GeoDcClasses, ActionIsOneModeAndTargetPerClass) {
  geodc::Config cfg;
  cfg.action_classes = "type";
  cfg.validate(4);
  const auto spec = geodc::make_spec(cfg, 4);
  EXPECT_EQ(spec.action_heads, (std::vector<int>{8, 8, 8}));
  EXPECT_EQ(spec.num_actions(), 512);
  EXPECT_EQ(spec.num_modes(), 2);
  EXPECT_EQ(spec.num_heads(), 3);
  EXPECT_EQ(spec.action_names[8 * 8 * 1 + 8 * 2 + 4 + 3],
            "gan:run-fit/overflow->1:DE-LU mlm:run-fit/overflow->2:SG sd:defer/send->3:JP-TK");
  int d[3];
  for (int a : {0, 7, 8, 63, 64, 300, 511}) {
    geodc::decode_action(a, 3, 4, d);
    EXPECT_EQ(geodc::encode_action(d, 3, 4), a);
  }
  geodc::decode_action(8 * 8 * 1 + 8 * 2 + 7, 3, 4, d);
  EXPECT_EQ(d[0], 1);
  EXPECT_EQ(d[1], 2);
  EXPECT_EQ(d[2], 7);
  // Slack classes: under an hour, one to four hours, more.
  geodc::Config sc;
  sc.action_classes = "slack";
  geodc::Job j;
  j.remaining = 4;
  j.deadline = 10;  // may start until slot 7
  EXPECT_EQ(sc.action_class(j, 7), 0);
  EXPECT_EQ(sc.action_class(j, 4), 0);  // 3 slots of slack: 45 minutes
  EXPECT_EQ(sc.action_class(j, 3), 1);  // 4 slots: an hour
  j.deadline = 30;
  EXPECT_EQ(sc.action_class(j, 10), 2);  // 17 slots
  EXPECT_EQ(cfg.action_class(j, 0), 0);  // type: a GAN job
  j.type = geodc::kSdFt;
  EXPECT_EQ(cfg.action_class(j, 0), 2);
  geodc::Config none;
  EXPECT_EQ(none.action_class(j, 0), 0);
}

TEST(GeoDcClasses, EachClassFollowsItsOwnDecision) {
  // Every job waits at site 0 (defer, nothing urgent), then site 0 acts with one decision per
  // job type: GAN jobs overflow to 1, MLM jobs stay, SD jobs are sent to 2.
  geodc::Config cfg;
  cfg.action_classes = "type";
  cfg.arrival_rates = {200, 0.1, 0.1, 0.1};
  cfg.gpus = {1, 48, 32, 48};  // nothing but a 1-GPU job fits at site 0
  LocalWorld w(cfg, 4);
  w.reset(3, 0);
  const int defer_here = geodc::encode_action(std::vector<int>{4, 4, 4}.data(), 3, 4);
  const int stay = geodc::encode_action(std::vector<int>{1, 2, 3}.data(), 3, 4);
  w.step({defer_here, stay, stay, stay});
  std::map<int, int> queued;
  for (const auto& j : w.shard(0).queue()) queued[j.type] += 1;
  ASSERT_GT(queued[geodc::kMlmFt], 0);
  ASSERT_GT(queued[geodc::kSdFt], 0);
  const int split = geodc::encode_action(std::vector<int>{1, 0, 4 + 2}.data(), 3, 4);
  const auto before = w.totals();
  const auto& spec = w.factory->spec();
  auto g = w.observe();
  GlobalObs view{g.data(), 4, spec.obs_dim()};
  std::vector<WorkRecord> out;
  const auto queue = w.shard(0).queue();
  w.shards[0]->act(split, view, out);
  std::map<std::uint64_t, int> dest;
  for (const auto& r : out) {
    geodc::Job f;
    std::memcpy(&f, r.payload.data(), sizeof f);
    dest[f.id] = r.dest;
  }
  for (const auto& j : queue) {
    const bool started = std::any_of(w.shard(0).running().begin(), w.shard(0).running().end(),
                                     [&](const geodc::Job& r) { return r.id == j.id; });
    if (started) {
      EXPECT_EQ(j.gpus, 1);
      continue;
    }
    const bool urgent = 1 >= j.deadline - j.remaining + 1;
    const int to = dest.count(j.id) ? dest[j.id] : 0;
    const int want = j.type == geodc::kGanFt ? 1 : j.type == geodc::kMlmFt ? 0 : urgent ? 0 : 2;
    EXPECT_EQ(to, want) << "job " << j.id << " of type " << j.type;
  }
  EXPECT_GT(before.at("arrived"), 0);
}

TEST(GeoDcClasses, RulesTakeOneDecisionForEveryClassAndConfigIsChecked) {
  geodc::Config cfg;
  cfg.action_classes = "slack";
  LocalWorld w(cfg, 4);
  const auto& spec = w.factory->spec();
  w.reset(2, 0);
  auto g = w.observe();
  PolicyInput in;
  in.spec = &spec;
  in.copies = 1;
  in.num_agents = in.local_agents = 4;
  in.first_agent = 0;
  std::vector<GlobalObs> views{GlobalObs{g.data(), 4, spec.obs_dim()}};
  in.global = views;
  std::vector<int> episode_step{0};
  in.episode_step = episode_step;
  std::vector<int> actions;
  for (const char* rule : {"local-only", "least-loaded", "guarded-overflow"}) {
    auto p = find_env("geodc").make_baseline(rule, spec, 1);
    ASSERT_TRUE(p) << rule;
    p->act(in, actions);
    ASSERT_EQ(actions.size(), 4u);
    for (int a : actions) {
      int d[3];
      geodc::decode_action(a, 3, 4, d);
      EXPECT_EQ(d[0], d[1]) << rule;
      EXPECT_EQ(d[1], d[2]) << rule;
    }
  }
  geodc::Config bad;
  bad.action_classes = "size";
  EXPECT_THROW(bad.validate(4), ConfigError);
  bad.action_classes = "type";
  bad.replicate_sites = true;
  EXPECT_THROW(bad.validate(64), ConfigError);  // (2·64)^3 actions
  bad.neighbours = 3;
  EXPECT_NO_THROW(bad.validate(64));
}

TEST(GeoDcClasses, MappingRuleTakesADecisionPerClass) {
  geodc::Config cfg;
  cfg.action_classes = "type";
  const auto spec = geodc::make_spec(cfg, 4);
  geodc::SlotPlan p;
  p.slot = 0;
  p.max_hops = 1;
  p.free_now = {16, 16, 16, 16};
  p.jobs.resize(4);
  auto job = [](int cls, std::vector<double> to, double now, double later) {
    geodc::SlotPlan::JobShare j;
    j.gpus = 8;
    j.deadline = 50;
    j.remaining = 4;
    j.cls = cls;
    j.to = std::move(to);
    j.now = now;
    j.later = later;
    return j;
  };
  // The GAN job runs here now; the MLM job, which fits too, is started later here; the SD job
  // goes to 3 (it fits once the MLM job waits).
  p.jobs[1] = {job(0, {0, 0, 0, 0}, 1, 0), job(1, {0, 0, 0, 0}, 0, 1), job(2, {0, 0, 0, 1}, 0, 0)};
  for (std::size_t k = 0; k < 3; ++k) p.jobs[1][k].id = k;
  int d[3];
  geodc::decode_action(geodc::map_to_action(p, spec, 1, false, true), 3, 4, d);
  EXPECT_EQ(d[0], 1);      // run-fit here
  EXPECT_EQ(d[1], 4 + 1);  // defer here: it waits
  EXPECT_EQ(d[2], 4 + 3);  // defer and send to 3: it would start here under run-fit
  // Without deferral the MLM job runs now (it fits), and the SD job overflows to 3.
  geodc::decode_action(geodc::map_to_action(p, spec, 1), 3, 4, d);
  EXPECT_LT(d[0], 4);
  EXPECT_LT(d[1], 4);
  EXPECT_EQ(d[2], 3);
  // One decision for every class could not do it: the best of those agrees on two jobs.
  EXPECT_EQ(geodc::map_to_action(p, geodc::make_spec(geodc::Config{}, 4), 1) % 4, 3);
}

// Above kExactBoundColumns the bound is the LP's Lagrangian dual: for any multipliers an upper
// bound on the LP (weak duality), so never below the exact optimum, and close to it after the
// subgradient steps; its feasible point of the LP lies below the optimum.
TEST(GeoDc, LagrangianBoundIsAboveTheLpAndCloseToIt) {
  geodc::Config cfg;
  LocalWorld w(cfg, 4);
  const auto& spec = w.factory->spec();
  for (std::uint64_t ep = 0; ep < 3; ++ep) {
    std::vector<std::uint64_t> seeds;
    for (std::uint64_t a = 1; a <= 4; ++a) seeds.push_back(derive_seed(21, {ep, a}));
    std::vector<geodc::Shard*> shards;
    for (int a = 0; a < 4; ++a) shards.push_back(&w.shard(a));
    const auto exact = geodc::utility_bound(cfg, spec, shards, derive_seed(21, {ep}), seeds);
    const auto lag = geodc::utility_bound(cfg, spec, shards, derive_seed(21, {ep}), seeds, 0);
    ASSERT_FALSE(exact.lagrangian);
    ASSERT_TRUE(lag.lagrangian);
    EXPECT_EQ(lag.columns, exact.columns);
    EXPECT_GE(lag.utility, exact.utility - 1e-6) << "episode " << ep;
    EXPECT_LE(lag.lp_lower, exact.utility + 1e-6) << "episode " << ep;
    EXPECT_LT(lag.utility - exact.utility, 0.05 * std::abs(exact.utility)) << "episode " << ep;
  }
}

// Above kMapExhaustive actions (9 targets: 18³ = 5832) the mapping sweeps the classes' decisions
// in turn; where the classes do not compete for GPUs it finds each class's best.
TEST(GeoDcClasses, MappingSweepsTheClassesInLargeSpaces) {
  geodc::Config cfg;
  cfg.action_classes = "type";
  cfg.replicate_sites = true;
  const auto spec = geodc::make_spec(cfg, 9);
  ASSERT_GT(spec.num_actions(), geodc::kMapExhaustive);
  geodc::SlotPlan p;
  p.slot = 0;
  p.max_hops = 1;
  p.free_now.assign(9, 24);  // every job fits
  p.jobs.resize(9);
  for (int cls = 0; cls < 3; ++cls) {
    geodc::SlotPlan::JobShare j;
    j.id = static_cast<std::uint64_t>(cls);
    j.gpus = 8;
    j.deadline = 50;
    j.remaining = 4;
    j.cls = cls;
    j.to.assign(9, 0.0);
    if (cls == 0) j.now = 1;    // runs here now
    if (cls == 1) j.later = 1;  // runs here later
    if (cls == 2) j.to[3] = 1;  // runs at 3
    p.jobs[1].push_back(j);
  }
  int d[3];
  geodc::decode_action(geodc::map_to_action(p, spec, 1, false, true), 3, 9, d);
  EXPECT_EQ(d[0], 1);
  EXPECT_EQ(d[1], 9 + 1);
  EXPECT_EQ(d[2], 9 + 3);
}

// The privileged fields are hindsight of the episode ahead: the work that arrives within 1, 4
// and 8 hours (from the episode's own arrivals, computed apart), and reading them changes
// nothing.
TEST(GeoDc, PrivilegedFieldsSeeTheArrivalsAheadAndChangeNothing) {
  geodc::Config cfg;
  cfg.episode_slots = 48;
  LocalWorld w(cfg, 4), twin(cfg, 4);
  const auto& spec = w.factory->spec();
  ASSERT_EQ(spec.privileged_dim(), 5);
  auto probe = w.factory->make_shard(1);
  const auto jobs = dynamic_cast<geodc::Shard&>(*probe).episode_arrivals(derive_seed(7, {0}),
                                                                         derive_seed(7, {0, 2}));
  w.reset(7, 0);
  twin.reset(7, 0);
  std::vector<float> priv(5);
  const int per_hour = 60 / cfg.slot_minutes, cap = w.shard(1).capacity();
  double seen = 0;
  for (int t = 0; t < cfg.episode_slots; ++t) {
    w.shards[1]->privileged(priv.data());
    const int horizon[] = {per_hour, 4 * per_hour, 8 * per_hour};
    for (int i = 0; i < 3; ++i) {
      double load = 0;
      for (const auto& j : jobs)
        if (j.arrival > t && j.arrival <= t + horizon[i])
          load += static_cast<double>(j.gpus) * j.duration;
      EXPECT_NEAR(priv[static_cast<std::size_t>(i)],
                  std::min(4.0, load / (static_cast<double>(cap) * horizon[i])), 1e-6)
          << "field " << spec.privileged_fields[static_cast<std::size_t>(i)] << " at slot " << t;
      seen += load;
    }
    EXPECT_GT(priv[3], 0.f);
    EXPECT_GT(priv[4], 0.f);
    w.step({0, 1, 2, 3});
    twin.step({0, 1, 2, 3});
    EXPECT_EQ(w.observe(), twin.observe()) << "reading the privileged fields changed the shard";
  }
  EXPECT_GT(seen, 0.0);
  w.shards[1]->privileged(priv.data());  // the episode's end: nothing more arrives
  EXPECT_EQ(priv[2], 0.f);
}
