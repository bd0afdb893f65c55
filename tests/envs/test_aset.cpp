#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "envs/aset/aset.hpp"
#include "envs/baselines.hpp"
#include "envs/registry.hpp"
#include "train/world.hpp"

using namespace marlsched;

namespace {

/// Two clusters 1 ms apart, one class, no jitter, no arrivals: queries are injected by hand.
aset::Config scripted(double deadline) {
  aset::Config c;
  c.gpus = {1, 1};
  c.rates = {0, 0};
  c.latency_ms = {0, 1, 1, 0};
  c.classes = {"m"};
  c.deadline_ms = {deadline};
  c.proc_ms = {3};
  c.cloud_proc_ms = {1};
  c.mix = {1};
  c.proc_jitter = 0;
  c.cloud_jitter = 0;
  c.burst_start = 0;
  c.decision_ms = 20;
  c.validate(2);
  return c;
}

WorkRecord wire(int dest, const std::vector<aset::Wire>& ws) {
  WorkRecord r;
  r.dest = dest;
  r.payload.resize(ws.size() * sizeof(aset::Wire));
  std::memcpy(r.payload.data(), ws.data(), r.payload.size());
  return r;
}

/// Feeds three queries of cluster 0 (sent at t = 0, arriving at t = 1) to cluster 1 and
/// returns cluster 0's counters after their answers came back.
std::map<std::string, double> three_queries(double deadline) {
  auto factory = find_env("aset").make_factory(scripted(deadline), 2);
  auto s0 = factory->make_shard(0), s1 = factory->make_shard(1);
  s0->reset(1, 2);
  s1->reset(1, 3);
  std::vector<aset::Wire> in;
  for (int i = 0; i < 3; ++i) {
    aset::Wire w;
    w.t_at = 1.0;
    w.q.t0 = 0.0;
    w.q.id = static_cast<std::uint64_t>(i);
    w.q.ingress = 0;
    w.q.via = 1;
    in.push_back(w);
  }
  s1->receive(wire(1, in));
  const int windows = factory->spec().windows;
  std::vector<WorkRecord> out0, out1;
  GlobalObs none;
  s0->act(0, none, out0);
  s1->act(0, none, out1);
  for (int w = 0; w < windows; ++w) {
    s0->window(w, out0);
    s1->window(w, out1);
    for (const auto& r : out1) {
      EXPECT_EQ(r.dest, 0);
      s0->receive(r);
    }
    out1.clear();
    EXPECT_TRUE(out0.empty());
  }
  s0->advance();
  s1->advance();
  return s0->counters();
}

}  // namespace

TEST(Aset, WindowsAreNoLongerThanTheSmallestLatency) {
  aset::Config c;
  const auto topo = aset::make_topology(c, 4);
  const auto spec = aset::make_spec(c, 4, topo);
  EXPECT_LE(c.decision_ms / spec.windows, topo.min_lat + 1e-12);
  EXPECT_GT(topo.min_lat, 0.5);
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(topo.nbrs[static_cast<std::size_t>(i)].size(), 2u);
    const int n1 = topo.nbrs[static_cast<std::size_t>(i)][0],
              n2 = topo.nbrs[static_cast<std::size_t>(i)][1];
    EXPECT_NE(n1, i);
    EXPECT_LE(topo.at(i, n1), topo.at(i, n2));
  }
  // Default actions: (local | cloud) x (no neighbour | 2 neighbours x 3 shares).
  EXPECT_EQ(spec.num_actions(), 14);
  EXPECT_EQ(spec.action_names[7], "cloud");
  EXPECT_EQ(spec.action_names[13], "cloud+nbr2:100%");
}

TEST(Aset, DeadlinesAreAccountedExactly) {
  // FCFS on one GPU: starts at 1, 4, 7; done at 4, 7, 10; answers at the ingress at 5, 8, 11.
  // Deadline 11: the third query makes it exactly (<= deadline) -> 3 successes.
  auto c = three_queries(11.0);
  EXPECT_EQ(c.at("success"), 3);
  EXPECT_EQ(c.at("dropped"), 0);
  EXPECT_DOUBLE_EQ(c.at("latency_ms_sum"), 5 + 8 + 11);
  // Deadline 10.5: the third cannot make it (expected answer at 11), so cluster 1 drops it at
  // admission and tells the ingress; the first two succeed.
  c = three_queries(10.5);
  EXPECT_EQ(c.at("success"), 2);
  EXPECT_EQ(c.at("dropped"), 1);
  EXPECT_EQ(c.at("late"), 0);
  EXPECT_DOUBLE_EQ(c.at("latency_ms_sum"), 5 + 8);
}

namespace {
struct Trace {
  std::map<std::string, double> counters;
  std::vector<double> rewards;
};

/// Runs a world of 4 clusters in one process with a policy, checking conservation each step.
Trace run_world(const aset::Config& cfg, const std::string& policy, int steps, std::uint64_t seed,
                int copies = 2) {
  dist::Comm self(MPI_COMM_SELF, false);
  auto factory = find_env("aset").make_factory(cfg, 4);
  World w(*factory, self, 4, copies, seed);
  auto p = make_heuristic(policy, w.spec(), seed);
  w.reset();
  Trace tr;
  std::vector<int> actions;
  for (int s = 0; s < steps; ++s) {
    p->act(w.policy_input(), actions);
    w.step(actions);
    for (int c = 0; c < copies; ++c)
      for (int a = 0; a < 4; ++a) tr.rewards.push_back(w.reward(c, a));
    const auto t = w.global_counters();
    EXPECT_EQ(t.at("arrived"), t.at("success") + t.at("late") + t.at("dropped") +
                                   t.at("abandoned") + t.at("in_system"))
        << "queries lost or duplicated at step " << s;
    EXPECT_EQ(t.at("forwarded"), t.at("received")) << "at step " << s;
  }
  tr.counters = w.global_counters();
  return tr;
}
}  // namespace

