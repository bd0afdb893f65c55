#pragma once
/// \file on_policy.hpp
/// The on-policy learners' rollout storage (MAPPO, IPPO): step-major, as RolloutSequences reads
/// it. Each step appends `rows` = copies × local agents entries (row = copy · agents + agent) of
/// the actor's and the critic's inputs, the action, its log-probability, the value estimate and
/// the reward, and per copy whether its episode ended, with V(terminal state) where it was
/// truncated. Plain std: the learner copies the arrays to its device for the update.

#include <cstdint>
#include <vector>

#include "rollout/gae.hpp"

namespace marlsched::rollout {

struct OnPolicyBuffer {
  std::vector<float> x, c;         ///< actor / critic inputs, [step][row][width]
  std::vector<std::int64_t> act;   ///< [step][row]
  std::vector<float> logp, value;  ///< [step][row]
  std::vector<float> reward;       ///< [step][row]
  std::vector<float> trunc_value;  ///< [step][row]: V(terminal) of truncated episodes, else 0
  std::vector<std::uint8_t> done;  ///< [step][copy]
  int steps = 0;

  /// Appends one step; `done` holds one flag per copy.
  void append(const std::vector<float>& xs, const std::vector<float>& cs,
              const std::vector<std::int64_t>& a, const std::vector<float>& lp,
              const std::vector<float>& v, const std::vector<float>& r,
              const std::vector<char>& done_per_copy, const std::vector<float>& tv) {
    x.insert(x.end(), xs.begin(), xs.end());
    c.insert(c.end(), cs.begin(), cs.end());
    act.insert(act.end(), a.begin(), a.end());
    logp.insert(logp.end(), lp.begin(), lp.end());
    value.insert(value.end(), v.begin(), v.end());
    reward.insert(reward.end(), r.begin(), r.end());
    for (char d : done_per_copy) done.push_back(d ? 1 : 0);
    trunc_value.insert(trunc_value.end(), tv.begin(), tv.end());
    steps += 1;
  }

  /// The stored rewards, values and episode ends as GAE reads them.
  RolloutSequences sequences(int rows, int agents_per_copy) const {
    return {&reward, &value, &trunc_value, &done, steps, rows, agents_per_copy};
  }

  /// Empties it for the next rollout (keeping the capacity).
  void clear() {
    x.clear();
    c.clear();
    act.clear();
    logp.clear();
    value.clear();
    reward.clear();
    trunc_value.clear();
    done.clear();
    steps = 0;
  }
};

}  // namespace marlsched::rollout
