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

StateWriter shard_state_writer(std::uint32_t magic, int agent,
                               std::initializer_list<const Rng*> rngs) {
  StateWriter w;
  w(magic, std::int32_t{agent}, write_states(rngs));
  return w;
}

StateReader shard_state_reader(const std::vector<std::byte>& state, const std::string& what,
                               std::uint32_t magic, int agent, std::initializer_list<Rng*> rngs) {
  StateReader r(state, what);
  std::uint32_t m = 0;
  std::int32_t a = 0;
  std::string text;
  r(m);
  if (m != magic) MARLSCHED_THROW(InputError, what << ": wrong format");
  r(a);
  if (a != agent)
    MARLSCHED_THROW(InputError, what << " belongs to agent " << a << ", not " << agent);
  r(text);
  if (!read_states(text, rngs)) MARLSCHED_THROW(InputError, what << ": bad RNG state");
  return r;
}

}  // namespace marlsched
