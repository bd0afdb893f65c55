// Offline training on hand-made datasets. MAPPO's, on the one-step bandit (action 2 pays 1):
// behaviour cloning copies the logged policy, advantage-weighted regression prefers the paying
// action over the logged majority, and --init-from takes the actor (and a trained critic) from
// a model file. DQN's with CQL's penalty, on a two-state chain: it stitches two kinds of
// episodes into a path that no episode took, and values unlogged actions lowest.
#include <gtest/gtest.h>

#include "agents/dqn/dqn.hpp"
#include "agents/mappo/mappo.hpp"
#include "agents/offline/policy_fit.hpp"
#include "agents/offline/q_fit.hpp"
#include "bandit.hpp"
#include "core/error.hpp"
#include "io/dataset.hpp"
#include "test_util.hpp"

using namespace marlsched;

namespace {

/// `episodes` episodes of 8 steps of one agent in one world: action a_of(t) logged at a fixed
/// observation, reward 1 for action 2.
LocalDataset bandit_dataset(int episodes, int (*a_of)(int)) {
  LocalDataset d;
  d.num_agents = 1;
  d.local_agents = 1;
  d.obs_dim = 2;
  d.rows = episodes * 8;
  for (std::int64_t r = 0; r < d.rows; ++r) {
    const int a = a_of(static_cast<int>(r));
    d.observations.insert(d.observations.end(), {0.5f, -0.5f});
    d.next_observations.insert(d.next_observations.end(), {0.5f, -0.5f});
    d.actions.push_back(a);
    d.rewards.push_back(a == 2 ? 1.f : 0.f);
    d.mean_rewards.push_back(d.rewards.back());
    d.log_probs.push_back(0.f);
    d.terminations.push_back(0);
    d.truncations.push_back(r % 8 == 7 ? 1 : 0);
  }
  d.file_offsets = {0, d.rows};
  d.block_offsets = {0, d.rows};
  return d;
}

MappoConfig offline_config() {
  MappoConfig cfg;
  cfg.lr_actor = 3e-3;
  cfg.lr_critic = 3e-3;
  return cfg;
}

}  // namespace

TEST(Offline, CloneCopiesTheLoggedPolicy) {
  auto comm = dist::Comm::world();
  const auto spec = test::bandit_spec();
  Mappo m(offline_config(), test::layout(spec, comm, 1, 0, 1, 1, 5));
  PolicyFit fit(m);
  // The logged policy: action 1 three times in four, action 2 otherwise.
  const auto data = bandit_dataset(32, [](int r) { return r % 4 == 0 ? 2 : 1; });
  UpdateStats st;
  for (int it = 0; it < 20; ++it) st = fit.clone(data, 2, 64);
  std::vector<float> obs = {0.5f, -0.5f};
  const auto p = m.action_probs(GlobalObs{obs.data(), 1, 2}, 0);
  EXPECT_NEAR(p[1], 0.75, 0.05);
  EXPECT_NEAR(p[2], 0.25, 0.05);
  // bc_loss, bc_accuracy, grad_norm_actor (the bc learner's stat_names): the argmax is the
  // logged majority.
  ASSERT_EQ(st.values.size(), 3u);
  EXPECT_NEAR(st.values[1], 0.75, 1e-6);
  EXPECT_THROW(fit.clone(data, 1, 100000), InputError);  // fewer rows than a minibatch
}

TEST(Offline, AwrPrefersThePayingActionOverTheLoggedMajority) {
  auto comm = dist::Comm::world();
  const auto spec = test::bandit_spec();
  Mappo m(offline_config(), test::layout(spec, comm, 1, 0, 1, 1, 6));
  PolicyFit fit(m);
  const auto data = bandit_dataset(32, [](int r) { return r % 4 == 0 ? 2 : 1; });
  PolicyFit::AwrOptions o;
  o.epochs = 2;
  o.minibatch = 64;
  o.team_reward = 0.0;
  UpdateStats st;
  for (int it = 0; it < 30; ++it) st = fit.awr(data, o);
  std::vector<float> obs = {0.5f, -0.5f};
  const auto p = m.action_probs(GlobalObs{obs.data(), 1, 2}, 0);
  EXPECT_GT(p[2], 0.5) << "AWR did not move probability to the paying action";
  EXPECT_GT(p[2], p[1]);
  // awr_loss, awr_accuracy, value_loss, mean_weight, grad_norm_actor, grad_norm_critic
  ASSERT_EQ(st.values.size(), 6u);
  EXPECT_TRUE(std::isfinite(st.values[2]));
  EXPECT_GT(st.values[3], 0.0);
}

