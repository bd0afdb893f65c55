#pragma once
// Helpers shared by the tests.
#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <string>

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

}  // namespace marlsched::test
