#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <tuple>

#include "agents/es/es.hpp"
#include "agents/exported/torchscript_policy.hpp"
#include "agents/registry.hpp"
#include "bandit.hpp"
#include "core/rng.hpp"
#include "test_util.hpp"

using namespace marlsched;

namespace {
using test::Bandit;

/// `copies` copies of one bandit context (the common episodes that ES's pairs need).
PolicyInput copies_input(const EnvSpec& spec, std::vector<float>& obs, int copies) {
  PolicyInput in = test::one_copy_input(spec, obs);
  in.copies = copies;
  in.global.assign(static_cast<std::size_t>(copies), in.global[0]);
  in.episode_step.assign(static_cast<std::size_t>(copies), 0);
  return in;
}

/// Trains `l` on the bandit for `iterations` episodes of 8 steps on `copies` copies, which all
/// see the same contexts (as the world's common episodes give each pair); `t` drives the
/// contexts across calls.
void train_es(Learner& l, Bandit& b, int copies, int iterations, int& t) {
  std::vector<int> a;
  StepFeedback fb;
  fb.reward.assign(static_cast<std::size_t>(copies), 0.f);
  fb.done.assign(static_cast<std::size_t>(copies), 0);
  fb.truncated.assign(static_cast<std::size_t>(copies), 0);
  std::vector<float> terminal(2);
  for (int it = 0; it < iterations; ++it) {
    l.set_training(true);
    for (int s = 0; s < 8; ++s, ++t) {
      l.act(copies_input(b.spec, b.obs, copies), a);
      for (int c = 0; c < copies; ++c)
        fb.reward[static_cast<std::size_t>(c)] =
            a[static_cast<std::size_t>(c)] == b.best() ? 1.f : 0.f;
      b.obs[0] = (t * 7 + 3) % 5 < 2 ? 1.f : -1.f;
      const char end = s == 7 ? 1 : 0;
      std::fill(fb.done.begin(), fb.done.end(), end);
      std::fill(fb.truncated.begin(), fb.truncated.end(), end);
      terminal = b.obs;
      fb.terminal.assign(static_cast<std::size_t>(copies), GlobalObs{terminal.data(), 1, 2});
      l.record(fb);
    }
    const auto st = l.update(b.input());
    ASSERT_EQ(st.values.size(), l.stat_names().size());
  }
}

int greedy(Learner& l, Bandit& b, float x) {
  l.set_training(false);
  b.obs[0] = x;
  std::vector<int> a;
  l.act(b.input(), a);
  return a[0];
}

EsConfig small() {
  EsConfig c;
  c.lr = 0.05;
  c.sigma = 0.1;
  return c;
}
}  // namespace

TEST(Es, LearnsAContextualBanditFromAntitheticPairs) {
  dist::Comm self(MPI_COMM_SELF, false);
  Bandit b;
  Es l(small(), test::layout(b.spec, self, 1, 0, 1, 8, 7));
  EXPECT_EQ(l.common_episodes(), 2);
  EXPECT_EQ(l.parameter_count(), (2 + 1 + 1 + 1) * 3);  // linear: (obs, public, id, bias) x 3
  int t = 0;
  train_es(l, b, 8, 60, t);
  EXPECT_EQ(greedy(l, b, 1.f), 1);
  EXPECT_EQ(greedy(l, b, -1.f), 2);
  // Deterministic: log-probabilities are 0, and there is no value estimate.
  const Decisions d = l.act(b.input());
  EXPECT_EQ(d.log_probs[0], 0.f);
  EXPECT_TRUE(std::isnan(d.values[0]));
}

