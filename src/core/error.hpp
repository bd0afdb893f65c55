#pragma once
/// \file error.hpp
/// One error hierarchy for the whole framework. The launcher (launch/cli/cli.cpp) runs a command in
/// two phases. In phase 1 (configuration, input files, checkpoints; no collectives yet) every
/// rank catches what it throws, the ranks agree with one allreduce on the lowest rank that
/// failed, that rank alone prints its message (naming its rank when it is not 0) and every rank
/// exits with code 2. In phase 2 (the run itself, inside
/// collectives) the rank that throws prints its rank and message and aborts the job: exit 2 for
/// a ConfigError or InputError, 1 otherwise. launch/cli/main.cpp catches what escapes both (exit
/// 1).

#include <sstream>
#include <stdexcept>
#include <string>

namespace marlsched {

/// Base of every error the framework throws on purpose. `where()` is "file:line".
class Error : public std::runtime_error {
 public:
  Error(const std::string& what, std::string where = {})
      : std::runtime_error(what), where_(std::move(where)) {}
  const std::string& where() const noexcept { return where_; }

 private:
  std::string where_;
};

/// A configuration or command-line value is invalid. Such errors are deterministic: every rank
/// sees the same config, so only rank 0 needs to report them.
class ConfigError : public Error {
 public:
  using Error::Error;
};

/// An input file (trace, workload, checkpoint) is missing or malformed.
class InputError : public Error {
 public:
  using Error::Error;
};

/// An MPI call returned an error code.
class MpiError : public Error {
 public:
  using Error::Error;
};

namespace detail {
inline std::string where(const char* file, int line) {
  std::ostringstream os;
  const std::string f(file);
  const auto pos = f.find_last_of('/');
  os << (pos == std::string::npos ? f : f.substr(pos + 1)) << ':' << line;
  return os.str();
}
}  // namespace detail

}  // namespace marlsched

/// Throws `marlsched::Error` (or the given subclass) with a streamed message and the call site.
#define MARLSCHED_THROW(Kind, msg)                                                   \
  do {                                                                               \
    std::ostringstream marlsched_os_;                                                \
    marlsched_os_ << msg;                                                            \
    throw Kind(marlsched_os_.str(), ::marlsched::detail::where(__FILE__, __LINE__)); \
  } while (0)

/// Checks an internal invariant; throws `marlsched::Error` naming the condition.
#define MARLSCHED_CHECK(cond, msg)                                                        \
  do {                                                                                    \
    if (!(cond)) MARLSCHED_THROW(::marlsched::Error, "check failed: " #cond ": " << msg); \
  } while (0)

/// Validates a configuration value; throws `marlsched::ConfigError`.
#define MARLSCHED_REQUIRE(cond, msg)                             \
  do {                                                           \
    if (!(cond)) MARLSCHED_THROW(::marlsched::ConfigError, msg); \
  } while (0)

/// Validates input data (a file, a state); throws `marlsched::InputError`.
#define MARLSCHED_REQUIRE_INPUT(cond, msg)                      \
  do {                                                          \
    if (!(cond)) MARLSCHED_THROW(::marlsched::InputError, msg); \
  } while (0)
