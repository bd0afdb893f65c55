#pragma once
/// \file registry.hpp
/// The table of agents: learners (trained by `marlsched train`) and heuristic baselines (see
/// agents/baselines/heuristics.hpp). Adding a learner = a folder under agents/ plus one row here.

#include <memory>
#include <string>
#include <vector>

#include "agents/mappo/mappo.hpp"
#include "agents/policy.hpp"

namespace marlsched {

/// Options of every learner (each binds its own group of flags).
struct LearnerConfigs {
  MappoConfig mappo;
  void bind(OptionBinder& b) { mappo.bind(b); }
  void validate(const std::string& algo) const;
};

const std::vector<std::string>& learner_names();

/// Builds the named learner for this rank's layout; throws ConfigError for an unknown name.
std::unique_ptr<Mappo> make_learner(const std::string& algo, const LearnerConfigs& cfg,
                                    const EnvSpec& spec, const dist::Comm& comm, int num_agents,
                                    int first_agent, int local_agents, int copies,
                                    std::uint64_t seed);

}  // namespace marlsched
