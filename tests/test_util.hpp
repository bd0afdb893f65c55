#pragma once
// Helpers shared by the tests.
#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/learner.hpp"
#include "core/policy.hpp"
#include "dist/comm.hpp"

namespace marlsched::test {

/// ../shared/data beside the checkout (MARLSCHED_SHARED_DATA), or "" when absent.
inline std::string shared_data() {
  const char* v = std::getenv("MARLSCHED_SHARED_DATA");
  if (v != nullptr && std::filesystem::exists(std::string(v) + "/carbon_intensity")) return v;
  return {};
}

/// The message of the InputError that `f` throws, or "(no error)".
inline std::string input_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

/// A fresh temporary directory for one test.
inline std::string temp_dir(const std::string& name) {
  const auto p = std::filesystem::temp_directory_path() /
                 ("marlsched-test-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p.string();
}

/// A fresh temporary directory (temp_dir) that rank 0 names and creates, shared with every rank
/// of `comm`.
inline std::string shared_temp_dir(const dist::Comm& comm, const std::string& name) {
  std::string dir;
  if (comm.is_root()) dir = temp_dir(name);
  int len = static_cast<int>(dir.size());
  comm.bcast(&len, 1);
  dir.resize(static_cast<std::size_t>(len));
  comm.bcast(dir.data(), len);
  return dir;
}

/// The policy input of one env copy at `episode_step` whose global observation is `obs`:
/// `num_agents` rows of obs.size() / num_agents fields, for a rank that hosts `local_agents`
/// agents (0: all of them) from `first_agent` on.
inline PolicyInput one_copy_input(const EnvSpec& spec, const std::vector<float>& obs,
                                  int num_agents = 1, int episode_step = 0, int local_agents = 0,
                                  int first_agent = 0) {
  PolicyInput in;
  in.spec = &spec;
  in.copies = 1;
  in.num_agents = num_agents;
  in.first_agent = first_agent;
  in.local_agents = local_agents > 0 ? local_agents : num_agents;
  in.global = {GlobalObs{obs.data(), num_agents, static_cast<int>(obs.size()) / num_agents}};
  in.episode_step = {episode_step};
  return in;
}

/// The layout of a learner built directly in a test: `n` agents in all, `k` on this rank from
/// agent `first`, `copies` env copies, the env's `baselines` where the learner asks for one.
inline LearnerLayout layout(const EnvSpec& spec, const dist::Comm& comm, int n, int first, int k,
                            int copies, std::uint64_t seed, BaselineMaker baselines = {}) {
  LearnerLayout l;
  l.spec = &spec;
  l.comm = &comm;
  l.num_agents = n;
  l.first_agent = first;
  l.local_agents = k;
  l.copies = copies;
  l.seed = seed;
  l.baselines = std::move(baselines);
  return l;
}

}  // namespace marlsched::test
