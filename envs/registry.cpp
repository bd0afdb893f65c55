#include "registry.hpp"

#include "core/error.hpp"

namespace marlsched {

// Each env's row is its folder's entry() (envs/<env>/entry.cpp); table order is the order of
// --help groups and config keys.
namespace geodc {
EnvEntry entry();
}
namespace aset {
EnvEntry entry();
}
namespace lstcb {
EnvEntry entry();
}
namespace coop {
EnvEntry entry();
}

const std::vector<EnvEntry>& env_registry() {
  static const std::vector<EnvEntry> table = {geodc::entry(), aset::entry(), lstcb::entry(),
                                              coop::entry()};
  return table;
}

const EnvEntry& find_env(const std::string& name) {
  std::string known;
  for (const auto& e : env_registry()) {
    if (e.name == name) return e;
    known += (known.empty() ? "" : ", ") + e.name;
  }
  MARLSCHED_THROW(ConfigError, "unknown env '" << name << "' (known: " << known << ")");
}

}  // namespace marlsched
