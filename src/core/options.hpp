#pragma once
/// \file options.hpp
/// Config structs describe their own options through this interface, so that `envs/` and
/// `agents/` never depend on CLI11: `launch/` implements it with CLI11 (flags and the TOML config
/// file), tests can implement it with anything. Flags are long names without the leading "--".

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace marlsched {

class OptionBinder {
 public:
  virtual ~OptionBinder() = default;
  /// Starts a named group (a section in --help and in the printed config).
  virtual void group(const std::string& name) = 0;
  virtual void add(const std::string& flag, int& value, const std::string& help) = 0;
  virtual void add(const std::string& flag, std::int64_t& value, const std::string& help) = 0;
  virtual void add(const std::string& flag, std::uint64_t& value, const std::string& help) = 0;
  virtual void add(const std::string& flag, double& value, const std::string& help) = 0;
  virtual void add(const std::string& flag, bool& value, const std::string& help) = 0;
  virtual void add(const std::string& flag, std::string& value, const std::string& help) = 0;
  virtual void add(const std::string& flag, std::vector<int>& value, const std::string& help) = 0;
  virtual void add(const std::string& flag, std::vector<double>& value,
                   const std::string& help) = 0;
  virtual void add(const std::string& flag, std::vector<std::string>& value,
                   const std::string& help) = 0;
};

/// Throws ConfigError "--FLAG must be positive, got V" unless `v` is finite and > 0 (for the
/// validate() of config structs).
inline void require_positive(double v, const char* flag) {
  MARLSCHED_REQUIRE(v > 0 && std::isfinite(v), "--" << flag << " must be positive, got " << v);
}

/// Throws ConfigError unless `v` is a learning rate in (0, 1]: above 1 an Adam or SGD step
/// overshoots any parameter scale these networks have, and 1e308 only surfaced as a NaN loss
/// after the run had started.
inline void require_learning_rate(double v, const char* flag) {
  MARLSCHED_REQUIRE(v > 0 && v <= 1,
                    "--" << flag << " must be a learning rate in (0, 1], got " << v);
}

}  // namespace marlsched
