/// \file fuzz_config.cpp
/// libFuzzer target: the TOML config reader (launch/cli/config_file.hpp: CLI11's TOML parser plus
/// the unknown-key and bad-value checks) with every registered env's options bound, followed by
/// each env's validation, as `marlsched train --config FILE` does before loading any data.
/// (The run and learner options live in torch translation units and are not bound here.)

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "config_file.hpp"
#include "envs/registry.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace marlsched;
  const std::string path = fuzz::scratch(data, size, ".toml");
  CLI::App app;
  cli::Binder binder(&app);
  std::vector<std::unique_ptr<EnvConfig>> configs;
  for (const auto& e : env_registry()) {
    configs.push_back(e.make_config());
    binder.group(e.name);
    configs.back()->bind(binder);
  }
  fuzz::expect_clean([&] {
    cli::apply_config_file(&app, binder, path);
    for (const auto& c : configs) {
      const int n = c->defined_agents() > 0 ? c->defined_agents() : 4;
      c->validate(n);
    }
    if (binder.to_toml().empty()) __builtin_trap();
  });
  return 0;
}
