#include "envs/registry.hpp"

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

namespace {
std::vector<EnvEntry>& table() {
  static std::vector<EnvEntry> t = {geodc::entry(), aset::entry(), lstcb::entry(), coop::entry()};
  return t;
}
}  // namespace

const std::vector<EnvEntry>& env_registry() {
  return table();
}

void register_env(EnvEntry entry) {
  for (const auto& e : table())
    MARLSCHED_REQUIRE(e.name != entry.name, "an env named '" << entry.name << "' is registered");
  MARLSCHED_REQUIRE(
      entry.make_config && entry.make_factory && entry.baseline_names && entry.make_baseline,
      "env '" << entry.name << "': a row needs every field");
  table().push_back(std::move(entry));
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
