#include "config_file.hpp"

#include <algorithm>
#include <charconv>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>
#include <type_traits>
#include <variant>

#include <toml++/toml.h>

#include "core/error.hpp"
#include "core/version.hpp"

namespace marlsched::cli {

std::string toml(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      o.push_back('\\');
      o.push_back(c);
    } else if (c == '\n') {
      o += "\\n";
    } else if (c == '\t') {
      o += "\\t";
    } else if (u < 0x20 || u == 0x7f) {  // other control characters: TOML's \uXXXX
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", u);
      o += buf;
    } else {
      o.push_back(c);
    }
  }
  return o + "\"";
}

std::string seed_error(const std::string& flag, const std::string& s) {
  const bool digits = !s.empty() && s.size() <= 19 &&
                      std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (digits && std::stoull(s) <= static_cast<unsigned long long>(INT64_MAX)) return {};
  return "--" + flag + ": '" + s + "' is not an integer in [0, 9223372036854775807] (2^63 - 1, " +
         "the largest integer a TOML file, and so the run's config.toml, can hold)";
}

bool valid_utf8(const std::string& s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    int n = c < 0x80 ? 0 : (c >> 5) == 0x6 ? 1 : (c >> 4) == 0xe ? 2 : (c >> 3) == 0x1e ? 3 : -1;
    if (n < 0 || (n == 1 && c < 0xc2)) return false;  // a stray continuation byte, overlong
    if (s.size() - i < static_cast<std::size_t>(n) + 1) return false;  // cut short
    std::uint32_t cp = n == 0 ? c : c & (0x3f >> n);
    for (int k = 1; k <= n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + static_cast<std::size_t>(k)]);
      if ((d >> 6) != 0x2) return false;
      cp = (cp << 6) | (d & 0x3f);
    }
    if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
      return false;  // overlong forms, beyond Unicode, surrogates
    i += static_cast<std::size_t>(n) + 1;
  }
  return true;
}

CLI::Validator utf8_text(const std::string& flag) {
  return CLI::Validator(
      [flag](std::string& s) {
        if (s.rfind("--", 0) == 0 && s.size() > 2)  // `--sites --run-dir x` ate the flag
          return "--" + flag + ": '" + s + "' looks like an option, not a value (did " + "--" +
                 flag + " miss its values?)";
        return valid_utf8(s)
                   ? std::string()
                   : "--" + flag + ": the value is not valid UTF-8 text; a run " +
                         "records its options in config.toml, which TOML requires to " + "be UTF-8";
      },
      "TEXT", "utf8");
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
std::string toml(const Choice& c) {
  return toml(c.name());
}

namespace {
/// Whether an option's value type is a list (comma-separated on the command line, a TOML array).
template <class T>
constexpr bool kIsList =
    std::is_same_v<T, std::vector<int>> || std::is_same_v<T, std::vector<double>> ||
    std::is_same_v<T, std::vector<std::string>>;
}  // namespace

void Binder::added(Option& o) {
  const std::string& f = o.flag();
  CLI::Option* flag = std::visit(
      [&](auto* v) -> CLI::Option* {
        using T = std::remove_pointer_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) {
          return app_->add_flag("--" + f + ",!--no-" + f, *v,
                                o.help() + " (default " + toml(*v) + ")");
        } else if constexpr (kIsList<T>) {
          return app_->add_option("--" + f, *v, o.help())->delimiter(',')->capture_default_str();
        } else if constexpr (std::is_same_v<T, Choice>) {
          // A name of the choices, turned into the enum's value as it is read.
          auto* opt = app_->add_option(
              "--" + f, [v](const CLI::results_t& r) { return !r.empty() && v->set(r.back()); },
              o.help(), false, [v] { return v->name(); });
          opt->type_name("TEXT")->capture_default_str();
          // The refusal in the declaration's words (Option::rule, as Option::violation has it).
          opt->check(CLI::Validator(
              [&o, v](std::string& s) {
                const auto& n = v->names();
                if (std::find(n.begin(), n.end(), s) != n.end()) return std::string();
                return "--" + o.flag() + " must be " + o.rule() + ", got '" + s + "'";
              },
              "TEXT", "choice"));
          return opt;
        } else {
          return app_->add_option("--" + f, *v, o.help())->capture_default_str();
        }
      },
      o.value());
  flag->group(o.group());
  if (std::holds_alternative<std::string*>(o.value()) ||
      std::holds_alternative<std::vector<std::string>*>(o.value()))
    flag->check(utf8_text(f));
  if (std::holds_alternative<std::uint64_t*>(o.value()))
    // Digits only, within TOML's integers (the run's config.toml must read back): CLI11 would
    // read -1 as 2^64 - 1 and clamp 2^64 to 2^64 - 1, and toml++ refuses integers above 2^63 - 1.
    flag->check(CLI::Validator([f](std::string& s) { return seed_error(f, s); },
                               "INT in [0, 2^63-1]", "toml-uint"));
  flags_.push_back(flag);
}

