#pragma once
/// \file config_file.hpp
/// Config structs bound to CLI11 options (flags and the TOML config file, whose keys are the long
/// option names), the resolved configuration printed back as TOML, and the config-file reader
/// that rejects unknown keys with the nearest known one. No torch, no MPI: the config fuzzer
/// (tests/fuzz) builds it alone.

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
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

/// Binds config structs to one CLI11 (sub)command and remembers how to print each value.
class Binder final : public OptionBinder {
 public:
  struct Entry {
    std::string group, flag;
    std::function<std::string()> value;
    std::function<void()> clear = {};  ///< set for list options
  };
  explicit Binder(CLI::App* app) : app_(app) {}
  void group(const std::string& name) override { group_ = name; }
  void add(const std::string& f, int& v, const std::string& h) override { opt(f, v, h); }
  void add(const std::string& f, std::int64_t& v, const std::string& h) override { opt(f, v, h); }
  void add(const std::string& f, std::uint64_t& v, const std::string& h) override {
    opt(f, v, h);
    // Digits only, within TOML's integers (the run's config.toml must read back): CLI11 would
    // read -1 as 2^64 - 1 and clamp 2^64 to 2^64 - 1, and toml++ refuses integers above 2^63 - 1.
    app_->get_option("--" + f)->check(CLI::Validator(
        [f](std::string& s) { return seed_error(f, s); }, "INT in [0, 2^63-1]", "toml-uint"));
  }
  void add(const std::string& f, double& v, const std::string& h) override { opt(f, v, h); }
  void add(const std::string& f, std::string& v, const std::string& h) override {
    opt(f, v, h);
    app_->get_option("--" + f)->check(utf8_text(f));
  }
  void add(const std::string& f, bool& v, const std::string& h) override {
    app_->add_flag("--" + f + ",!--no-" + f, v, h + " (default " + toml(v) + ")")->group(group_);
    entries_.push_back({group_, f, [&v] { return toml(v); }});
  }
  void add(const std::string& f, std::vector<int>& v, const std::string& h) override {
    vec(f, v, h);
  }
  void add(const std::string& f, std::vector<double>& v, const std::string& h) override {
    vec(f, v, h);
  }
  void add(const std::string& f, std::vector<std::string>& v, const std::string& h) override {
    vec(f, v, h);
    app_->get_option("--" + f)->check(utf8_text(f));
  }
  const std::vector<Entry>& entries() const { return entries_; }
  /// The [tables] a config file may use (dotted names: "run", "env.geodc"); empty: any.
  std::vector<std::string> sections;

  /// The resolved configuration as TOML (flat keys; groups as comments).
  std::string to_toml() const;

 private:
  template <class T>
  void opt(const std::string& f, T& v, const std::string& h) {
    app_->add_option("--" + f, v, h)->capture_default_str()->group(group_);
    entries_.push_back({group_, f, [&v] { return toml(v); }});
  }
  template <class T>
  void vec(const std::string& f, std::vector<T>& v, const std::string& h) {
    app_->add_option("--" + f, v, h)->delimiter(',')->capture_default_str()->group(group_);
    // An empty list (`key = []` in TOML) is legal in a config file; CLI11 cannot convert it.
    entries_.push_back({group_, f, [&v] { return toml(v); }, [&v] { v.clear(); }});
  }
  CLI::App* app_;
  std::string group_ = "Options";
  std::vector<Entry> entries_;
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