TEST(Es, AnMlpPolicyLearnsItToo) {
  dist::Comm self(MPI_COMM_SELF, false);
  Bandit b;
  EsConfig c = small();
  c.hidden = {8};
  Es l(c, test::layout(b.spec, self, 1, 0, 1, 8, 3));
  EXPECT_EQ(l.parameter_count(), 8 * (4 + 1) + 3 * (8 + 1));
  int t = 0;
  train_es(l, b, 8, 80, t);
  EXPECT_EQ(greedy(l, b, 1.f), 1);
  EXPECT_EQ(greedy(l, b, -1.f), 2);
}

TEST(Es, EqualReturnsInEveryPairLeaveTheParametersAlone) {
  // With common random numbers a pair whose two policies act alike scores alike: no step.
  dist::Comm self(MPI_COMM_SELF, false);
  Bandit b;
  Es l(small(), test::layout(b.spec, self, 1, 0, 1, 4, 7));
  const auto before = l.shared_parameter_digest();
  l.set_training(true);
  std::vector<int> a;
  StepFeedback fb;
  fb.reward.assign(4, 0.5f);
  fb.done.assign(4, 0);
  fb.truncated.assign(4, 0);
  fb.terminal.resize(4);
  l.act(copies_input(b.spec, b.obs, 4), a);
  l.record(fb);
  const auto st = l.update(b.input());
  EXPECT_EQ(l.shared_parameter_digest(), before);
  EXPECT_EQ(l.stat(st, "diff_nonzero"), 0.0);
  EXPECT_EQ(l.stat(st, "step_norm"), 0.0);
}

TEST(Es, SaveLoadContinuesExactlyAndChecksTheLayout) {
  dist::Comm self(MPI_COMM_SELF, false);
  Bandit b1, b2;
  Es a(small(), test::layout(b1.spec, self, 1, 0, 1, 4, 11));
  int t1 = 0;
  train_es(a, b1, 4, 5, t1);
  const auto dir = test::temp_dir("es-save");
  a.save(dir + "/m.pt");
  Es b(small(), test::layout(b2.spec, self, 1, 0, 1, 4, 11));
  b.load(dir + "/m.pt");
  EXPECT_EQ(a.shared_parameter_digest(), b.shared_parameter_digest());
  b2.obs = b1.obs;
  int t2 = t1;
  train_es(a, b1, 4, 3, t1);
  train_es(b, b2, 4, 3, t2);
  EXPECT_EQ(a.logits(b1.input().global[0], 0), b.logits(b2.input().global[0], 0));
  EXPECT_EQ(a.shared_parameter_digest(), b.shared_parameter_digest());
  EsConfig wide = small();
  wide.hidden = {4};
  Es other(wide, test::layout(b1.spec, self, 1, 0, 1, 4, 1));  // another network
  EXPECT_THROW(other.load(dir + "/m.pt"), ConfigError);
  {
    std::ofstream junk(dir + "/junk.pt");
    junk << "not a model";
  }
  EXPECT_THROW(b.load(dir + "/junk.pt"), InputError);
}

TEST(Es, ExportedPolicyMatchesTheLearner) {
  dist::Comm self(MPI_COMM_SELF, false);
  LearnerConfigs cfgs;
  cfgs.get<EsConfig>() = small();
  cfgs.get<EsConfig>().hidden = {6};
  Bandit b;
  const int n = 2;
  auto l = make_learner("es", cfgs, b.spec, self, n, 0, n, 2, 5);
  // Move the input moments away from (0, 1) so that the export must fold them in.
  {
    std::vector<int> a;
    std::vector<float> obs = {3.f, -1.f, 5.f, 2.f};
    l->set_training(true);
    PolicyInput in = test::one_copy_input(b.spec, obs, n);
    in.copies = 2;
    in.global.assign(2, in.global[0]);
    in.episode_step.assign(2, 0);
    StepFeedback fb;
    fb.reward = {1.f, 0.f, 0.f, 0.f};
    fb.done = {1, 1};
    fb.truncated = {1, 1};
    fb.terminal.resize(2);
    for (int s = 0; s < 3; ++s) {
      obs[0] = static_cast<float>(s);
      l->act(in, a);
    }
    l->record(fb);
    l->update(in);
  }
  const auto dir = test::temp_dir("es-export");
  const std::string path = dir + "/policy.pt";
  EXPECT_THROW(export_learners("es", {l.get()}, path, "{}", true), ConfigError);
  export_learners("es", {l.get()}, path, R"({"format": "marlsched-policy"})", false);
  const auto& m = dynamic_cast<const Es&>(*l);
  test::expect_export_matches(path, b.spec, n, [&](const GlobalObs& g, int a) {
    const auto lg = m.logits(g, a);
    return static_cast<int>(std::max_element(lg.begin(), lg.end()) - lg.begin());
  });
}

