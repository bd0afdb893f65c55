#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "agents/exported/torchscript_policy.hpp"
#include "agents/masac/masac.hpp"
#include "agents/registry.hpp"
#include "bandit.hpp"
#include "core/rng.hpp"
#include "test_util.hpp"

using namespace marlsched;

namespace {
using test::Bandit;

MasacConfig small() {
  MasacConfig c;
  c.actor_hidden = {32};
  c.critic_hidden = {32};
  c.batch = 32;
  c.warmup = 64;
  c.buffer = 2000;
  c.updates = 16;
  c.lr_actor = 3e-3;
  c.lr_critic = 3e-3;
  c.lr_alpha = 3e-3;
  c.gamma = 0.5;
  return c;
}

}  // namespace

TEST(Masac, LearnsAContextualBanditAndTunesItsTemperature) {
  dist::Comm self(MPI_COMM_SELF, false);
  Bandit b;
  Masac l(small(), test::layout(b.spec, self, 1, 0, 1, 1, 7));
  EXPECT_NEAR(l.alpha(), 0.2, 1e-6);
  int t = 0;
  test::train_bandit(l, b, 40, t);
  EXPECT_EQ(l.replay_size(), 40 * 32);
  for (float x : {1.f, -1.f}) {
    b.obs[0] = x;
    const auto p = l.action_probs(b.input().global[0], 0);
    EXPECT_GT(p[static_cast<std::size_t>(b.best())], 0.6) << "context " << x;
  }
  // The policy's entropy fell below the target (0.5·log 3) at α = 0.2, so α rose.
  EXPECT_GT(l.alpha(), 0.2);
  l.set_training(false);
  l.set_deterministic(true);
  std::vector<int> a;
  b.obs[0] = -1.f;
  l.act(b.input(), a);
  EXPECT_EQ(a[0], 2);
}

TEST(Masac, SaveLoadContinuesExactlyAndChecksTheLayout) {
  dist::Comm self(MPI_COMM_SELF, false);
  Bandit b1, b2;
  Masac a(small(), test::layout(b1.spec, self, 1, 0, 1, 1, 11));
  int t1 = 0;
  test::train_bandit(a, b1, 6, t1);
  const auto dir = test::temp_dir("masac-save");
  a.save(dir + "/m.pt");
  Masac b(small(), test::layout(b2.spec, self, 1, 0, 1, 1,
                                99));  // other seed: everything comes from the file
  b.load(dir + "/m.pt");
  EXPECT_EQ(a.replay_size(), b.replay_size());
  EXPECT_EQ(a.alpha(), b.alpha());
  EXPECT_EQ(a.shared_parameter_digest(), b.shared_parameter_digest());
  b2.obs = b1.obs;
  int t2 = t1;
  test::train_bandit(a, b1, 3, t1);
  test::train_bandit(b, b2, 3, t2);
  EXPECT_EQ(a.action_probs(b1.input().global[0], 0), b.action_probs(b2.input().global[0], 0));
  EXPECT_EQ(a.shared_parameter_digest(), b.shared_parameter_digest());
  Masac two(small(), test::layout(b1.spec, self, 2, 0, 2, 1, 1));  // another layout
  EXPECT_THROW(two.load(dir + "/m.pt"), ConfigError);
  {
    std::ofstream junk(dir + "/junk.pt");
    junk << "not a model";
  }
  EXPECT_THROW(b.load(dir + "/junk.pt"), InputError);
}

TEST(Masac, ExportedPolicyMatchesTheActor) {
  dist::Comm self(MPI_COMM_SELF, false);
  LearnerConfigs cfgs;
  cfgs.get<MasacConfig>() = small();
  Bandit b;
  const int n = 2;
  auto l = make_learner("masac", cfgs, b.spec, self, n, 0, n, 1, 5);
  const auto dir = test::temp_dir("masac-export");
  const std::string path = dir + "/policy.pt";
  EXPECT_THROW(export_learners("masac", {l.get()}, path, "{}", true), ConfigError);
  export_learners("masac", {l.get()}, path, R"({"format": "marlsched-policy"})", false);
  const auto& m = dynamic_cast<const Masac&>(*l);
  test::expect_export_matches(path, b.spec, n, [&](const GlobalObs& g, int a) {
    const auto probs = m.action_probs(g, a);
    return static_cast<int>(std::max_element(probs.begin(), probs.end()) - probs.begin());
  });
}

TEST(Masac, OptionsAreValidated) {
  MasacConfig c;
  c.validate();
  c.target_entropy = 1.0;
  EXPECT_THROW(c.validate(), ConfigError);
  c = MasacConfig{};
  c.tau = 0;
  EXPECT_THROW(c.validate(), ConfigError);
  c = MasacConfig{};
  c.warmup = c.buffer + 1;
  EXPECT_THROW(c.validate(), ConfigError);
}

TEST(Maddpg, LearnsAContextualBanditAndResumesExactly) {
  dist::Comm self(MPI_COMM_SELF, false);
  Bandit b1, b2;
  Masac a(small(), test::layout(b1.spec, self, 1, 0, 1, 1, 7), /*maddpg=*/true);
  EXPECT_EQ(a.name(), "maddpg");
  int t1 = 0;
  test::train_bandit(a, b1, 30, t1);
  const auto dir = test::temp_dir("maddpg-save");
  a.save(dir + "/m.pt");
  Masac b(small(), test::layout(b2.spec, self, 1, 0, 1, 1, 99), true);
  b.load(dir + "/m.pt");
  b2.obs = b1.obs;
  int t2 = t1;
  test::train_bandit(a, b1, 10, t1);
  test::train_bandit(b, b2, 10, t2);
  EXPECT_EQ(a.shared_parameter_digest(), b.shared_parameter_digest());
  for (float x : {1.f, -1.f}) {
    b1.obs[0] = x;
    const auto p = a.action_probs(b1.input().global[0], 0);
    const int greedy = static_cast<int>(std::max_element(p.begin(), p.end()) - p.begin());
    EXPECT_EQ(greedy, b1.best()) << "context " << x;
  }
  EXPECT_NEAR(a.alpha(), 0.2, 1e-6) << "MADDPG has no temperature to tune";
  Masac sac(small(), test::layout(b1.spec, self, 1, 0, 1, 1, 1));
  EXPECT_THROW(sac.load(dir + "/m.pt"), ConfigError) << "a MADDPG model is not a MASAC model";
}
