#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "agents/registry.hpp"
#include "agents/tsdqn/tsdqn.hpp"
#include "test_util.hpp"

using namespace marlsched;

namespace {
/// A factored bandit: long action 1 of 2 pays 1 per step, short action 2 of 3 pays 1 per step.
/// Windows of 4 steps, episodes of 8.
struct Factored {
  EnvSpec spec;
  std::vector<float> obs{0.5f, -0.5f};
  Factored() {
    spec.name = "factored";
    spec.obs_fields = {"x", "y"};
    spec.num_public = 1;
    for (int l = 0; l < 2; ++l)
      for (int s = 0; s < 3; ++s)
        spec.action_names.push_back("L" + std::to_string(l) + "|S" + std::to_string(s));
    spec.action_heads = {2, 3};
    spec.long_every = 4;
    spec.reward_components = {"r"};
    spec.episode_length = 8;
  }
  PolicyInput input(int step) { return test::one_copy_input(spec, obs, 1, step); }
};

LearnerConfigs small() {
  LearnerConfigs c;
  c.get<DqnConfig>().hidden = {16};
  c.get<DqnConfig>().batch = 16;
  c.get<DqnConfig>().warmup = 32;
  c.get<DqnConfig>().buffer = 4000;
  c.get<DqnConfig>().updates = 8;
  c.get<DqnConfig>().target_every = 20;
  c.get<DqnConfig>().eps_decay = 300;
  c.get<DqnConfig>().lr = 3e-3;
  c.get<DqnConfig>().gamma = 0.5;
  c.get<TsdqnConfig>().long_batch = 8;
  c.get<TsdqnConfig>().long_warmup = 16;
  c.get<TsdqnConfig>().long_updates = 8;
  c.get<TsdqnConfig>().long_target_every = 10;
  c.get<TsdqnConfig>().long_eps_decay = 60;
  c.get<TsdqnConfig>().long_lr = 3e-3;
  return c;
}

/// Runs `iterations` of 16 steps; returns the actions taken. Checks that the long part of the
/// action only changes at window starts.
std::vector<int> train(Learner& l, Factored& f, int iterations, int& step) {
  std::vector<int> taken, a;
  StepFeedback fb;
  fb.reward = {0.f};
  fb.done = {0};
  fb.truncated = {0};
  fb.terminal = {GlobalObs{f.obs.data(), 1, 2}};
  int prev_long = -1;
  for (int it = 0; it < iterations; ++it) {
    l.set_training(true);
    for (int s = 0; s < 16; ++s, ++step) {
      const int ep_step = step % 8;
      l.act(f.input(ep_step), a);
      const int lg = a[0] / 3, sh = a[0] % 3;
      if (ep_step % 4 != 0 && prev_long >= 0) {
        EXPECT_EQ(lg, prev_long) << "long action changed inside a window";
      }
      prev_long = lg;
      taken.push_back(a[0]);
      fb.reward[0] = static_cast<float>((lg == 1 ? 1 : 0) + (sh == 2 ? 1 : 0));
      fb.done[0] = fb.truncated[0] = ep_step == 7 ? 1 : 0;
      l.record(fb);
    }
    const auto st = l.update(f.input(step % 8));
    EXPECT_EQ(st.values.size(), l.stat_names().size());
  }
  return taken;
}
}  // namespace

TEST(Tsdqn, LongHeadActsPerWindowAndBothHeadsLearn) {
  dist::Comm self(MPI_COMM_SELF, false);
  Factored f;
  auto l = make_learner("tsdqn", small(), f.spec, self, 1, 0, 1, 1, 3);
  int step = 0;
  train(*l, f, 60, step);
  auto& ts = dynamic_cast<TwoTimescaleDqn&>(*l);
  // One long transition per window: 60 iterations x 16 steps / 4.
  EXPECT_EQ(ts.long_head().replay_size(), 60 * 16 / 4);
  EXPECT_EQ(ts.short_head().replay_size(), 60 * 16);
  l->set_training(false);
  l->set_deterministic(true);
  std::vector<int> a;
  l->act(f.input(0), a);
  EXPECT_EQ(a[0], 1 * 3 + 2) << "greedy long 1 and short 2";
  EXPECT_EQ(l->stat_names().front().column, "long_td_loss");
}

