#include "core/options.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/error.hpp"

namespace marlsched {

namespace {

/// A bound as a user writes it: whole numbers without a fraction or exponent.
std::string number(double v) {
  std::ostringstream os;
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15)
    os << static_cast<long long>(v);
  else
    os << v;
  return os.str();
}

template <class T>
std::string text(const T& v) {
  std::ostringstream os;
  os << v;
  return os.str();
}
std::string text(const std::string& v) {
  return "'" + v + "'";
}

}  // namespace

std::string Choice::name() const {
  const long v = get_();
  for (std::size_t i = 0; i < values_.size(); ++i)
    if (values_[i] == v) return names_[i];
  return {};
}

bool Choice::set(const std::string& name) {
  for (std::size_t i = 0; i < names_.size(); ++i)
    if (names_[i] == name) {
      set_(values_[i]);
      return true;
    }
  return false;
}

Option& Option::greater_than(double lo) {
  lo_ = lo;
  lo_open_ = true;
  return *this;
}

Option& Option::at_least(double lo) {
  lo_ = lo;
  lo_open_ = false;
  return *this;
}

Option& Option::less_than(double hi) {
  hi_ = hi;
  hi_open_ = true;
  return *this;
}

Option& Option::at_most(double hi) {
  hi_ = hi;
  hi_open_ = false;
  return *this;
}

Option& Option::one_of(std::vector<std::string> choices) {
  choices_ = std::move(choices);
  return *this;
}

Option& Option::elements_of(const std::vector<std::string>& names, std::string noun) {
  names_ = &names;
  noun_ = std::move(noun);
  return *this;
}

Option& Option::may_change_on_resume() {
  resumable_ = true;
  return *this;
}

std::string Option::rule() const {
  if (!choices_.empty()) {
    std::string s = "one of ";
    for (std::size_t i = 0; i < choices_.size(); ++i)
      s += (i ? ", " : "") + (choices_[i].empty() ? std::string("'' (none)") : choices_[i]);
    return s;
  }
  if (!bounded()) return {};
  const bool has_lo = std::isfinite(lo_), has_hi = std::isfinite(hi_);
  if (has_lo && has_hi)
    return "in " + std::string(lo_open_ ? "(" : "[") + number(lo_) + ", " + number(hi_) +
           (hi_open_ ? ")" : "]");
  if (has_lo) return lo_open_ && lo_ == 0 ? "positive" : (lo_open_ ? "> " : ">= ") + number(lo_);
  return (hi_open_ ? "< " : "<= ") + number(hi_);
}

std::string Option::violation() const {
  const std::string rule_text = rule();
  if (rule_text.empty()) return {};
  auto keeps = [&](double v) {
    return std::isfinite(v) && (lo_open_ ? v > lo_ : v >= lo_) && (hi_open_ ? v < hi_ : v <= hi_);
  };
  auto chosen = [&](const std::string& v) {
    return choices_.empty() || std::find(choices_.begin(), choices_.end(), v) != choices_.end();
  };
  // "--flag must be ..." or, for element i of a list, "--flag[i] must be ..." or "--flag: site
  // NAME must be ...".
  auto bad = [&](const std::string& got, long index = -1) {
    std::string who = "--" + flag_;
    if (index >= 0 && names_ != nullptr && static_cast<std::size_t>(index) < names_->size())
      who += ": " + noun_ + " " + (*names_)[static_cast<std::size_t>(index)];
    else if (index >= 0)
      who += "[" + std::to_string(index) + "]";
    return who + " must be " + rule_text + ", got " + got;
  };
  return std::visit(
      [&](auto* p) -> std::string {
        using T = std::remove_pointer_t<decltype(p)>;
        if constexpr (std::is_same_v<T, std::string>) {
          return chosen(*p) ? std::string() : bad(text(*p));
        } else if constexpr (std::is_same_v<T, Choice>) {
          return std::string();  // it holds one of its names (or an internal value)
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          for (std::size_t i = 0; i < p->size(); ++i)
            if (!chosen((*p)[i])) return bad(text((*p)[i]), static_cast<long>(i));
          return {};
        } else if constexpr (std::is_same_v<T, bool>) {
          return {};
        } else if constexpr (std::is_arithmetic_v<T>) {
          return !bounded() || keeps(static_cast<double>(*p)) ? std::string() : bad(text(*p));
        } else {
          if (bounded())
            for (std::size_t i = 0; i < p->size(); ++i)
              if (!keeps(static_cast<double>((*p)[i])))
                return bad(text((*p)[i]), static_cast<long>(i));
          return {};
        }
      },
      value_);
}

void OptionBinder::check() const {
  for (const Option& o : declared_)
    if (std::string v = o.violation(); !v.empty()) MARLSCHED_THROW(ConfigError, v);
}

std::vector<std::string> OptionBinder::resumable() const {
  std::vector<std::string> flags;
  for (const Option& o : declared_)
    if (o.resumable()) flags.push_back(o.flag());
  return flags;
}

}  // namespace marlsched
