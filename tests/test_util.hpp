#pragma once
// Helpers shared by the tests.
#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "agents/policy.hpp"

namespace marlsched::test {

/// ../shared/data beside the checkout (MARLSCHED_SHARED_DATA), or "" when absent.
inline std::string shared_data() {
  const char* v = std::getenv("MARLSCHED_SHARED_DATA");
  if (v != nullptr && std::filesystem::exists(std::string(v) + "/carbon_intensity")) return v;
  return {};
}

/// A fresh temporary directory for one test.
inline std::string temp_dir(const std::string& name) {
  const auto p = std::filesystem::temp_directory_path() /
                 ("marlsched-test-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p.string();
}

/// The policy input of a run with one agent and one env copy whose observation is `obs`.
inline PolicyInput one_agent_input(const EnvSpec& spec, const std::vector<float>& obs,
                                   int episode_step) {
  PolicyInput in;
  in.spec = &spec;
  in.copies = 1;
  in.num_agents = 1;
  in.first_agent = 0;
  in.local_agents = 1;
  in.global = {GlobalObs{obs.data(), 1, static_cast<int>(obs.size())}};
  in.episode_step = {episode_step};
  return in;
}

}  // namespace marlsched::test
