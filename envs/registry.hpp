#pragma once
/// \file registry.hpp
/// The table of environments (an explicit table: static self-registration can be dropped by the
/// linker). An env is a folder under envs/: its config, spec and shards, and entry.cpp with its
/// EnvFactory and the row it contributes (`<env>::entry()`), listed in registry.cpp's table;
/// its heuristic baselines (baselines.cpp, named in the row); plus its sources in
/// envs/CMakeLists.txt.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/env.hpp"
#include "core/policy.hpp"

namespace marlsched {

/// What `marlsched gen-data` asks of an env that generates input files (synthetic traces,
/// profiles): its options (gen-data's flags, unique across envs) and the writing.
class DataGenerator {
 public:
  virtual ~DataGenerator() = default;
  virtual void bind(OptionBinder& binder) = 0;
  /// Throws ConfigError naming a bad option (before any env writes anything).
  virtual void validate() const {}
  /// Writes the files; returns one line per set of files written, for the command to print.
  virtual std::vector<std::string> write() const = 0;
};

struct EnvEntry {
  std::string name;
  std::string description;
  std::function<std::unique_ptr<EnvConfig>()> make_config;
  /// Builds the factory for a validated config and the run's agent count (loads traces).
  std::function<std::unique_ptr<EnvFactory>(const EnvConfig&, int num_agents)> make_factory;
  /// The env's heuristic baselines (envs/baselines.hpp), in table order, and their maker: null
  /// for a name it does not know; a name may carry a parameter ("wait-awhile:0.1").
  std::function<const std::vector<std::string>&()> baseline_names;
  std::function<std::unique_ptr<Policy>(const std::string& name, const EnvSpec& spec,
                                        std::uint64_t seed)>
      make_baseline;
  /// The name (for make_baseline) of the env's feasible hindsight schedule: a policy that reads
  /// what no real policy may (future arrivals) and plays a schedule the env accepts, the lower
  /// end of the bracket on the optimum that evaluations print beside the bound
  /// (EnvFactory::episode_bound). Empty: the env has none.
  std::string hindsight_schedule = {};
  /// The env's generated input files (`marlsched gen-data`); null: it has none.
  std::function<std::unique_ptr<DataGenerator>()> make_generator = {};
};

const std::vector<EnvEntry>& env_registry();
/// Adds a row after the built-in ones: an env defined outside envs/ (a user's program linking
/// the library, a test). Call it before options are bound (the row's config binds its own).
/// Throws ConfigError for a name already taken or a row with a field missing.
void register_env(EnvEntry entry);
/// Throws ConfigError listing the known names when `name` is unknown.
const EnvEntry& find_env(const std::string& name);

}  // namespace marlsched
