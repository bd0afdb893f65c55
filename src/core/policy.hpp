#pragma once
/// \file policy.hpp
/// What the trainer and the evaluator ask of any decision maker (a learned agent or a
/// heuristic): actions for this rank's agents in every environment copy, from the global
/// observations that the framework allgathered.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/env.hpp"
#include "core/rng.hpp"

namespace marlsched {

/// Observations visible to a rank at one step.
struct PolicyInput {
  const EnvSpec* spec = nullptr;
  int copies = 0;
  int num_agents = 0;
  int first_agent = 0;  ///< agents [first_agent, first_agent + local_agents) live here
  int local_agents = 0;
  std::vector<GlobalObs> global;  ///< one per copy
  std::vector<int> episode_step;  ///< one per copy
  /// One per copy: the seed of the copy's current episode (the same at every rank count).
  std::vector<std::uint64_t> episode_seed;
  /// This rank's shards, [copy * local_agents + k], read only: for planners that decide from
  /// the env's state rather than its observations. Learned policies never read them.
  std::vector<const Shard*> shards;
  /// Every agent's shard, [copy * num_agents + agent], read only, for a planner that decides for
  /// every site at once (Policy::needs_every_agent: geodc's MPC baselines): where this rank holds
  /// every agent, its own shards; where the agents are spread over ranks and the world was asked
  /// for them (World::set_every_shard), the others are replicas restored from their ranks' states
  /// after every step. Empty otherwise.
  std::vector<const Shard*> every_shard;

  /// A uniform draw in [0, 1) for `agent` (a global index) in `copy` at the copy's current
  /// step, from `stream` (a policy that draws twice in a step uses two streams). It depends on
  /// the episode, the agent, the step and the stream only, not on the rank that hosts the agent:
  /// a policy that samples with it acts the same at every rank count, and two policies see the
  /// same draws in the same episode (common random numbers). Evaluation samples with it.
  double draw(int copy, int agent, std::uint64_t stream) const {
    const auto c = static_cast<std::size_t>(copy);
    const std::uint64_t seed = c < episode_seed.size() ? episode_seed[c] : 0;
    const int step = c < episode_step.size() ? episode_step[c] : 0;
    const std::uint64_t h = derive_seed(
        seed, {stream, static_cast<std::uint64_t>(agent), static_cast<std::uint64_t>(step)});
    return static_cast<double>(h >> 11) * 0x1.0p-53;
  }
  /// A uniform integer in [0, n) from draw().
  int draw_below(int copy, int agent, std::uint64_t stream, int n) const {
    return std::min(n - 1, static_cast<int>(draw(copy, agent, stream) * n));
  }
};

/// The draw() streams of the framework's policies: the sampled action (every sampling policy
/// uses this one, so that an exported policy samples as the learner it came from) and an
/// exploration coin (epsilon-greedy evaluation).
constexpr std::uint64_t kActionStream = 0xAC7, kExploreStream = 0xE95;

/// Index j of `n` probabilities (or exp(log-probabilities) with `log_probs`) where the running
/// sum first exceeds u in [0, 1): inverse-CDF sampling (the last index when rounding leaves the
/// sum below u).
inline int sample_index(const float* p, int n, double u, bool log_probs) {
  double acc = 0;
  for (int j = 0; j < n; ++j) {
    acc += log_probs ? std::exp(static_cast<double>(p[j])) : static_cast<double>(p[j]);
    if (u < acc) return j;
  }
  return n - 1;
}

/// What is known of the probability π(a | history) with which a policy chose an action, for
/// the log-probabilities a dataset records (marlsched collect): nothing (a policy that samples
/// from a law it does not expose), a point mass on the action act() returned (every rule that
/// decides without drawing, stateful ones included: given its history the action is certain),
/// or the uniform law over all actions.
enum class ActionLaw { kUnknown, kDeterministic, kUniform };

class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::string name() const = 0;
  /// Fills `actions[copy * local_agents + k]`.
  virtual void act(const PolicyInput& in, std::vector<int>& actions) = 0;
  /// How the actions of act() are drawn (see ActionLaw); unknown unless the policy says.
  virtual ActionLaw action_law() const { return ActionLaw::kUnknown; }
  /// Whether it decides from every agent's shard at once (PolicyInput::every_shard): a central
  /// planner. A world that runs one spread over ranks gathers every shard's state to every rank
  /// (World::set_every_shard); each rank plans the whole world and keeps its agents' actions.
  virtual bool needs_every_agent() const { return false; }
  /// A line an evaluation prints after this policy's episodes ("" for none): what it cost to
  /// decide, for a planner.
  virtual std::string note() const { return {}; }
};

/// Makes one of the env's baselines by name with a seed: what a learner that imitates a baseline
/// or acts as a residual over one is handed by the layer that assembles runs (launch/), so that
/// learners hold no env code. Throws ConfigError for a name the env lacks.
using BaselineMaker =
    std::function<std::unique_ptr<Policy>(const std::string& name, std::uint64_t seed)>;

}  // namespace marlsched
