#include "core/env.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace marlsched {

int EnvSpec::obs_index(const std::string& field) const {
  for (std::size_t i = 0; i < obs_fields.size(); ++i)
    if (obs_fields[i] == field) return static_cast<int>(i);
  MARLSCHED_THROW(Error, "env '" << name << "' has no observation field '" << field << "'");
}

bool EnvSpec::component_is_mean(std::size_t i) const {
  return std::find(mean_components.begin(), mean_components.end(), reward_components.at(i)) !=
         mean_components.end();
}

std::string EnvSpec::component_label(std::size_t i) const {
  return (component_is_mean(i) ? "mean_" : "") + reward_components.at(i);
}

}  // namespace marlsched