TEST(Tsdqn, SaveLoadMidWindowContinuesExactly) {
  dist::Comm self(MPI_COMM_SELF, false);
  Factored f1, f2;
  auto a = make_learner("tsdqn", small(), f1.spec, self, 1, 0, 1, 1, 5);
  int s1 = 2;  // iterations end mid-window
  train(*a, f1, 5, s1);
  const auto dir = test::temp_dir("tsdqn-save");
  a->save(dir + "/m.pt");
  auto b = make_learner("tsdqn", small(), f2.spec, self, 1, 0, 1, 1, 77);
  b->load(dir + "/m.pt");
  int s2 = s1;
  EXPECT_EQ(train(*a, f1, 4, s1), train(*b, f2, 4, s2));
  EXPECT_EQ(a->shared_parameter_digest(), b->shared_parameter_digest());
  auto dqn = make_learner("dqn", small(), f1.spec, self, 1, 0, 1, 1, 5);
  EXPECT_THROW(dqn->load(dir + "/m.pt"), InputError);
  // One flipped bit anywhere (here in the short head's weights) fails the file's checksum.
  {
    std::fstream io(dir + "/m.pt", std::ios::in | std::ios::out | std::ios::binary);
    io.seekg(-200, std::ios::end);
    char c = 0;
    io.read(&c, 1);
    io.seekp(-200, std::ios::end);
    c = static_cast<char>(c ^ 1);
    io.write(&c, 1);
  }
  try {
    b->load(dir + "/m.pt");
    ADD_FAILURE() << "a damaged tsdqn model loaded";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("is damaged (its checksum differs)"), std::string::npos)
        << e.what();
  }
}

TEST(Tsdqn, NeedsAFactoredAction) {
  dist::Comm self(MPI_COMM_SELF, false);
  Factored f;
  f.spec.action_heads.clear();
  EXPECT_THROW(make_learner("tsdqn", small(), f.spec, self, 1, 0, 1, 1, 3), ConfigError);
}

TEST(Tsdqn, ShortHeadChoosesOnlyTheNamedShortActions) {
  dist::Comm self(MPI_COMM_SELF, false);
  Factored f;
  auto cfg = small();
  cfg.get<TsdqnConfig>().short_actions = {"S0", "S1"};  // the paying S2 is masked out
  auto l = make_learner("tsdqn", cfg, f.spec, self, 1, 0, 1, 1, 3);
  int step = 0;
  const auto taken = train(*l, f, 40, step);
  for (int a : taken) ASSERT_NE(a % 3, 2) << "the short head chose a masked action";
  EXPECT_TRUE(std::any_of(taken.begin(), taken.end(), [](int a) { return a % 3 == 1; }));
  cfg.get<TsdqnConfig>().short_actions = {"S0", "S9"};
  try {
    cfg.check_env("tsdqn", f.spec);
    ADD_FAILURE() << "an unknown short action was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("no short action 'S9' (it has S0, S1, S2)"),
              std::string::npos)
        << e.what();
  }
}

// With --ts-long-gamma g the long head learns on plain window sums discounted g per window: the
// episodes are truncated (they bootstrap), so the greedy value approaches windows of 4 steps
// paying 2 each, 8 / (1 - g) = 16 at g = 0.5; the exact semi-MDP form (γ = 0.5 per step inside
// the window, 0.5^4 across) gives 2·(1 + 0.5 + 0.25 + 0.125) / (1 - 0.0625) = 4.
TEST(Tsdqn, LongGammaDiscountsPlainWindowSums) {
  dist::Comm self(MPI_COMM_SELF, false);
  for (const double g : {0.0, 0.5}) {
    Factored f;
    auto cfg = small();
    cfg.get<TsdqnConfig>().long_gamma = g;
    auto l = make_learner("tsdqn", cfg, f.spec, self, 1, 0, 1, 1, 3);
    int step = 0;
    train(*l, f, 120, step);
    auto& ts = dynamic_cast<TwoTimescaleDqn&>(*l);
    const auto q = ts.long_head().q_values(GlobalObs{f.obs.data(), 1, 2}, 0);
    const float best = *std::max_element(q.begin(), q.end());
    if (g > 0) {
      EXPECT_NEAR(best, 16.0, 2.0) << "plain window sums, 0.5 per window";
    } else {
      EXPECT_NEAR(best, 4.0, 0.6) << "the exact semi-MDP discounting";
    }
  }
  auto bad = small();
  bad.get<TsdqnConfig>().long_gamma = 1.5;
  EXPECT_THROW(bad.get<TsdqnConfig>().validate(), ConfigError);
}
