#pragma once
/// A contextual bandit that the off-policy learners' unit tests (DQN, MASAC, MADDPG) learn: one
/// agent, observation (x, y); x = +1 pays action 1, x = -1 pays action 2 (reward 1, else 0).
/// Episodes of 8 steps end by truncation, so bootstrapping from terminal observations runs too.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "agents/exported/torchscript_policy.hpp"
#include "core/learner.hpp"
#include "core/rng.hpp"
#include "test_util.hpp"

namespace marlsched::test {

/// Its spec: two observation fields (one public), three actions, episodes of 8 steps (the MAPPO
/// tests use it too).
inline EnvSpec bandit_spec() {
  EnvSpec s;
  s.name = "bandit";
  s.obs_fields = {"x", "y"};
  s.num_public = 1;
  s.action_names = {"a0", "a1", "a2"};
  s.reward_components = {"r"};
  s.episode_length = 8;
  return s;
}

/// The same with a targeted action space for n agents (the per-target actor's tests): each
/// agent's targets are itself and its ring neighbours +1 and -1, two modes (6 actions), and one
/// static pair feature equal for both neighbours.
inline EnvSpec targeted_bandit_spec(int n) {
  EnvSpec s = bandit_spec();
  s.action_names = {"m0-self", "m0-next", "m0-prev", "m1-self", "m1-next", "m1-prev"};
  s.target_feature_names = {"dist"};
  for (int i = 0; i < n; ++i) {
    s.targets.push_back({i, (i + 1) % n, (i + n - 1) % n});
    s.target_features.push_back({0.f, 1.f, 1.f});
  }
  return s;
}

struct Bandit {
  std::vector<float> obs{1.f, 0.f};
  EnvSpec spec = bandit_spec();
  PolicyInput input() { return one_copy_input(spec, obs); }
  int best() const { return obs[0] > 0 ? 1 : 2; }
};

/// Trains `l` for `iterations` of 32 steps; `t` counts steps across calls (it drives the
/// contexts, so two learners fed the same `t` see the same ones).
inline void train_bandit(Learner& l, Bandit& b, int iterations, int& t) {
  std::vector<int> a;
  StepFeedback fb;
  fb.reward = {0.f};
  fb.done = {0};
  fb.truncated = {0};
  std::vector<float> terminal(2);
  for (int it = 0; it < iterations; ++it) {
    l.set_training(true);
    for (int s = 0; s < 32; ++s, ++t) {
      l.act(b.input(), a);
      fb.reward[0] = a[0] == b.best() ? 1.f : 0.f;
      b.obs[0] = (t * 7 + 3) % 5 < 2 ? 1.f : -1.f;  // the next context
      fb.done[0] = fb.truncated[0] = (t % 8 == 7) ? 1 : 0;
      terminal = b.obs;
      fb.terminal = {GlobalObs{terminal.data(), 1, 2}};
      l.record(fb);
    }
    const auto st = l.update(b.input());
    ASSERT_EQ(st.values.size(), l.stat_names().size());
  }
}

/// Loads the exported policy at `path` (greedy) for `n` agents of `spec` and checks its action
/// for every agent against `want(global observations, agent)` on 20 random observations (fields
/// in [-2, 2]). Returns the number of observations on which the agents' wanted actions are not
/// all the same (to check that agents' networks differ).
template <class Want>
int expect_export_matches(const std::string& path, const EnvSpec& spec, int n, Want want) {
  auto p = load_exported_policy(path, spec, n, true);
  std::vector<float> obs(static_cast<std::size_t>(n * spec.obs_dim()));
  Rng rng(3);
  int differ = 0;
  for (int trial = 0; trial < 20; ++trial) {
    for (auto& v : obs) v = static_cast<float>(rng.uniform(-2, 2));
    const PolicyInput in = one_copy_input(spec, obs, n);
    std::vector<int> got;
    p->act(in, got);
    int first = -1;
    bool same = true;
    for (int a = 0; a < n; ++a) {
      const int w = want(in.global[0], a);
      EXPECT_EQ(got[static_cast<std::size_t>(a)], w) << "agent " << a << " trial " << trial;
      if (a == 0) first = w;
      same = same && w == first;
    }
    differ += same ? 0 : 1;
  }
  return differ;
}

}  // namespace marlsched::test
