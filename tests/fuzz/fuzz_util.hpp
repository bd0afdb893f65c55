#pragma once
/// \file fuzz_util.hpp
/// Shared by the libFuzzer targets: the loaders under test read files, so each input is written
/// to a per-process scratch file first. A loader may reject an input only with marlsched's own
/// errors (ConfigError/InputError: one clear message); any other exception, a crash or a
/// sanitizer report is a finding.

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

#include "core/error.hpp"

namespace marlsched::fuzz {

/// Writes the input to a scratch file (same path for every input of this process).
inline std::string scratch(const std::uint8_t* data, std::size_t size, const char* suffix) {
  static const std::string base = "/tmp/marlsched-fuzz-" + std::to_string(::getpid());
  const std::string path = base + suffix;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

/// Runs `f`; marlsched's errors are the expected way to reject bad input.
template <class F>
void expect_clean(F&& f) {
  try {
    f();
  } catch (const marlsched::Error& e) {
    const std::string what = e.what();
    if (what.empty()) __builtin_trap();  // an error must say something
  }
}

}  // namespace marlsched::fuzz