TEST(Es, OptionsAndCopiesAreValidated) {
  EsConfig c;
  c.validate();
  for (auto bad : {0.0, -1.0}) {
    c = EsConfig{};
    c.sigma = bad;
    EXPECT_THROW(c.validate(), ConfigError);
    c = EsConfig{};
    c.lr = bad;
    EXPECT_THROW(c.validate(), ConfigError);
  }
  c = EsConfig{};
  c.top = 1.5;
  EXPECT_THROW(c.validate(), ConfigError);
  dist::Comm self(MPI_COMM_SELF, false);
  Bandit b;
  for (int copies : {1, 3}) {  // acting (evaluation, export) is fine; training needs pairs
    Es l(EsConfig{}, test::layout(b.spec, self, 1, 0, 1, copies, 1));
    std::vector<int> a;
    l.act(b.input(), a);
    EXPECT_THROW(l.set_training(true), ConfigError) << copies << " copies";
  }
  EnvSpec endless = b.spec;
  endless.episode_length = 0;
  EXPECT_THROW(Es(EsConfig{}, test::layout(endless, self, 1, 0, 1, 2, 1)), ConfigError);
}

// act() shares the first layer's product over the public fields and the id among a world's
// agents; its greedy actions must be those of the reference forward (logits()) on every input,
// linear or with a hidden layer, for a rank holding agents 2 and 3 of 4, once θ and the input
// moments have moved away from their start.
TEST(Es, ActMatchesTheReferenceForward) {
  dist::Comm self(MPI_COMM_SELF, false);
  Bandit b;
  const int n = 4, k = 2, first = 2, copies = 2;
  // --es-actor targets: the bandit's fields with a targeted action space (2 modes x 3 targets:
  // the agent itself and its ring neighbours) and one static feature per pair.
  EnvSpec targeted = b.spec;
  targeted.action_names = {"m0t0", "m0t1", "m0t2", "m1t0", "m1t1", "m1t2"};
  targeted.target_feature_names = {"dist"};
  for (int i = 0; i < n; ++i) {
    targeted.targets.push_back({i, (i + 1) % n, (i + n - 1) % n});
    targeted.target_features.push_back({0.f, 0.5f + 0.1f * static_cast<float>(i), 2.f});
  }
  // The same with one (mode, target) head per class of work (geodc --action-classes): 2 heads
  // of 6, 36 actions; ES scores each head, act() takes each head's best.
  EnvSpec factored = targeted;
  factored.action_heads = {6, 6};
  factored.action_names.clear();
  for (int a = 0; a < 36; ++a) factored.action_names.push_back("a" + std::to_string(a));
  for (const auto& [actor, hidden, heads] :
       {std::tuple<EsActor, std::vector<int>, bool>{EsActor::kAgent, {}, false},
        {EsActor::kAgent, {5}, false},
        {EsActor::kTargets, {}, false},
        {EsActor::kTargets, {5}, false},
        {EsActor::kAgent, {}, true},
        {EsActor::kTargets, {}, true},
        {EsActor::kTargets, {5}, true}}) {
    EsConfig c = small();
    c.hidden = hidden;
    c.actor = actor;
    c.init_scale = 1.0;
    const EnvSpec& spec = heads ? factored : actor == EsActor::kTargets ? targeted : b.spec;
    Es l(c, test::layout(spec, self, n, first, k, copies, 11));
    Rng r(5);
    std::vector<float> obs(static_cast<std::size_t>(n * b.spec.obs_dim()));
    auto draw = [&] {
      for (auto& v : obs) v = static_cast<float>(3.0 * r.normal() + 1.0);
    };
    auto input = [&](int cs) {
      PolicyInput in = test::one_copy_input(spec, obs, n, 0, k, first);
      in.copies = cs;
      in.global.assign(static_cast<std::size_t>(cs), in.global[0]);
      in.episode_step.assign(static_cast<std::size_t>(cs), 0);
      return in;
    };
    std::vector<int> a;
    for (int it = 0; it < 2; ++it) {  // θ and the input moments move
      l.set_training(true);
      StepFeedback fb;
      for (int s = 0; s < 4; ++s) {
        draw();
        l.act(input(copies), a);
      }
      fb.reward = {1.f, 0.f, 0.5f, 2.f};
      fb.done = {1, 1};
      fb.truncated = {1, 1};
      fb.terminal.resize(2);
      l.record(fb);
      draw();
      l.update(input(copies));
    }
    l.set_training(false);
    for (int t = 0; t < 200; ++t) {
      draw();
      const auto in = input(1);
      l.act(in, a);
      ASSERT_EQ(a.size(), static_cast<std::size_t>(k));
      for (int kk = 0; kk < k; ++kk) {
        const auto lg = l.logits(in.global[0], kk);
        EXPECT_EQ(a[static_cast<std::size_t>(kk)],
                  std::max_element(lg.begin(), lg.end()) - lg.begin())
            << static_cast<int>(actor) << ", hidden " << hidden.size() << ", heads " << heads
            << ", input " << t << ", agent " << first + kk;
      }
    }
    if (heads) {  // the flat logits are the sums of the heads' logits
      const auto lg = l.logits(input(1).global[0], 0);
      ASSERT_EQ(lg.size(), 36u);
      EXPECT_NEAR(lg[7] + lg[0], lg[1] + lg[6], 1e-4);  // (1,1)+(0,0) = (0,1)+(1,0)
    }
    if (actor != EsActor::kTargets && !heads) continue;
    // The exported per-target (or factored) policy, one rank holding every agent, acts as the
    // learner.
    Es whole(c, test::layout(spec, self, n, 0, n, copies, 13));
    const auto dir = test::temp_dir("es-export-targets");
    export_learners("es", {&whole}, dir + "/policy.pt", R"({"format": "marlsched-policy"})", false);
    test::expect_export_matches(dir + "/policy.pt", spec, n, [&](const GlobalObs& g, int a) {
      const auto lg = whole.logits(g, a);
      return static_cast<int>(std::max_element(lg.begin(), lg.end()) - lg.begin());
    });
    // Its θ does not depend on the agent count: (own observation 2, target row 4, bias) x 2 modes
    // (per head).
    if (hidden.empty() && actor == EsActor::kTargets) {
      EXPECT_EQ(whole.parameter_count(), (2 + 4 + 1) * 2 * (heads ? 2 : 1));
    }
    const auto path = dir + "/model.pt";
    whole.save(path);
    EsConfig other = c;
    other.actor = EsActor::kAgent;
    Es agent_input(other, test::layout(b.spec, self, n, 0, n, copies, 13));
    EXPECT_THROW(agent_input.load(path), ConfigError);
  }
}

