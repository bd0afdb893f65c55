#include "config_file.hpp"

#include <algorithm>
#include <charconv>
#include <climits>
#include <filesystem>
#include <sstream>

#include <toml++/toml.h>

#include "core/error.hpp"
#include "core/version.hpp"

namespace marlsched::cli {

std::string toml(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o.push_back('\\');
    o.push_back(c);
  }
  return o + "\"";
}
std::string toml(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, r.ptr);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}
std::string toml(int v) {
  return std::to_string(v);
}
std::string toml(std::int64_t v) {
  return std::to_string(v);
}
std::string toml(std::uint64_t v) {
  return std::to_string(v);
}
std::string toml(bool v) {
  return v ? "true" : "false";
}

std::string Binder::to_toml() const {
  std::ostringstream os;
  os << "# marlsched " << MARLSCHED_VERSION << " resolved configuration\n";
  std::string g;
  for (const auto& e : entries_) {
    if (e.group != g) {
      g = e.group;
      os << "\n# " << g << "\n";
    }
    os << e.flag << " = " << e.value() << "\n";
  }
  return os.str();
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j)
      cur[j] =
          std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string nearest_name(const std::string& key, const std::vector<std::string>& names) {
  std::string best;
  std::size_t bd = SIZE_MAX;
  for (const auto& n : names)
    if (const auto d = edit_distance(key, n); d < bd) {
      bd = d;
      best = n;
    }
  return bd <= std::max<std::size_t>(2, key.size() / 3) ? best : std::string();
}

namespace {
/// One key of a config file, flattened: sections only organise the file (README).
struct ConfigKey {
  std::string name, fullname;       ///< the key, and section.key for messages
  std::vector<std::string> inputs;  ///< the value as CLI11 takes it (an array: one per element)
  std::uint32_t line = 0;
};

std::string scalar_text(const ::toml::node& v, const std::string& path, const ConfigKey& k) {
  if (const auto* s = v.as_string()) return s->get();
  if (const auto* i = v.as_integer()) return std::to_string(i->get());
  if (const auto* f = v.as_floating_point()) {  // shortest text that reads back the same
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, f->get());
    return std::string(buf, r.ptr);
  }
  if (const auto* b = v.as_boolean()) return b->get() ? "true" : "false";
  MARLSCHED_THROW(ConfigError, path << ":" << k.line << ": '" << k.fullname
                                    << "': expected a string, number, boolean or array of them"
                                    << (v.is_date_time() || v.is_date() || v.is_time()
                                            ? " (write dates and times as strings, e.g. "
                                              "\"2023-01-01 00:00\")"
                                            : ""));
}

void flatten(const ::toml::table& t, const std::string& prefix, const std::string& path,
             std::vector<ConfigKey>& out) {
  for (const auto& [key, node] : t) {
    ConfigKey k;
    k.name = std::string(key.str());
    k.fullname = prefix.empty() ? k.name : prefix + "." + k.name;
    k.line = node.source().begin.line;
    if (const auto* sub = node.as_table()) {
      flatten(*sub, k.fullname, path, out);
      continue;
    }
    if (const auto* arr = node.as_array()) {
      for (const auto& e : *arr) k.inputs.push_back(scalar_text(e, path, k));
    } else {
      k.inputs.push_back(scalar_text(node, path, k));
    }
    out.push_back(std::move(k));
  }
}
}  // namespace

void apply_config_file(CLI::App* sub, const Binder& binder, const std::string& path) {
  // toml++ (Debian's libtomlplusplus-dev), not CLI11's reader: CLI11 accepts malformed TOML (a
  // key without a value, an unterminated string or array, a section given twice) and reads it
  // as something else; a real TOML parser reports file, line and column instead.
  MARLSCHED_REQUIRE(std::filesystem::is_regular_file(path),
                    "config file '" << path << "' "
                                    << (std::filesystem::exists(path) ? "is not a regular file"
                                                                      : "does not exist"));
  ::toml::table doc;
  try {
    doc = ::toml::parse_file(path);
  } catch (const ::toml::parse_error& e) {
    MARLSCHED_THROW(ConfigError, path << ":" << e.source().begin.line << ":"
                                      << e.source().begin.column
                                      << ": not valid TOML: " << e.description());
  }
  std::vector<ConfigKey> items;
  flatten(doc, "", path, items);
  for (const auto& item : items) {
    std::string key = item.name;
    for (auto& ch : key)
      if (ch == '_') ch = '-';
    CLI::Option* op = sub->get_option_no_throw("--" + key);
    if (op == nullptr || key == "config" || key == "help") {
      std::vector<std::string> flags;
      for (const auto& e : binder.entries()) flags.push_back(e.flag);
      const std::string best = nearest_name(key, flags);
      std::ostringstream os;
      os << path << ":" << item.line << ": unknown config key '" << item.fullname << "'";
      if (!best.empty()) os << " (did you mean '" << best << "'?)";
      MARLSCHED_THROW(ConfigError, os.str());
    }
    if (op->count() > 0) continue;  // the command line wins
    if (item.inputs.empty()) {
      const Binder::Entry* entry = nullptr;
      for (const auto& e : binder.entries())
        if (e.flag == key) entry = &e;
      if (entry != nullptr && entry->clear) {
        entry->clear();
        continue;
      }
    }
    try {
      op->add_result(item.inputs);
      op->run_callback();
    } catch (const CLI::Error& e) {
      MARLSCHED_THROW(ConfigError,
                      path << ":" << item.line << ": bad value for '" << key << "': " << e.what());
    }
  }
}

}  // namespace marlsched::cli
