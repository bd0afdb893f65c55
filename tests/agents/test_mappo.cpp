#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <memory>
#include <string>

#include "agents/mappo/mappo.hpp"
#include "agents/registry.hpp"
#include "bandit.hpp"
#include "core/error.hpp"
#include "envs/baselines.hpp"
#include "envs/geodc/geodc.hpp"
#include "test_util.hpp"

using namespace marlsched;

namespace {

/// One-step bandit with a known optimum: action 2 pays 1, others 0. Episodes are 8 steps,
/// truncated, so GAE bootstrapping is exercised too.
double train_bandit(Mappo& m, const dist::Comm& comm, int iterations) {
  const auto spec = test::bandit_spec();
  std::vector<float> obs = {0.5f, -0.5f};
  const PolicyInput in = test::one_copy_input(spec, obs);
  std::vector<int> a;
  StepFeedback fb;
  fb.reward = {0.f};
  fb.done = {0};
  fb.truncated = {0};
  fb.terminal = {GlobalObs{obs.data(), 1, 2}};
  (void)comm;
  for (int it = 0; it < iterations; ++it) {
    m.set_training(true);
    for (int t = 0; t < 32; ++t) {
      m.act(in, a);
      fb.reward[0] = a[0] == 2 ? 1.f : 0.f;
      fb.done[0] = fb.truncated[0] = (t % 8 == 7) ? 1 : 0;
      m.record(fb);
    }
    const auto st = m.update(in);
    EXPECT_TRUE(std::isfinite(m.stat(st, "policy_loss")));
    EXPECT_TRUE(std::isfinite(m.stat(st, "value_loss")));
  }
  return m.action_probs(in.global[0], 0)[2];
}

/// `m` saved to the model file `path` and loaded into a new learner of the same config and spec
/// (built with another seed, so only the file can make the two agree).
std::unique_ptr<Mappo> reloaded(const Mappo& m, const MappoConfig& cfg, const EnvSpec& spec,
                                const std::string& path) {
  m.save(path);
  static const auto world = dist::Comm::world();  // a learner keeps a reference to its comm
  auto b = std::make_unique<Mappo>(cfg, test::layout(spec, world, 1, 0, 1, 1, 4));
  b->load(path);
  return b;
}

/// The bandit tests' learner settings, with the named critic.
MappoConfig bandit_config(CriticKind critic = CriticKind::kConcat) {
  MappoConfig cfg;
  cfg.lr_actor = 3e-3;
  cfg.rollout_steps = 32;
  cfg.critic = critic;
  return cfg;
}
}  // namespace

TEST(Mappo, LearnsABanditWithAKnownOptimum) {
  auto comm = dist::Comm::world();
  const MappoConfig cfg = bandit_config();
  const auto spec = test::bandit_spec();
  Mappo m(cfg, test::layout(spec, comm, 1, 0, 1, 1, 3));
  std::vector<float> obs = {0.5f, -0.5f};
  const float p0 = m.action_probs(GlobalObs{obs.data(), 1, 2}, 0)[2];
  EXPECT_NEAR(p0, 1.0 / 3, 0.05);  // small initial head gain: near-uniform policy
  const double p = train_bandit(m, comm, 30);
  EXPECT_GT(p, 0.8) << "the PPO update did not move probability to the paying action";
}

TEST(Mappo, SaveLoadRoundTripAndLayoutCheck) {
  auto comm = dist::Comm::world();
  MappoConfig cfg;
  cfg.rollout_steps = 32;
  const auto spec = test::bandit_spec();
  Mappo a(cfg, test::layout(spec, comm, 1, 0, 1, 1, 11));
  train_bandit(a, comm, 2);
  const auto dir = test::temp_dir("mappo");
  a.save(dir + "/m.pt");
  Mappo b(cfg, test::layout(spec, comm, 1, 0, 1, 1, 12));
  std::vector<float> obs = {0.1f, 0.2f};
  const GlobalObs g{obs.data(), 1, 2};
  EXPECT_NE(a.action_probs(g, 0), b.action_probs(g, 0));
  b.load(dir + "/m.pt");
  EXPECT_EQ(a.action_probs(g, 0), b.action_probs(g, 0));
  EXPECT_EQ(a.shared_parameter_digest(), b.shared_parameter_digest());
  MappoConfig other = cfg;
  other.share_actor = false;
  Mappo c(other, test::layout(spec, comm, 1, 0, 1, 1, 12));
  EXPECT_THROW(c.load(dir + "/m.pt"), ConfigError);
  EXPECT_THROW(b.load(dir + "/missing.pt"), InputError);
}