TEST(Offline, InitFromTakesTheActorAndOnlyATrainedCritic) {
  auto comm = dist::Comm::world();
  const auto spec = test::bandit_spec();
  const auto dir = test::temp_dir("offline-init");
  const auto data = bandit_dataset(8, [](int r) { return r % 3; });
  std::vector<float> obs = {0.5f, -0.5f};
  const GlobalObs g{obs.data(), 1, 2};
  Mappo cloned(offline_config(), test::layout(spec, comm, 1, 0, 1, 1, 7));
  PolicyFit(cloned).clone(data, 1, 16);
  cloned.save(dir + "/bc.pt");
  Mappo fitted(offline_config(), test::layout(spec, comm, 1, 0, 1, 1, 8));
  PolicyFit::AwrOptions o;
  o.minibatch = 16;
  PolicyFit(fitted).awr(data, o);
  fitted.save(dir + "/awr.pt");

  Mappo a(offline_config(), test::layout(spec, comm, 1, 0, 1, 1, 9)),
      b(offline_config(), test::layout(spec, comm, 1, 0, 1, 1, 9));
  const auto before = a.shared_parameter_digest();
  a.init_from(dir + "/bc.pt");
  EXPECT_EQ(a.action_probs(g, 0), cloned.action_probs(g, 0));
  // bc trains no critic: a keeps its own, so its shared parameters are neither bc's nor its old.
  EXPECT_NE(a.shared_parameter_digest(), cloned.shared_parameter_digest());
  EXPECT_NE(a.shared_parameter_digest(), before);
  b.init_from(dir + "/awr.pt");  // awr trained its critic: every shared parameter is taken
  EXPECT_EQ(b.shared_parameter_digest(), fitted.shared_parameter_digest());
  MappoConfig other = offline_config();
  other.share_actor = false;
  Mappo c(other, test::layout(spec, comm, 1, 0, 1, 1, 9));
  EXPECT_THROW(c.init_from(dir + "/bc.pt"), ConfigError);  // another layout
}

namespace {

/// Two states, A = (1, 0) and B = (0, 1), and three kinds of one- or two-step episodes:
/// A -a1-> B -a0-> end (reward 0 and 0); B -a2-> end (reward 1); A -a0-> end (reward 0.3).
/// From A the best path is a1 then a2 (γ·1), which no episode took: an episode that starts
/// with a1 returns 0, one that starts with a0 returns 0.3.
LocalDataset chain_dataset(int repeats) {
  LocalDataset d;
  d.num_agents = 1;
  d.local_agents = 1;
  d.obs_dim = 2;
  auto row = [&d](std::vector<float> s, int a, float r, std::vector<float> s2, bool end) {
    d.observations.insert(d.observations.end(), s.begin(), s.end());
    d.next_observations.insert(d.next_observations.end(), s2.begin(), s2.end());
    d.actions.push_back(a);
    d.rewards.push_back(r);
    d.mean_rewards.push_back(r);
    d.log_probs.push_back(0.f);
    d.terminations.push_back(end ? 1 : 0);
    d.truncations.push_back(0);
    ++d.rows;
  };
  const std::vector<float> A = {1.f, 0.f}, B = {0.f, 1.f};
  for (int i = 0; i < repeats; ++i) {
    row(A, 1, 0.f, B, false);
    row(B, 0, 0.f, B, true);
    row(B, 2, 1.f, B, true);
    row(A, 0, 0.3f, A, true);
  }
  d.file_offsets = {0, d.rows};
  d.block_offsets = {0, d.rows};
  return d;
}

DqnConfig cql_config() {
  DqnConfig cfg;
  cfg.offline = true;
  cfg.cql_alpha = 0.3;
  cfg.gamma = 0.9;
  cfg.lr = 3e-3;
  cfg.hidden = {32, 32};
  cfg.target_every = 20;
  return cfg;
}

}  // namespace

TEST(Offline, CqlStitchesEpisodesAndValuesUnloggedActionsLowest) {
  auto comm = dist::Comm::world();
  const auto spec = test::bandit_spec();
  Dqn q(cql_config(), test::layout(spec, comm, 1, 0, 1, 1, 11));
  QFit fit(q);
  fit.use_dataset(chain_dataset(32));
  EXPECT_EQ(q.replay_size(), 128);
  UpdateStats st;
  for (int it = 0; it < 60; ++it) st = fit.update(2, 32);
  std::vector<float> a = {1.f, 0.f}, b = {0.f, 1.f};
  const auto qa = q.q_values(GlobalObs{a.data(), 1, 2}, 0);
  const auto qb = q.q_values(GlobalObs{b.data(), 1, 2}, 0);
  EXPECT_GT(qb[2], qb[0]);
  EXPECT_NEAR(qa[1], 0.9 * qb[2], 0.1);  // A's value of a1 is B's value of a2, discounted
  EXPECT_GT(qa[1], qa[0] + 0.2) << "CQL did not stitch: " << qa[0] << " " << qa[1];
  EXPECT_LT(qa[2], std::min(qa[0], qa[1]) - 1.0) << qa[2];  // never logged in A
  EXPECT_LT(qb[1], std::min(qb[0], qb[2]) - 1.0) << qb[1];  // never logged in B
  // td_loss, cql_gap, q_mean, grad_norm (the cql learner's stat_names)
  ASSERT_EQ(st.values.size(), 4u);
  EXPECT_GT(st.values[1], 0.0);                   // logsumexp exceeds any one action's value
  EXPECT_THROW(fit.update(1, 1000), InputError);  // fewer transitions than a minibatch

  // Saved without its dataset: a loaded copy has the same values and an empty buffer.
  const auto dir = test::temp_dir("offline-cql");
  q.save(dir + "/cql.pt");
  Dqn r(cql_config(), test::layout(spec, comm, 1, 0, 1, 1, 12));
  r.load(dir + "/cql.pt");
  EXPECT_EQ(r.q_values(GlobalObs{a.data(), 1, 2}, 0), qa);
  EXPECT_EQ(r.replay_size(), 0);
}
