#include "envs/baselines.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "envs/registry.hpp"

namespace marlsched {

const std::vector<std::string>& heuristic_names(const std::string& env) {
  static const std::vector<std::string> all = [] {
    std::vector<std::string> v;
    for (const auto& e : env_registry())
      for (const auto& n : e.baseline_names())
        if (std::find(v.begin(), v.end(), n) == v.end()) v.push_back(n);
    return v;
  }();
  if (env.empty()) return all;
  for (const auto& e : env_registry())
    if (e.name == env) return e.baseline_names();
  static const std::vector<std::string> none;
  return none;
}

BaselineMaker baseline_maker(const EnvSpec& spec) {
  return [&spec](const std::string& name, std::uint64_t seed) {
    return make_heuristic(name, spec, seed);
  };
}

std::unique_ptr<Policy> make_heuristic(const std::string& name, const EnvSpec& spec,
                                       std::uint64_t seed) {
  // Each set's maker reads its names, parameters included ("wait-awhile:0.1"), and returns null
  // for one it does not know.
  for (const auto& e : env_registry())
    if (e.name == spec.name)
      if (auto p = e.make_baseline(name, spec, derive_seed(seed, {0xBA5E}))) return p;
  const auto& names = heuristic_names(spec.name);
  std::string known;
  for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
  MARLSCHED_THROW(ConfigError, "unknown baseline '" << name << "' for env " << spec.name
                                                    << " (known: " << known << ")");
}

std::unique_ptr<Policy> make_hindsight_schedule(const EnvSpec& spec) {
  for (const auto& e : env_registry())
    if (e.name == spec.name && !e.hindsight_schedule.empty())
      return e.make_baseline(e.hindsight_schedule, spec, 0);
  return nullptr;
}

}  // namespace marlsched
