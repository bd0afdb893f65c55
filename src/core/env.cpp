#include "core/env.hpp"

#include "core/error.hpp"

namespace marlsched {

int EnvSpec::obs_index(const std::string& field) const {
  for (std::size_t i = 0; i < obs_fields.size(); ++i)
    if (obs_fields[i] == field) return static_cast<int>(i);
  MARLSCHED_THROW(Error, "env '" << name << "' has no observation field '" << field << "'");
}

}  // namespace marlsched
