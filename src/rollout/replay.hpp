#pragma once
/// \file replay.hpp
/// The replay ring of the off-policy learners (DQN, tsdqn's heads, MASAC/MADDPG): a fixed number
/// of entries, each an observation row, the actions taken, the rewards, whether the transition
/// ended in a terminal state, and the next observation row; the oldest entry is overwritten once
/// the ring is full. Widths are per entry: DQN stores one agent's input, action and reward;
/// MASAC the global state, the joint action and this rank's agents' rewards. Plain std: the
/// learners sample from it with their own RNG and save it in their model files.

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace marlsched::rollout {

struct Replay {
  int cap = 0;        ///< entries
  int obs_dim = 0;    ///< floats per observation row
  int n_actions = 0;  ///< actions per entry
  int n_rewards = 0;  ///< rewards per entry
  int size = 0;       ///< entries held (at most cap)
  int head = 0;       ///< where the next entry goes
  std::vector<float> obs, next_obs, rewards,
      term;                           ///< [cap][obs_dim], ..., [cap][n_rewards], [cap]
  std::vector<std::int64_t> actions;  ///< [cap][n_actions]

  void init(int capacity, int obs_width, int actions_per_entry = 1, int rewards_per_entry = 1) {
    cap = capacity;
    obs_dim = obs_width;
    n_actions = actions_per_entry;
    n_rewards = rewards_per_entry;
    size = head = 0;
    const auto c = static_cast<std::size_t>(cap);
    obs.assign(c * static_cast<std::size_t>(obs_dim), 0.f);
    next_obs.assign(obs.size(), 0.f);
    rewards.assign(c * static_cast<std::size_t>(n_rewards), 0.f);
    term.assign(c, 0.f);
    actions.assign(c * static_cast<std::size_t>(n_actions), 0);
  }

  /// Appends one entry (overwriting the oldest when full): `a` holds n_actions actions, `r`
  /// n_rewards rewards.
  void push(const float* o, const std::int64_t* a, const float* r, bool terminated,
            const float* o2) {
    const auto h = put_obs(o, terminated, o2);
    std::copy(a, a + n_actions, actions.begin() + static_cast<std::ptrdiff_t>(h * n_actions));
    std::copy(r, r + n_rewards, rewards.begin() + static_cast<std::ptrdiff_t>(h * n_rewards));
    advance();
  }

  /// Appends one entry of a ring made with one action and one reward per entry (DQN's).
  void push(const float* o, std::int64_t a, float r, bool terminated, const float* o2) {
    assert(n_actions == 1 && n_rewards == 1);
    const auto h = put_obs(o, terminated, o2);
    actions[h] = a;
    rewards[h] = r;
    advance();
  }

 private:
  std::size_t put_obs(const float* o, bool terminated, const float* o2) {
    const auto h = static_cast<std::size_t>(head);
    std::copy(o, o + obs_dim, obs.begin() + static_cast<std::ptrdiff_t>(h * obs_dim));
    std::copy(o2, o2 + obs_dim, next_obs.begin() + static_cast<std::ptrdiff_t>(h * obs_dim));
    term[h] = terminated ? 1.f : 0.f;
    return h;
  }
  void advance() {
    head = (head + 1) % cap;
    size = std::min(size + 1, cap);
  }
};

}  // namespace marlsched::rollout
