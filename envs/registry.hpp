#pragma once
/// \file registry.hpp
/// The table of environments (an explicit table: static self-registration can be dropped by the
/// linker). An env is a folder under envs/: its config, spec and shards, and entry.cpp with its
/// EnvFactory and the row it contributes (`<env>::entry()`), listed in registry.cpp's table;
/// plus its sources in envs/CMakeLists.txt and, today still, its heuristic baselines in
/// agents/baselines (issue 24 moves them into the env's folder).

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
