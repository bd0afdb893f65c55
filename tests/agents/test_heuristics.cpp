#include <gtest/gtest.h>

#include "core/error.hpp"
#include "envs/baselines.hpp"
#include "envs/geodc/geodc.hpp"
#include "test_util.hpp"

using namespace marlsched;

namespace {
struct Fixture {
  geodc::Config cfg;
  EnvSpec spec = geodc::make_spec(cfg, 4);
  std::vector<float> obs = std::vector<float>(4 * 14, 0.f);
  PolicyInput input(int step = 0) { return test::one_copy_input(spec, obs, 4, step); }
  void set(int agent, const std::string& field, float v) {
    obs[static_cast<std::size_t>(agent * 14 + spec.obs_index(field))] = v;
  }
};
std::vector<int> run(const std::string& name, Fixture& f, int step = 0) {
  auto p = make_heuristic(name, f.spec, 1);
  std::vector<int> a;
  auto in = f.input(step);
  p->act(in, a);
  return a;
}
}  // namespace

TEST(Heuristics, LowestCarbonAndPriceSendToTheBestSite) {
  Fixture f;
  for (int a = 0; a < 4; ++a) {
    f.set(a, "carbon", 1.0f - 0.1f * a);  // site 3 is cleanest
    f.set(a, "price", 0.5f + 0.1f * a);   // site 0 is cheapest
  }
  EXPECT_EQ(run("lowest-carbon", f), (std::vector<int>{4 + 3, 4 + 3, 4 + 3, 3}));
  EXPECT_EQ(run("lowest-price", f), (std::vector<int>{0, 4 + 0, 4 + 0, 4 + 0}));
}

TEST(Heuristics, LocalOnlyLeastLoadedRoundRobin) {
  Fixture f;
  for (int a = 0; a < 4; ++a) f.set(a, "free_gpu_frac", a == 2 ? 0.9f : 0.1f);
  EXPECT_EQ(run("local-only", f), (std::vector<int>{0, 1, 2, 3}));
  const auto ll = run("least-loaded", f);
  EXPECT_EQ(ll[0], 2);
  EXPECT_EQ(ll[1], 2);
  EXPECT_NE(ll[2], 2);  // never itself as the overflow target
  EXPECT_EQ(run("round-robin", f, 0), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(run("round-robin", f, 1), (std::vector<int>{4 + 1, 4 + 2, 4 + 3, 4 + 0}));
}

TEST(Heuristics, RandomCoversTheActionSpaceAndUnknownNamesFail) {
  Fixture f;
  auto p = make_heuristic("random", f.spec, 5);
  std::set<int> seen;
  std::vector<int> a;
  // It draws from the episode, the agent and the step (PolicyInput::draw): the same input gives
  // the same actions, other steps and episodes others.
  auto in = f.input();
  p->act(in, a);
  std::vector<int> again;
  p->act(in, again);
  EXPECT_EQ(a, again);
  for (int i = 0; i < 200; ++i) {
    in.episode_step[0] = i % 50;
    in.episode_seed = {static_cast<std::uint64_t>(i / 50)};
    p->act(in, a);
    seen.insert(a.begin(), a.end());
  }
  EXPECT_EQ(seen.size(), 8u);
  EXPECT_THROW(make_heuristic("greedy", f.spec, 1), ConfigError);
}

// wait-awhile defers at a site whose coming hours are cheaper in the reward's terms by more than
// its threshold, and places like least-loaded otherwise.
TEST(Heuristics, WaitAwhileDefersForCheaperHoursElseLeastLoaded) {
  Fixture f;
  for (int a = 0; a < 4; ++a) {
    f.set(a, "free_gpu_frac", a == 2 ? 0.9f : 0.1f);
    f.set(a, "carbon", 0.8f);
    f.set(a, "price", 1.0f);
  }
  f.set(0, "carbon_trend", -0.5f);  // site 0: much greener soon
  f.set(0, "price_trend", -0.5f);
  f.set(1, "price_trend", -0.02f);  // site 1: slightly cheaper soon (below the threshold)
  const auto a = run("wait-awhile:0.1", f);
  EXPECT_EQ(a[0], 4 + 0);  // defer here
  EXPECT_EQ(a[1], 2);      // least-loaded overflow
  EXPECT_EQ(a, run("wait-awhile:0.1", f));
  EXPECT_EQ(run("wait-awhile:0.9", f)[0], 2);  // a high threshold never waits
  EXPECT_THROW(make_heuristic("wait-awhile:abc", f.spec, 1), ConfigError);
  EXPECT_THROW(make_heuristic("wait-awhile:1.5", f.spec, 1), ConfigError);
  EXPECT_THROW(make_heuristic("least-loaded:0.1", f.spec, 1), ConfigError);
}

// green-fit overflows to the cheapest other site with room; fixed-overflow always to one site.
TEST(Heuristics, GreenFitAndFixedOverflow) {
  Fixture f;
  const float free[] = {0.5f, 0.3f, 0.02f, 0.9f};
  const float carbon[] = {0.5f, 0.4f, 0.1f, 1.0f};  // site 2 is cleanest but full
  for (int a = 0; a < 4; ++a) {
    f.set(a, "free_gpu_frac", free[a]);
    f.set(a, "carbon", carbon[a]);
    f.set(a, "price", 1.0f);
  }
  // Cheapest with >= 5 % free: site 1 for everyone else, site 0 for site 1.
  EXPECT_EQ(run("green-fit", f), (std::vector<int>{1, 0, 1, 1}));
  // Asking 95 % free: nobody qualifies, least-loaded (site 3; site 0 for site 3).
  EXPECT_EQ(run("green-fit:0.95", f), (std::vector<int>{3, 3, 3, 0}));
  EXPECT_EQ(run("fixed-overflow", f), (std::vector<int>{0, 0, 0, 0}));  // site 0; local there
  EXPECT_EQ(run("fixed-overflow:2", f), (std::vector<int>{2, 2, 2, 2}));
  EXPECT_THROW(make_heuristic("fixed-overflow:4", f.spec, 1), ConfigError);
  EXPECT_THROW(make_heuristic("fixed-overflow:1.5", f.spec, 1), ConfigError);
  EXPECT_THROW(make_heuristic("green-fit:2", f.spec, 1), ConfigError);
}

// guarded-overflow sends to fixed-overflow's site only while its queue is short; else holds.
TEST(Heuristics, GuardedOverflowHoldsWhileTheSpillSiteIsQueued) {
  Fixture f;
  f.set(0, "queue_load", 0.05f);
  EXPECT_EQ(run("guarded-overflow", f), (std::vector<int>{0, 0, 0, 0}));  // short: overflow
  f.set(0, "queue_load", 0.5f);
  EXPECT_EQ(run("guarded-overflow", f), (std::vector<int>{0, 1, 2, 3}));  // long: hold here
  EXPECT_EQ(run("guarded-overflow:0.6", f), (std::vector<int>{0, 0, 0, 0}));
  EXPECT_EQ(run("guarded-overflow:1.5", f),
            (std::vector<int>{0, 0, 0, 0}));  // a level, not a share
}
