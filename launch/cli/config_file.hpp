#pragma once
/// \file config_file.hpp
/// Config structs bound to CLI11 options (flags and the TOML config file, whose keys are the long
/// option names), the resolved configuration printed back as TOML, and the config-file reader
/// that rejects unknown keys with the nearest known one. No torch, no MPI: the config fuzzer
/// (tests/fuzz) builds it alone.

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "core/options.hpp"

namespace marlsched::cli {

/// TOML literals of option values (strings quoted and escaped, doubles always with a '.' or 'e').
std::string toml(const std::string& s);
std::string toml(double v);
std::string toml(int v);
std::string toml(std::int64_t v);
std::string toml(std::uint64_t v);
std::string toml(bool v);
/// A choice's name, quoted.
std::string toml(const Choice& c);
template <class T>
std::string toml(const std::vector<T>& v) {
  std::string o = "[";
  for (std::size_t i = 0; i < v.size(); ++i) o += (i ? ", " : "") + toml(v[i]);
  return o + "]";
}

/// "" when `s` is a decimal integer in [0, 2^63 - 1], else the message for option `flag`.
std::string seed_error(const std::string& flag, const std::string& s);
/// Whether `s` is valid UTF-8 (TOML files, and so a run's config.toml, are UTF-8).
bool valid_utf8(const std::string& s);
/// A validator that refuses text that is not UTF-8 for option `flag`.
CLI::Validator utf8_text(const std::string& flag);

/// Makes a CLI11 flag of each option a config struct declares on one (sub)command, prints the
/// resolved values back as TOML, and (finish()) writes each declared rule into --help.
class Binder final : public OptionBinder {
 public:
  explicit Binder(CLI::App* app) : app_(app) {}
  /// Appends each option's rule ("must be in (0, 1]") and "may change on resume" to its help;
  /// call once every struct is bound.
  void finish();
  /// The [tables] a config file may use (dotted names: "run", "env.geodc"); empty: any.
  std::vector<std::string> sections;

  /// The resolved configuration as TOML (flat keys; groups as comments).
  std::string to_toml() const;

 protected:
  void added(Option& o) override;

 private:
  CLI::App* app_;
  std::vector<CLI::Option*> flags_;  // one per declared option, in order
};

/// Levenshtein distance (for "did you mean" suggestions).
std::size_t edit_distance(const std::string& a, const std::string& b);
/// The name in `names` nearest to `key` by edit_distance, or "" when none is near enough to be
/// a likely typo (within max(2, |key|/3) edits): the "did you mean" of config keys and flags.
std::string nearest_name(const std::string& key, const std::vector<std::string>& names);

/// Applies a TOML file to a subcommand: keys are long option names ('_' may stand for '-');
/// [sections] only organise the file, and must be among `binder.sections` when it lists any.
/// An option given twice (`a.seed` and `b.seed`, `lr_actor` and `lr-actor`) is refused. Values
/// given as flags win. Throws ConfigError naming the file, the line and the key.
void apply_config_file(CLI::App* sub, const Binder& binder, const std::string& path);

}  // namespace marlsched::cli
