#pragma once
/// \file registry.hpp
/// The table of environments (an explicit table: static self-registration can be dropped by the
/// linker). Adding an environment takes today: a folder under envs/ (config, spec, shards), an
/// EnvFactory class and one row in registry.cpp, its heuristic baselines in agents/baselines
/// with a row in their table (heuristics.cpp), and its sources in envs/CMakeLists.txt. Issue 24
/// brings this down to one folder and one row.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/env.hpp"

namespace marlsched {

struct EnvEntry {
  std::string name;
  std::string description;
  std::function<std::unique_ptr<EnvConfig>()> make_config;
  /// Builds the factory for a validated config and the run's agent count (loads traces).
  std::function<std::unique_ptr<EnvFactory>(const EnvConfig&, int num_agents)> make_factory;
};

const std::vector<EnvEntry>& env_registry();
/// Throws ConfigError listing the known names when `name` is unknown.
const EnvEntry& find_env(const std::string& name);

}  // namespace marlsched
