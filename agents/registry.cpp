#include "agents/registry.hpp"

#include "core/error.hpp"

namespace marlsched {

const std::vector<std::string>& learner_names() {
  static const std::vector<std::string> names = {"mappo"};
  return names;
}

void LearnerConfigs::validate(const std::string& algo) const {
  if (algo == "mappo") return mappo.validate();
  std::string known;
  for (const auto& n : learner_names()) known += (known.empty() ? "" : ", ") + n;
  MARLSCHED_THROW(ConfigError, "unknown algorithm '" << algo << "' (known: " << known << ")");
}

std::unique_ptr<Mappo> make_learner(const std::string& algo, const LearnerConfigs& cfg,
                                    const EnvSpec& spec, const dist::Comm& comm, int num_agents,
                                    int first_agent, int local_agents, int copies,
                                    std::uint64_t seed) {
  cfg.validate(algo);
  return std::make_unique<Mappo>(cfg.mappo, spec, comm, num_agents, first_agent, local_agents,
                                 copies, seed);
}

}  // namespace marlsched
