#pragma once
/// \file team_reward.hpp
/// The reward a learner trains on: each agent's own reward mixed with its team's. Online (the
/// trainer's rollout) and offline (a dataset's rows, io/dataset.hpp) use this one definition.

#include <cstddef>

#include "core/env.hpp"

namespace marlsched {

/// The reward a learner gets for agent `a` of one env copy: (1-β)·own + β·team, where team is
/// the mean reward over all `n` agents or (`targets_scope`) over a's targets in `spec` (itself
/// and its neighbours). `reward_of(j)` is agent j's own reward; `total` their sum over agents.
template <class RewardOf>
double learner_reward(const EnvSpec& spec, int n, int a, double beta, bool targets_scope,
                      double total, const RewardOf& reward_of) {
  double team = total / n;
  if (targets_scope) {
    const auto& tg = spec.targets[static_cast<std::size_t>(a)];
    team = 0;
    for (int j : tg) team += reward_of(j);
    team /= static_cast<double>(tg.size());
  }
  return (1.0 - beta) * reward_of(a) + beta * team;
}

}  // namespace marlsched