TEST(Aset, NoQueryIsLostOrDuplicatedAndSeedsReproduce) {
  aset::Config cfg;
  cfg.episode_steps = 40;
  cfg.validate(4);
  for (const std::string policy : {"random-proportional", "least-loaded"}) {
    const Trace a = run_world(cfg, policy, 100, 5);
    EXPECT_GT(a.counters.at("forwarded"), 100) << policy;
    EXPECT_GT(a.counters.at("abandoned"), 0) << policy << ": episodes end with queries in flight";
    EXPECT_EQ(a.counters.at("late_deliveries"), 0) << policy << ": windows make delivery exact";
    const Trace b = run_world(cfg, policy, 100, 5);
    EXPECT_EQ(a.counters, b.counters) << policy;
    EXPECT_EQ(a.rewards, b.rewards) << policy;
    const Trace c = run_world(cfg, policy, 100, 6);
    EXPECT_NE(a.counters.at("arrived"), c.counters.at("arrived")) << policy;
  }
}

TEST(Aset, OneWindowPerIntervalBoundsTheDeliveryError) {
  aset::Config cfg;
  cfg.windows = 1;
  cfg.episode_steps = 40;
  const auto topo = aset::make_topology(cfg, 4);
  const Trace t = run_world(cfg, "least-loaded", 80, 5);
  const double late = t.counters.at("late_deliveries");
  ASSERT_GT(late, 0);
  // Each late record was handled at most Δ − L_min after its true arrival.
  EXPECT_LE(t.counters.at("late_delivery_ms") / late, cfg.decision_ms - topo.min_lat);
}

TEST(Aset, StateRoundTripContinuesExactly) {
  aset::Config cfg;
  cfg.episode_steps = 30;
  auto factory = find_env("aset").make_factory(cfg, 4);
  dist::Comm self(MPI_COMM_SELF, false);
  World a(*factory, self, 4, 1, 9), b(*factory, self, 4, 1, 9);
  auto p = make_heuristic("random-proportional", a.spec(), 1);
  a.reset();
  b.reset();
  std::vector<int> actions;
  for (int s = 0; s < 17; ++s) {
    p->act(a.policy_input(), actions);
    a.step(actions);
  }
  b.load_state(a.save_state());
  auto pa = make_heuristic("least-loaded", a.spec(), 1);
  for (int s = 0; s < 25; ++s) {
    pa->act(a.policy_input(), actions);
    a.step(actions);
    b.step(actions);
    for (int ag = 0; ag < 4; ++ag) ASSERT_EQ(a.reward(0, ag), b.reward(0, ag)) << "step " << s;
  }
  EXPECT_EQ(a.global_counters(), b.global_counters());
}

TEST(Aset, BadConfigsAreRejected) {
  aset::Config c;
  c.rates = {1, 2};
  EXPECT_THROW(c.validate(4), ConfigError);
  c = aset::Config{};
  EXPECT_THROW(c.validate(3), ConfigError);  // 4 clusters defined
  c.deadline_ms = {10, 20};
  EXPECT_THROW(c.validate(4), ConfigError);
  c = aset::Config{};
  c.latency_ms = {0, 1, 1, 0};
  EXPECT_THROW(c.validate(4), ConfigError);  // needs 16 values
  c = aset::Config{};
  c.shares = {0.5, 1.5};
  EXPECT_THROW(c.validate(4), ConfigError);
}

TEST(Aset, SummaryMetrics) {
  aset::Config cfg;
  cfg.classes = {"a", "b"};
  std::map<std::string, double> c = {
      {"success", 90},   {"late", 5},   {"dropped", 5},   {"latency_ms_sum", 950},
      {"success/a", 90}, {"late/a", 0}, {"dropped/a", 5}, {"latency_ms_sum/a", 900},
      {"success/b", 0},  {"late/b", 5}, {"dropped/b", 0}, {"latency_ms_sum/b", 50}};
  c[aset::latency_bin_key("a", latency::bin(9.0))] = 90;
  c[aset::latency_bin_key("b", latency::bin(10.0))] = 5;
  std::map<std::string, double> m;
  for (const auto& [k, v] : aset::summarize(cfg, c)) m[k] = v;
  EXPECT_DOUBLE_EQ(m.at("success_rate"), 0.9);
  EXPECT_DOUBLE_EQ(m.at("drop_rate"), 0.05);
  EXPECT_DOUBLE_EQ(m.at("late_rate"), 0.05);
  EXPECT_DOUBLE_EQ(m.at("mean_latency_ms"), 10.0);
  EXPECT_GE(m.at("p99_latency_ms"), 10.0);
  EXPECT_LT(m.at("p99_latency_ms"), 10.0 * 1.28);
  EXPECT_DOUBLE_EQ(m.at("success_rate/a"), 90.0 / 95.0);
  EXPECT_DOUBLE_EQ(m.at("drop_rate/a"), 5.0 / 95.0);
  EXPECT_DOUBLE_EQ(m.at("mean_latency_ms/a"), 10.0);
  EXPECT_GE(m.at("p99_latency_ms/a"), 9.0);
  EXPECT_LT(m.at("p99_latency_ms/a"), 9.0 * 1.28);
  EXPECT_DOUBLE_EQ(m.at("late_rate/b"), 1.0);
  EXPECT_DOUBLE_EQ(m.at("mean_latency_ms/b"), 10.0);
}
