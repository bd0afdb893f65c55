// coop, the reference env (envs/coop): the smallest env that exercises the whole Shard contract.
// Its optimum is known, so these tests pin the contract's parts: observe, act against the
// global observation, advance, truncation, counters, and exact state save/load.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "core/error.hpp"
#include "envs/coop/coop.hpp"

using namespace marlsched;

namespace {
struct Coop {
  coop::Config cfg;
  std::shared_ptr<const EnvSpec> spec;
  std::vector<std::unique_ptr<coop::Shard>> shards;
  std::vector<float> obs;
  explicit Coop(int n) : spec(std::make_shared<EnvSpec>(coop::make_spec(cfg))) {
    for (int a = 0; a < n; ++a) shards.push_back(std::make_unique<coop::Shard>(spec, a));
    obs.resize(static_cast<std::size_t>(n * spec->obs_dim()));
  }
  void reset(std::uint64_t seed) {
    for (std::size_t a = 0; a < shards.size(); ++a) shards[a]->reset(seed, seed * 100 + a);
  }
  GlobalObs gather() {
    for (std::size_t a = 0; a < shards.size(); ++a)
      shards[a]->observe(obs.data() + a * static_cast<std::size_t>(spec->obs_dim()));
    return GlobalObs{obs.data(), static_cast<int>(shards.size()), spec->obs_dim()};
  }
  /// One step with `pick(agent, global)`; returns the rewards.
  template <class F>
  std::vector<StepOutcome> step(F pick) {
    const GlobalObs g = gather();
    std::vector<WorkRecord> out;
    for (std::size_t a = 0; a < shards.size(); ++a)
      shards[a]->act(pick(static_cast<int>(a), g), g, out);
    EXPECT_TRUE(out.empty());  // coop hands no work between shards
    std::vector<StepOutcome> r;
    for (auto& s : shards) r.push_back(s->advance());
    return r;
  }
};
int leader_signal(const GlobalObs& g, int actions) {
  return static_cast<int>(std::lround(g.row(0)[0] * (actions - 1)));
}
}  // namespace

TEST(Coop, FollowingTheLeaderIsOptimalAndRandomEarnsOneInA) {
  Coop c(3);
  const int A = c.spec->num_actions();
  ASSERT_EQ(A, 3);
  EXPECT_EQ(c.spec->num_public, 1);
  double follow = 0, other = 0;
  int steps = 0;
  for (std::uint64_t ep = 1; ep <= 50; ++ep) {
    c.reset(ep);
    for (int t = 0; t < c.spec->episode_length; ++t) {
      // Agents 0 and 1 follow the leader; agent 2 always picks 0.
      const auto r =
          c.step([&](int a, const GlobalObs& g) { return a < 2 ? leader_signal(g, A) : 0; });
      follow += r[0].reward + r[1].reward;
      other += r[2].reward;
      EXPECT_EQ(r[0].components, std::vector<double>{r[0].reward});
      EXPECT_EQ(r[0].truncated, t + 1 == c.spec->episode_length);  // a time limit, never terminal
      EXPECT_FALSE(r[0].terminated);
      ++steps;
    }
  }
  EXPECT_EQ(follow, 2.0 * steps);             // the optimum: 1 per agent-step
  EXPECT_NEAR(other / steps, 1.0 / A, 0.08);  // a fixed pick matches 1 time in A
  EXPECT_EQ(c.shards[2]->counters().at("decisions"), steps);
  EXPECT_EQ(c.shards[2]->counters().at("matches"), other);
}

TEST(Coop, SavedStateContinuesExactly) {
  Coop a(2), b(2);
  a.reset(7);
  const auto pick = [](int agent, const GlobalObs& g) {
    return (agent + static_cast<int>(g.row(1)[1] * 10)) % 3;
  };
  for (int t = 0; t < 3; ++t) a.step(pick);
  for (std::size_t k = 0; k < 2; ++k) b.shards[k]->load_state(a.shards[k]->save_state());
  for (int t = 0; t < 20; ++t) {
    if (t % 8 == 5) {  // the episodes restart alike
      a.reset(100 + static_cast<std::uint64_t>(t));
      b.reset(100 + static_cast<std::uint64_t>(t));
    }
    const auto ra = a.step(pick), rb = b.step(pick);
    for (std::size_t k = 0; k < 2; ++k) ASSERT_EQ(ra[k].reward, rb[k].reward) << t;
    ASSERT_EQ(a.obs, b.obs) << t;
  }
  EXPECT_EQ(a.shards[0]->counters(), b.shards[0]->counters());
  // Another agent's state, or a damaged one, is refused.
  EXPECT_THROW(b.shards[1]->load_state(a.shards[0]->save_state()), InputError);
  auto bad = a.shards[0]->save_state();
  bad.resize(bad.size() - 1);
  EXPECT_THROW(b.shards[0]->load_state(bad), InputError);
}

TEST(Coop, BadOptionsAndActionsAreRefused) {
  coop::Config cfg;
  cfg.actions = 1;
  EXPECT_THROW(cfg.validate(2), ConfigError);
  cfg.actions = 3;
  cfg.steps = 0;
  EXPECT_THROW(cfg.validate(2), ConfigError);
  Coop c(2);
  c.reset(1);
  const GlobalObs g = c.gather();
  std::vector<WorkRecord> out;
  EXPECT_THROW(c.shards[0]->act(3, g, out), ConfigError);
  EXPECT_THROW(c.shards[0]->receive(WorkRecord{}), InputError);
}
