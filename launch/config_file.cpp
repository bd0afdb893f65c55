#include "config_file.hpp"

#include <algorithm>
#include <charconv>
#include <climits>
#include <sstream>

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

void apply_config_file(CLI::App* sub, const Binder& binder, const std::string& path) {
  std::vector<CLI::ConfigItem> items;
  try {
    items = CLI::ConfigTOML().from_file(path);
  } catch (const CLI::Error& e) {
    MARLSCHED_THROW(ConfigError, "cannot read config file '" << path << "': " << e.what());
  }
  for (const auto& item : items) {
    if (item.name == "++" || item.name == "--") continue;  // section open/close markers
    std::string key = item.name;
    for (auto& ch : key)
      if (ch == '_') ch = '-';
    CLI::Option* op = sub->get_option_no_throw("--" + key);
    if (op == nullptr || key == "config" || key == "help") {
      std::string best;
      std::size_t bd = SIZE_MAX;
      for (const auto& e : binder.entries()) {
        const auto d = edit_distance(key, e.flag);
        if (d < bd) {
          bd = d;
          best = e.flag;
        }
      }
      std::ostringstream os;
      os << path << ": unknown config key '" << item.fullname() << "'";
      if (bd <= std::max<std::size_t>(2, key.size() / 3)) os << " (did you mean '" << best << "'?)";
      MARLSCHED_THROW(ConfigError, os.str());
    }
    if (op->count() > 0) continue;  // the command line wins
    if (item.inputs.empty() || (item.inputs.size() == 1 && item.inputs[0].empty())) {
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
      MARLSCHED_THROW(ConfigError, path << ": bad value for '" << key << "': " << e.what());
    }
  }
}

}  // namespace marlsched::cli
