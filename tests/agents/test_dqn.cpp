#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "agents/dqn/dqn.hpp"
#include "agents/exported/torchscript_policy.hpp"
#include "agents/registry.hpp"
#include "bandit.hpp"
#include "core/rng.hpp"
#include "test_util.hpp"

using namespace marlsched;

namespace {
using test::Bandit;

DqnConfig small() {
  DqnConfig c;
  c.hidden = {32};
  c.batch = 32;
  c.warmup = 64;
  c.buffer = 2000;
  c.updates = 16;
  c.target_every = 20;
  c.eps_decay = 300;
  c.lr = 3e-3;
  c.gamma = 0.5;
  return c;
}

}  // namespace

class DqnTargets : public ::testing::TestWithParam<bool> {};
INSTANTIATE_TEST_SUITE_P(DoubleAndPlain, DqnTargets, ::testing::Bool());

TEST_P(DqnTargets, LearnsAContextualBanditAndAnnealsEpsilon) {
  dist::Comm self(MPI_COMM_SELF, false);
  Bandit b;
  DqnConfig cfg = small();
  cfg.double_dqn = GetParam();
  Dqn q(cfg, test::layout(b.spec, self, 1, 0, 1, 1, 7));
  EXPECT_DOUBLE_EQ(q.epsilon(), 1.0);
  int t = 0;
  test::train_bandit(q, b, 40, t);
  EXPECT_NEAR(q.epsilon(), 0.05, 1e-12);
  EXPECT_GT(q.replay_size(), 1000);
  for (float x : {1.f, -1.f}) {
    b.obs[0] = x;
    const auto v = q.q_values(b.input().global[0], 0);
    const int greedy = static_cast<int>(std::max_element(v.begin(), v.end()) - v.begin());
    EXPECT_EQ(greedy, b.best()) << "context " << x;
    // Q(s, best) ≈ 1 + γ·E[max Q(s')] ≈ 1 / (1 − γ) = 2; the others ≈ 1.
    EXPECT_NEAR(v[static_cast<std::size_t>(b.best())], 2.0, 0.5);
  }
  q.set_training(false);
  q.set_deterministic(true);
  b.obs[0] = -1.f;
  const Decisions d = q.act(b.input());
  EXPECT_EQ(d.actions[0], 2);
  EXPECT_NEAR(std::exp(d.log_probs[0]), 1.0, 1e-6);
}

TEST(Dqn, SaveLoadContinuesExactlyAndChecksTheLayout) {
  dist::Comm self(MPI_COMM_SELF, false);
  Bandit b1, b2;
  Dqn a(small(), test::layout(b1.spec, self, 1, 0, 1, 1, 11));
  int t1 = 0;
  test::train_bandit(a, b1, 6, t1);
  const auto dir = test::temp_dir("dqn-save");
  a.save(dir + "/m.pt");
  Dqn b(small(),
        test::layout(b2.spec, self, 1, 0, 1, 1, 99));  // other seed: everything comes from the file
  b.load(dir + "/m.pt");
  EXPECT_EQ(a.replay_size(), b.replay_size());
  EXPECT_DOUBLE_EQ(a.epsilon(), b.epsilon());
  b2.obs = b1.obs;
  int t2 = t1;
  test::train_bandit(a, b1, 3, t1);
  test::train_bandit(b, b2, 3, t2);
  EXPECT_EQ(a.q_values(b1.input().global[0], 0), b.q_values(b2.input().global[0], 0));
  DqnConfig other = small();
  other.hidden = {32};
  other.share = false;
  Dqn c(other, test::layout(b1.spec, self, 1, 0, 1, 1, 1));
  EXPECT_THROW(c.load(dir + "/m.pt"), ConfigError);
}

TEST(Dqn, ExportedGreedyPolicyMatchesTheQNetwork) {
  dist::Comm self(MPI_COMM_SELF, false);
  LearnerConfigs cfgs;
  cfgs.get<DqnConfig>() = small();
  cfgs.get<DqnConfig>().share = false;
  Bandit b;
  const int n = 2;
  EnvSpec spec = b.spec;
  // Two "ranks" of one agent each, as `marlsched export` loads them.
  auto r0 = make_learner("dqn", cfgs, spec, self, n, 0, 1, 1, 5);
  auto r1 = make_learner("dqn", cfgs, spec, self, n, 1, 1, 1, 5);
  const auto dir = test::temp_dir("dqn-export");
  const std::string path = dir + "/policy.pt";
  EXPECT_THROW(export_learners("dqn", {r0.get(), r1.get()}, path, "{}", true), ConfigError);
  export_learners("dqn", {r0.get(), r1.get()}, path, R"({"format": "marlsched-policy"})", false);
  const Dqn* owners[2] = {dynamic_cast<const Dqn*>(r0.get()), dynamic_cast<const Dqn*>(r1.get())};
  const int differ = test::expect_export_matches(path, spec, n, [&](const GlobalObs& g, int a) {
    const auto q = owners[a]->q_values(g, 0);
    return static_cast<int>(std::max_element(q.begin(), q.end()) - q.begin());
  });
  EXPECT_GT(differ, 0) << "the two agents' networks should differ (separate initialisation)";
}