namespace {
/// A baseline that answers action `pick(agent)` for every agent of every copy, and counts its
/// calls.
struct FixedPolicy final : Policy {
  std::function<int(int)> pick;
  int calls = 0;
  std::string name() const override { return "fixed"; }
  void act(const PolicyInput& in, std::vector<int>& actions) override {
    ++calls;
    actions.resize(static_cast<std::size_t>(in.copies * in.local_agents));
    for (int c = 0; c < in.copies; ++c)
      for (int k = 0; k < in.local_agents; ++k)
        actions[static_cast<std::size_t>(c * in.local_agents + k)] = pick(in.first_agent + k);
  }
};
}  // namespace

// --es-base: θ = 0 acts exactly as the baseline (flat and factored action spaces); ES learns
// where to overrule a baseline that is wrong; the model records the baseline, a run with another
// refuses it, and the policy cannot be exported without its baseline.
TEST(Es, ABaseIsFollowedAtZeroAndOverruledWhereItIsWrong) {
  dist::Comm self(MPI_COMM_SELF, false);
  auto maker = [](std::function<int(int)> pick) {
    return [pick](const std::string&, std::uint64_t) {
      auto p = std::make_unique<FixedPolicy>();
      p->pick = pick;
      return std::unique_ptr<Policy>(std::move(p));
    };
  };
  {  // factored: 2 heads of 6, 4 agents; the baseline's flat action decodes head by head
    EnvSpec spec = test::targeted_bandit_spec(4);
    spec.action_heads = {6, 6};
    spec.action_names.clear();
    for (int a = 0; a < 36; ++a) spec.action_names.push_back("a" + std::to_string(a));
    EsConfig c = small();
    c.init_scale = 0.0;
    c.base = "fixed";
    for (const EsActor actor : {EsActor::kAgent, EsActor::kTargets}) {
      c.actor = actor;
      Es l(c,
           test::layout(spec, self, 4, 0, 4, 2, 3, maker([](int agent) { return 7 * agent + 2; })));
      std::vector<float> obs(8, 0.5f);
      std::vector<int> a;
      l.act(test::one_copy_input(spec, obs, 4, 0, 4, 0), a);
      EXPECT_EQ(a, (std::vector<int>{2, 9, 16, 23})) << static_cast<int>(actor);
    }
  }
  // The bandit's perturbed logits move by about σ: a margin below it lets them overrule.
  Bandit b;
  EsConfig c = small();
  c.base = "fixed";
  c.base_margin = 0.1;
  auto always0 = maker([](int) { return 0; });
  Es l(c, test::layout(b.spec, self, 1, 0, 1, 8, 7, always0));
  EXPECT_EQ(greedy(l, b, 1.f), 0);  // the baseline's action before any step
  int t = 0;
  train_es(l, b, 8, 80, t);
  EXPECT_EQ(greedy(l, b, 1.f), 1);
  EXPECT_EQ(greedy(l, b, -1.f), 2);
  const auto dir = test::temp_dir("es-base");
  l.save(dir + "/m.pt");
  Es same(c, test::layout(b.spec, self, 1, 0, 1, 8, 7, always0));
  same.load(dir + "/m.pt");
  EXPECT_EQ(same.shared_parameter_digest(), l.shared_parameter_digest());
  EsConfig none = small(), wider = c;
  wider.base_margin = 1.0;
  for (const EsConfig& other : {none, wider}) {
    Es o(other, test::layout(b.spec, self, 1, 0, 1, 8, 7, always0));
    EXPECT_THROW(o.load(dir + "/m.pt"), ConfigError) << other.base << " " << other.base_margin;
  }
  Es plain(none, test::layout(b.spec, self, 1, 0, 1, 8, 7));
  plain.save(dir + "/plain.pt");
  EXPECT_THROW(same.load(dir + "/plain.pt"), ConfigError);
  EXPECT_THROW(export_learners("es", {&l}, dir + "/policy.pt", "{}", false), ConfigError);
  EsConfig both = c;
  both.imitate = "fixed";
  both.imitate_iterations = 1;
  EXPECT_THROW(both.validate(), ConfigError);
  both = c;
  both.base_margin = 0.0;
  EXPECT_THROW(both.validate(), ConfigError);
}
