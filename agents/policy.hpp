#pragma once
/// \file policy.hpp
/// What the trainer and the evaluator ask of any decision maker (a learned agent or a
/// heuristic): actions for this rank's agents in every environment copy, from the global
/// observations that the framework allgathered.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/env.hpp"

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
};

class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::string name() const = 0;
  /// Fills `actions[copy * local_agents + k]`.
  virtual void act(const PolicyInput& in, std::vector<int>& actions) = 0;
};

}  // namespace marlsched