void Binder::finish() {
  const auto& options = declared();
  for (std::size_t i = 0; i < options.size(); ++i) {
    const Option& o = options[i];
    std::string help = flags_[i]->get_description();
    if (const std::string rule = o.rule(); !rule.empty()) help += "; must be " + rule;
    if (o.resumable()) help += "; may change on resume";
    flags_[i]->description(help);
  }
}

std::string Binder::to_toml() const {
  std::ostringstream os;
  os << "# marlsched " << MARLSCHED_VERSION << " resolved configuration\n";
  std::string g;
  for (const Option& o : declared()) {
    if (o.group() != g) {
      g = o.group();
      os << "\n# " << g << "\n";
    }
    os << o.flag() << " = " << std::visit([](auto* v) { return toml(*v); }, o.value()) << "\n";
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
             const std::vector<std::string>& sections, std::vector<ConfigKey>& out) {
  for (const auto& [key, node] : t) {
    ConfigKey k;
    k.name = std::string(key.str());
    k.fullname = prefix.empty() ? k.name : prefix + "." + k.name;
    k.line = node.source().begin.line;
    if (const auto* sub = node.as_table()) {
      if (!sections.empty() &&
          std::find(sections.begin(), sections.end(), k.fullname) == sections.end()) {
        std::string known;
        for (const auto& n : sections)
          if (n.find('.') == std::string::npos) known += (known.empty() ? "" : ", ") + n;
        const std::string best = nearest_name(k.fullname, sections);
        MARLSCHED_THROW(ConfigError, path << ":" << k.line << ": unknown table [" << k.fullname
                                          << "]"
                                          << (best.empty() ? "" : " (did you mean [" + best + "]?)")
                                          << "; a config file's tables are " << known
                                          << ", and env.NAME or algo.NAME");
      }
      flatten(*sub, k.fullname, path, sections, out);
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
  flatten(doc, "", path, binder.sections, items);
  std::map<std::string, const ConfigKey*>
      given;  // each option once, whatever its table or spelling
  for (const auto& item : items) {
    std::string key = item.name;
    for (auto& ch : key)
      if (ch == '_') ch = '-';
    if (const auto [it, fresh] = given.emplace(key, &item); !fresh) {
      // toml++ orders keys by name: name the later line as the repeat.
      const ConfigKey* first = it->second->line <= item.line ? it->second : &item;
      const ConfigKey* again = first == &item ? it->second : &item;
      MARLSCHED_THROW(ConfigError, path << ":" << again->line << ": '" << again->fullname
                                        << "' sets " << key << " again (line " << first->line
                                        << " sets it as '" << first->fullname
                                        << "'): give each option once");
    }
    CLI::Option* op = sub->get_option_no_throw("--" + key);
    if (op == nullptr || key == "config" || key == "help") {
      std::vector<std::string> flags;
      for (const Option& o : binder.declared()) flags.push_back(o.flag());
      const std::string best = nearest_name(key, flags);
      std::ostringstream os;
      os << path << ":" << item.line << ": unknown config key '" << item.fullname << "'";
      if (!best.empty()) os << " (did you mean '" << best << "'?)";
      MARLSCHED_THROW(ConfigError, os.str());
    }
    if (op->count() > 0) continue;  // the command line wins
    if (item.inputs.empty()) {
      // An empty list (`key = []`) is legal in a config file; CLI11 cannot convert it.
      bool cleared = false;
      for (const Option& o : binder.declared())
        if (o.flag() == key)
          std::visit(
              [&](auto* v) {
                using T = std::remove_pointer_t<decltype(v)>;
                if constexpr (kIsList<T>) {
                  v->clear();
                  cleared = true;
                }
              },
              o.value());
      if (cleared) continue;
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
