#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/rng.hpp"
#include "envs/lstcb/lstcb.hpp"
#include "envs/registry.hpp"
#include "train/world.hpp"

using namespace marlsched;

namespace {
struct BatchOutcome {
  std::map<std::string, double> counters;
  std::vector<float> rewards;
};

/// Four cooperating servers under actions hashed from (step, copy, agent): layout independent.
BatchOutcome run_batch(const dist::Comm& comm, int agents_per_rank) {
  lstcb::Config cfg;
  cfg.window_slots = 8;
  cfg.episode_windows = 3;
  auto factory = find_env("lstcb").make_factory(cfg, 4);
  World w(*factory, comm, agents_per_rank, 2, 23);
  BatchOutcome o;
  w.reset();
  const auto na = static_cast<std::uint64_t>(w.spec().num_actions());
  std::vector<int> actions;
  for (int step = 0; step < 60; ++step) {
    actions.clear();
    for (int c = 0; c < w.copies(); ++c)
      for (int k = 0; k < w.local_agents(); ++k)
        actions.push_back(static_cast<int>(
            derive_seed(5, {static_cast<std::uint64_t>(step), static_cast<std::uint64_t>(c),
                            static_cast<std::uint64_t>(w.first_agent() + k)}) %
            na));
    w.step(actions);
    for (int c = 0; c < w.copies(); ++c)
      for (int a = 0; a < w.num_agents(); ++a) o.rewards.push_back(w.reward(c, a));
    const auto t = w.global_counters();
    EXPECT_EQ(t.at("arrived"),
              t.at("served") + t.at("abandoned") + t.at("in_system") + t.at("in_inbox"));
    EXPECT_EQ(t.at("steered"), t.at("received"));
  }
  o.counters = w.global_counters();
  return o;
}
}  // namespace

TEST(WorldLstcb, DistributedBatchingMatchesOneProcess) {
  auto comm = dist::Comm::world();
  ASSERT_EQ(4 % comm.size(), 0) << "run with 1, 2 or 4 ranks";
  const BatchOutcome dist_run = run_batch(comm, 4 / comm.size());
  dist::Comm self(MPI_COMM_SELF, false);
  const BatchOutcome serial = run_batch(self, 4);
  EXPECT_GT(dist_run.counters.at("steered"), 20);
  ASSERT_EQ(dist_run.counters.size(), serial.counters.size());
  for (const auto& [key, value] : serial.counters)
    EXPECT_NEAR(dist_run.counters.at(key), value, 1e-12 * std::max(1.0, std::abs(value))) << key;
  EXPECT_EQ(dist_run.rewards, serial.rewards);
}