TEST(Mappo, SeparateActorsPerAgentWhenNotShared) {
  auto comm = dist::Comm::world();
  MappoConfig cfg;
  cfg.share_actor = false;
  auto spec = test::bandit_spec();
  Mappo m(cfg, test::layout(spec, comm, 2, 0, 2, 1, 5));
  std::vector<float> obs = {0.3f, 0.1f, 0.7f, 0.2f};
  const GlobalObs g{obs.data(), 2, 2};
  EXPECT_NE(m.action_probs(g, 0), m.action_probs(g, 1));
  MappoConfig shared;
  Mappo s(shared, test::layout(spec, comm, 2, 0, 2, 1, 5));
  // Shared set = critic (+ actor when shared): separate actors leave only the critic.
  EXPECT_LT(m.shared_parameter_count(), s.shared_parameter_count());
}

TEST(Mappo, ActorGroupsOneActorPerGroupAndTheirChecks) {
  auto comm = dist::Comm::world();
  auto spec = test::bandit_spec();
  MappoConfig cfg;
  cfg.actor_groups = {0, 1, 0};
  Mappo m(cfg, test::layout(spec, comm, 3, 0, 3, 1, 5));
  MappoConfig one;
  Mappo s(one, test::layout(spec, comm, 3, 0, 3, 1, 5));
  // Two actors (shared, like the one actor of `s`): the shared set grows by one actor.
  MappoConfig per;
  per.share_actor = false;
  Mappo p(per, test::layout(spec, comm, 3, 0, 3, 1, 5));
  const auto actor = s.shared_parameter_count() - p.shared_parameter_count();
  EXPECT_GT(actor, 0);
  EXPECT_EQ(m.shared_parameter_count(), s.shared_parameter_count() + actor);
  // A model of two groups does not load into one of one group.
  const auto dir = test::temp_dir("mappo-groups");
  m.save(dir + "/m.pt");
  EXPECT_THROW(s.load(dir + "/m.pt"), ConfigError);
  Mappo m2(cfg, test::layout(spec, comm, 3, 0, 3, 1, 9));
  m2.load(dir + "/m.pt");
  EXPECT_EQ(m.shared_parameter_digest(), m2.shared_parameter_digest());
  auto bad = [&](std::vector<int> groups, bool share, const std::string& says) {
    MappoConfig c;
    c.actor_groups = std::move(groups);
    c.share_actor = share;
    try {
      Mappo x(c, test::layout(spec, comm, 3, 0, 3, 1, 5));
      ADD_FAILURE() << "accepted groups: " << says;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  bad({0, 1}, true, "names 2 groups for 3 agents");
  bad({0, 2, 0}, true, "group 1 has no agent");
  bad({0, 1, 0}, false, "drop --no-share-actor");
}

TEST(Ippo, DecentralizedCriticLearnsTheBanditAndSeesOnlyTheActorInput) {
  auto comm = dist::Comm::world();
  const MappoConfig cfg = bandit_config(CriticKind::kLocal);
  const auto spec = test::bandit_spec();
  Mappo m(cfg, test::layout(spec, comm, 1, 0, 1, 1, 3));
  EXPECT_EQ(m.name(), "ippo");
  EXPECT_GT(train_bandit(m, comm, 30), 0.8);
  // The critic's input is the actor's (own observation, public fields, id), not every agent's
  // observations: with 8 agents, MAPPO's critic takes 8 x 2 + 8 = 24 inputs, IPPO's 2 + 8 + 8 = 18.
  MappoConfig central;
  Mappo c8(central, test::layout(spec, comm, 8, 0, 8, 1, 3)),
      i8(cfg, test::layout(spec, comm, 8, 0, 8, 1, 3));
  const int hidden = central.critic_hidden.front();
  EXPECT_EQ(c8.shared_parameter_count() - i8.shared_parameter_count(), (24 - 18) * hidden);
  // A MAPPO model does not load into IPPO (different critic), with a clear message.
  const auto dir = test::temp_dir("ippo");
  c8.save(dir + "/c.pt");
  EXPECT_THROW(i8.load(dir + "/c.pt"), ConfigError);
}

namespace {
/// The critic's value of local agent `kk` for one global observation (a training-mode act()).
float value_of(Mappo& m, const EnvSpec& spec, std::vector<float>& obs, int n, int kk) {
  const PolicyInput in = test::one_copy_input(spec, obs, n);
  m.set_training(true);
  return m.act(in).values[static_cast<std::size_t>(kk)];
}
}  // namespace

TEST(PooledCritic, SizeIsIndependentOfTheAgentCountAndOrderOfOthers) {
  auto comm = dist::Comm::world();
  const auto spec = test::bandit_spec();
  MappoConfig pooled;
  pooled.critic = CriticKind::kPooled;
  pooled.share_actor = false;  // the shared set is then the critic alone
  MappoConfig concat = pooled;
  concat.critic = CriticKind::kConcat;
  Mappo p4(pooled, test::layout(spec, comm, 4, 0, 4, 1, 3)),
      p64(pooled, test::layout(spec, comm, 64, 0, 64, 1, 3));
  Mappo c4(concat, test::layout(spec, comm, 4, 0, 4, 1, 3)),
      c64(concat, test::layout(spec, comm, 64, 0, 64, 1, 3));
  EXPECT_EQ(p4.shared_parameter_count(), p64.shared_parameter_count());
  EXPECT_GT(c64.shared_parameter_count(), c4.shared_parameter_count());
  // Permutation invariance: swapping two other agents' observations leaves agent 0's value.
  std::vector<float> obs = {0.1f, 0.2f, 0.9f, -0.4f, -0.3f, 0.8f, 0.5f, 0.5f};
  const float v = value_of(p4, spec, obs, 4, 0);
  std::swap_ranges(obs.begin() + 2, obs.begin() + 4, obs.begin() + 4);
  EXPECT_FLOAT_EQ(value_of(p4, spec, obs, 4, 0), v);
  // ... while its own observation matters.
  obs[0] = 2.f;
  EXPECT_NE(value_of(p4, spec, obs, 4, 0), v);
}

TEST(PooledCritic, LearnsTheBanditAndRoundTripsThroughAModelFile) {
  auto comm = dist::Comm::world();
  const MappoConfig cfg = bandit_config(CriticKind::kPooled);
  const auto spec = test::bandit_spec();
  Mappo m(cfg, test::layout(spec, comm, 1, 0, 1, 1, 3));
  EXPECT_GT(train_bandit(m, comm, 30), 0.8);
  const auto dir = test::temp_dir("pooled");
  const auto b = reloaded(m, cfg, spec, dir + "/m.pt");
  std::vector<float> obs = {0.5f, -0.5f};
  EXPECT_EQ(value_of(m, spec, obs, 1, 0), value_of(*b, spec, obs, 1, 0));
  MappoConfig concat = cfg;
  concat.critic = CriticKind::kConcat;
  Mappo c(concat, test::layout(spec, comm, 1, 0, 1, 1, 4));
  EXPECT_THROW(c.load(dir + "/m.pt"), ConfigError);
}

TEST(PerTargetActor, SizeIsIndependentOfTheAgentCountAndScoresFollowTheTargets) {
  auto comm = dist::Comm::world();
  MappoConfig cfg;
  cfg.actor = ActorKind::kTargets;
  cfg.critic = CriticKind::kPooled;
  Mappo a4(cfg, test::layout(test::targeted_bandit_spec(4), comm, 4, 0, 4, 1, 3)),
      a64(cfg, test::layout(test::targeted_bandit_spec(64), comm, 64, 0, 64, 1, 3));
  EXPECT_EQ(a4.shared_parameter_count(), a64.shared_parameter_count());
  MappoConfig mlp = cfg;
  mlp.actor = ActorKind::kMlp;
  Mappo m4(mlp, test::layout(test::targeted_bandit_spec(4), comm, 4, 0, 4, 1, 3)),
      m64(mlp, test::layout(test::targeted_bandit_spec(64), comm, 64, 0, 64, 1, 3));
  EXPECT_GT(m64.shared_parameter_count(), m4.shared_parameter_count());
  // Agent 0's targets are 0, 1 and 3. Swapping the observations of agents 1 and 3 swaps the
  // probabilities of sending to "next" and "prev" in both modes and leaves the rest.
  std::vector<float> obs = {0.1f, 0.2f, 0.9f, -0.4f, -0.3f, 0.8f, 0.5f, -0.7f};
  const GlobalObs g{obs.data(), 4, 2};
  const auto p = a4.action_probs(g, 0);
  ASSERT_EQ(p.size(), 6u);
  std::swap_ranges(obs.begin() + 2, obs.begin() + 4, obs.begin() + 6);
  const auto q = a4.action_probs(g, 0);
  for (int m = 0; m < 2; ++m) {
    EXPECT_FLOAT_EQ(q[static_cast<std::size_t>(3 * m)], p[static_cast<std::size_t>(3 * m)]);
    EXPECT_FLOAT_EQ(q[static_cast<std::size_t>(3 * m + 1)], p[static_cast<std::size_t>(3 * m + 2)]);
    EXPECT_FLOAT_EQ(q[static_cast<std::size_t>(3 * m + 2)], p[static_cast<std::size_t>(3 * m + 1)]);
  }
  EXPECT_NE(p[1], p[2]) << "the two neighbours' observations differ, so must their scores";
  // An agent that is not a target (agent 2 for agent 0) does not change agent 0's policy.
  obs[4] = 5.f;
  EXPECT_EQ(a4.action_probs(g, 0), q);
}

TEST(PerTargetActor, LearnsAndRoundTripsAndRefusesWhatDoesNotFit) {
  auto comm = dist::Comm::world();
  MappoConfig cfg = bandit_config(CriticKind::kConcat);
  cfg.actor = ActorKind::kTargets;
  // The bandit's three actions as one mode x three targets that only their static feature tells
  // apart (all three are the agent itself): the network must learn to score target 2 highest.
  EnvSpec spec = test::bandit_spec();
  spec.targets = {{0, 0, 0}};
  spec.target_feature_names = {"which"};
  spec.target_features = {{0.f, 1.f, 2.f}};
  Mappo m(cfg, test::layout(spec, comm, 1, 0, 1, 1, 3));
  EXPECT_GT(train_bandit(m, comm, 30), 0.8);
  const auto dir = test::temp_dir("targets");
  const auto b = reloaded(m, cfg, spec, dir + "/m.pt");
  std::vector<float> obs = {0.5f, -0.5f};
  const GlobalObs g{obs.data(), 1, 2};
  EXPECT_EQ(m.action_probs(g, 0), b->action_probs(g, 0));
  MappoConfig mlp = cfg;
  mlp.actor = ActorKind::kMlp;
  Mappo c(mlp, test::layout(spec, comm, 1, 0, 1, 1, 4));
  EXPECT_THROW(c.load(dir + "/m.pt"), ConfigError);
  EXPECT_THROW(b->load(dir + "/missing.pt"), InputError);
  // An env without targets cannot have a per-target actor.
  EXPECT_THROW(Mappo(cfg, test::layout(test::bandit_spec(), comm, 1, 0, 1, 1, 3)), ConfigError);
}

// --imitate: with no reward at all, the actor learns the teacher's action in the states it
// visits (least-loaded: overflow to the other site with the most free GPUs), the imitation
// weight falls to zero after --imitate-iterations updates (a model file carries the count on),
// and bad teachers are refused.
TEST(Mappo, ImitatesATeacherHeuristicThenStops) {
  auto comm = dist::Comm::world();
  geodc::Config gc;
  const EnvSpec spec = geodc::make_spec(gc, 4);
  MappoConfig cfg;
  cfg.lr_actor = 3e-3;
  cfg.rollout_steps = 32;
  cfg.imitate = "least-loaded";
  cfg.imitate_iterations = 60;
  Mappo m(cfg, test::layout(spec, comm, 4, 0, 4, 1, 7, baseline_maker(spec)));
  const int d = spec.obs_dim(), free = spec.obs_index("free_gpu_frac");
  std::vector<float> obs(static_cast<std::size_t>(4 * d), 0.f);
  Rng rng(5);
  StepFeedback fb;
  fb.reward.assign(4, 0.f);
  fb.done = {0};
  fb.truncated = {0};
  fb.terminal = {GlobalObs{obs.data(), 4, d}};
  std::vector<int> a, want;
  auto teacher = make_heuristic("least-loaded", spec, 0);
  auto randomise = [&] {
    for (int s = 0; s < 4; ++s)
      obs[static_cast<std::size_t>(s * d + free)] = static_cast<float>(rng.uniform());
  };
  // The share of 200 random states in which the greedy policy takes the teacher's action.
  auto agreement = [&] {
    m.set_training(false);
    m.set_deterministic(true);
    int agree = 0;
    for (int i = 0; i < 50; ++i) {
      randomise();
      const auto in = test::one_copy_input(spec, obs, 4);
      m.act(in, a);
      teacher->act(in, want);
      for (int s = 0; s < 4; ++s)
        agree += a[static_cast<std::size_t>(s)] == want[static_cast<std::size_t>(s)];
    }
    m.set_training(true);
    return agree / 200.0;
  };
  const double before = agreement();
  EXPECT_DOUBLE_EQ(m.imitation_weight(), 1.0);
  for (int it = 0; it < 60; ++it) {
    if (it == 30) {  // halfway: half the weight, and a model file carries the count on
      EXPECT_DOUBLE_EQ(m.imitation_weight(), 0.5);
      const std::string path = ::testing::TempDir() + "imitating.pt";
      m.save(path);
      Mappo r(cfg, test::layout(spec, comm, 4, 0, 4, 1, 8, baseline_maker(spec)));
      r.load(path);
      EXPECT_DOUBLE_EQ(r.imitation_weight(), 0.5);
    }
    for (int t = 0; t < 32; ++t) {
      randomise();
      m.act(test::one_copy_input(spec, obs, 4), a);
      fb.done[0] = fb.truncated[0] = (t % 8 == 7) ? 1 : 0;
      m.record(fb);
    }
    m.update(test::one_copy_input(spec, obs, 4));
  }
  const double after = agreement();
  std::cout << "agreement with the teacher: " << before << " before, " << after << " after\n";
  EXPECT_DOUBLE_EQ(m.imitation_weight(), 0.0);  // PPO alone from here on
  EXPECT_LT(before, 0.5);
  EXPECT_GT(after, 0.7) << "the greedy policy does not follow the teacher (" << before
                        << " before imitation)";

  // The teacher is the env's: the learner names it (the launch layer checks it against the env)
  // and is handed the env's baselines.
  LearnerConfigs named;
  named.get<MappoConfig>() = cfg;
  ASSERT_EQ(named.baselines("mappo").size(), 1u);
  EXPECT_EQ(named.baselines("mappo")[0].option, "--imitate");
  EXPECT_EQ(named.baselines("mappo")[0].name, "least-loaded");
  EXPECT_THROW(Mappo(cfg, test::layout(spec, comm, 4, 0, 4, 1, 7)), Error);  // an internal fault
  MappoConfig bad = cfg;
  bad.imitate_iterations = 0;
  EXPECT_THROW(bad.validate(), ConfigError);
}

// --base-policy: a fresh actor acts greedily as the baseline (its logits are level, the margin
// decides); PPO learns to depart from it where another action pays; the model records the
// baseline (a run without it refuses the model) and export refuses the policy.
TEST(Mappo, DepartsFromABasePolicyWhereAnotherActionPays) {
  auto comm = dist::Comm::world();
  geodc::Config gc;
  const EnvSpec spec = geodc::make_spec(gc, 4);
  MappoConfig cfg;
  cfg.lr_actor = 3e-3;
  cfg.rollout_steps = 32;
  cfg.base_policy = "local-only";
  Mappo m(cfg, test::layout(spec, comm, 4, 0, 4, 1, 7, baseline_maker(spec)));
  const int d = spec.obs_dim(), free = spec.obs_index("free_gpu_frac");
  std::vector<float> obs(static_cast<std::size_t>(4 * d), 0.f);
  for (int s = 0; s < 4; ++s) obs[static_cast<std::size_t>(s * d + free)] = 0.5f;
  const auto in = test::one_copy_input(spec, obs, 4);
  std::vector<int> a, base;
  make_heuristic("local-only", spec, 0)->act(in, base);
  auto greedy = [&] {
    m.set_training(false);
    m.set_deterministic(true);
    m.act(in, a);
    return a;
  };
  EXPECT_EQ(greedy(), base);
  // Agent s is paid for the action after the baseline's.
  std::vector<int> want;
  for (int b : base) want.push_back((b + 1) % spec.num_actions());
  StepFeedback fb;
  fb.reward.assign(4, 0.f);
  fb.done = {0};
  fb.truncated = {0};
  fb.terminal = {GlobalObs{obs.data(), 4, d}};
  for (int it = 0; it < 60; ++it) {
    m.set_training(true);
    for (int t = 0; t < 32; ++t) {
      m.act(in, a);
      for (int s = 0; s < 4; ++s)
        fb.reward[static_cast<std::size_t>(s)] =
            a[static_cast<std::size_t>(s)] == want[static_cast<std::size_t>(s)] ? 1.f : 0.f;
      fb.done[0] = fb.truncated[0] = (t % 8 == 7) ? 1 : 0;
      m.record(fb);
    }
    m.update(in);
  }
  EXPECT_EQ(greedy(), want);
  const auto dir = test::temp_dir("mappo-base");
  m.save(dir + "/m.pt");
  Mappo same(cfg, test::layout(spec, comm, 4, 0, 4, 1, 8, baseline_maker(spec)));
  same.load(dir + "/m.pt");
  EXPECT_EQ(same.shared_parameter_digest(), m.shared_parameter_digest());
  MappoConfig none = cfg, other = cfg;
  none.base_policy.clear();
  other.base_margin = 1.0;
  for (const MappoConfig& c : {none, other}) {
    Mappo o(c, test::layout(spec, comm, 4, 0, 4, 1, 8, baseline_maker(spec)));
    EXPECT_THROW(o.load(dir + "/m.pt"), ConfigError) << c.base_policy << " " << c.base_margin;
  }
  EXPECT_THROW(export_learners("mappo", {&m}, dir + "/policy.pt", "{}", false), ConfigError);
  MappoConfig bad = cfg;
  bad.base_margin = 0.0;
  EXPECT_THROW(bad.validate(), ConfigError);
  LearnerConfigs named;
  named.get<MappoConfig>() = cfg;
  ASSERT_EQ(named.baselines("ippo").size(), 1u);
  EXPECT_EQ(named.baselines("ippo")[0].option, "--base-policy");
}

TEST(Mappo, PrivilegedCriticSeesTheEpisodesLuckWhichTheActorNeverReads) {
  // The bandit's reward plus luck z = ±2 drawn every step whatever the action; the privileged
  // field is the luck still to come in the episode, which a plain critic can only average over.
  // Both critics let the actor learn; the privileged one predicts the returns far better.
  auto comm = dist::Comm::world();
  EnvSpec spec = test::bandit_spec();
  spec.privileged_fields = {"luck_ahead"};
  const auto dir = test::temp_dir("mappo-privileged");
  auto run = [&](bool privileged, double& value_loss) {
    MappoConfig cfg = bandit_config();
    cfg.critic_privileged = privileged;
    Mappo m(cfg, test::layout(spec, comm, 1, 0, 1, 1, 3));
    EXPECT_EQ(m.wants_privileged(), privileged);
    std::vector<float> obs = {0.5f, -0.5f}, luck(8), ahead(1), none = {0.f};
    PolicyInput in = test::one_copy_input(spec, obs);
    in.global[0].privileged = ahead.data();
    in.global[0].privileged_dim = 1;
    std::vector<int> a;
    StepFeedback fb;
    fb.reward = {0.f};
    fb.done = {0};
    fb.truncated = {0};
    fb.terminal = {GlobalObs{obs.data(), 1, 2, none.data(), 1}};  // nothing after the end
    Rng rng(11);
    value_loss = 0;
    for (int it = 0; it < 60; ++it) {
      m.set_training(true);
      for (int t = 0; t < 32; ++t) {
        const int s = t % 8;
        if (s == 0)
          for (auto& z : luck) z = rng.uniform() < 0.5 ? -2.f : 2.f;
        ahead[0] = 0;
        for (int u = s; u < 8; ++u) ahead[0] += luck[static_cast<std::size_t>(u)] / 8;
        m.act(in, a);
        fb.reward[0] = (a[0] == 2 ? 1.f : 0.f) + luck[static_cast<std::size_t>(s)];
        fb.done[0] = fb.truncated[0] = s == 7 ? 1 : 0;
        m.record(fb);
      }
      const auto st = m.update(in);
      if (it >= 50) value_loss += m.stat(st, "value_loss") / 10;
    }
    // The actor reads the observation alone: the privileged field moves no action probability.
    const auto p = m.action_probs(in.global[0], 0);
    ahead[0] = 5.f;
    EXPECT_EQ(m.action_probs(in.global[0], 0), p);
    if (privileged) m.save(dir + "/privileged.pt");
    return p[2];
  };
  double plain_loss = 0, privileged_loss = 0;
  EXPECT_GT(run(false, plain_loss), 0.8);
  EXPECT_GT(run(true, privileged_loss), 0.8);
  std::cout << "value loss: plain critic " << plain_loss << ", privileged " << privileged_loss
            << "\n";
  EXPECT_LT(privileged_loss, 0.5 * plain_loss);

  // Files, export and configs that do not fit are refused.
  MappoConfig plain = bandit_config(), priv = bandit_config();
  priv.critic_privileged = true;
  Mappo other(plain, test::layout(spec, comm, 1, 0, 1, 1, 4));
  EXPECT_THROW(other.load(dir + "/privileged.pt"), ConfigError);
  Mappo same(priv, test::layout(spec, comm, 1, 0, 1, 1, 4));
  same.load(dir + "/privileged.pt");
  EXPECT_THROW(export_learners("mappo", {&same}, dir + "/policy.pt", "{}", true), ConfigError);
  export_learners("mappo", {&same}, dir + "/policy.pt", "{}", false);
  MappoConfig pooled = priv;
  pooled.critic = CriticKind::kPooled;
  EXPECT_THROW(pooled.validate(), ConfigError);
  EXPECT_THROW({ Mappo none_there(priv, test::layout(test::bandit_spec(), comm, 1, 0, 1, 1, 4)); },
               ConfigError);
}
