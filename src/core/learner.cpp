#include "core/learner.hpp"

#include <cmath>

#include "core/error.hpp"

namespace marlsched {

void require_copy_groups(const std::string& name, int group, int copies) {
  MARLSCHED_REQUIRE(copies >= group && copies % group == 0,
                    name << " trains on groups of " << group
                         << " env copies that share episodes: --envs-per-rank must be a "
                            "multiple of "
                         << group << ", got " << copies);
}

void Learner::init_from(const std::string& path) {
  MARLSCHED_THROW(ConfigError, "--init-from '" << path << "': " << name()
                                               << " cannot start from a trained model");
}

double Learner::stat(const UpdateStats& st, const std::string& column) const {
  const auto& names = stat_names();
  for (std::size_t i = 0; i < names.size() && i < st.values.size(); ++i)
    if (names[i].column == column) return st.values[i];
  return std::nan("");
}

}  // namespace marlsched
