#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "envs/aset/aset.hpp"
#include "envs/baselines.hpp"
#include "envs/registry.hpp"
#include "train/world.hpp"

using namespace marlsched;

namespace {
struct EdgeOutcome {
  std::map<std::string, double> counters;
  std::vector<float> rewards;  // [step][copy][agent]
};

/// Four edge clusters under least-loaded (deterministic given the observations, and it forwards
/// a lot): every query crosses ranks when agents sit on different ranks.
EdgeOutcome run_edge(const dist::Comm& comm, int agents_per_rank) {
  aset::Config cfg;
  cfg.episode_steps = 30;
  auto factory = find_env("aset").make_factory(cfg, 4);
  World w(*factory, comm, agents_per_rank, 2, 17);
  auto policy = make_heuristic("least-loaded", w.spec(), 0);
  EdgeOutcome o;
  w.reset();
  std::vector<int> actions;
  for (int step = 0; step < 75; ++step) {
    policy->act(w.policy_input(), actions);
    w.step(actions);
    for (int c = 0; c < w.copies(); ++c)
      for (int a = 0; a < w.num_agents(); ++a) o.rewards.push_back(w.reward(c, a));
    const auto t = w.global_counters();
    EXPECT_EQ(t.at("arrived"), t.at("success") + t.at("late") + t.at("dropped") +
                                   t.at("abandoned") + t.at("in_system"))
        << "queries lost or duplicated at step " << step;
    EXPECT_EQ(t.at("forwarded"), t.at("received"));
  }
  o.counters = w.global_counters();
  return o;
}
}  // namespace

TEST(WorldAset, DistributedEdgeSimulationMatchesOneProcess) {
  auto comm = dist::Comm::world();
  ASSERT_EQ(4 % comm.size(), 0) << "run with 1, 2 or 4 ranks";
  const EdgeOutcome dist_run = run_edge(comm, 4 / comm.size());
  dist::Comm self(MPI_COMM_SELF, false);
  const EdgeOutcome serial = run_edge(self, 4);
  EXPECT_GT(dist_run.counters.at("forwarded"), 500);
  EXPECT_EQ(dist_run.counters.at("late_deliveries"), 0);
  // Every shard evolves identically; counters summed over shards may differ in the last bit of
  // non-integer sums (latencies) because the reduction order follows the rank layout.
  ASSERT_EQ(dist_run.counters.size(), serial.counters.size());
  for (const auto& [key, value] : serial.counters)
    EXPECT_NEAR(dist_run.counters.at(key), value, 1e-12 * std::max(1.0, std::abs(value))) << key;
  EXPECT_EQ(dist_run.rewards, serial.rewards);
}
