#pragma once
/// \file options.hpp
/// Config structs declare their options here, each once: its flag, its help, where its value
/// lives and what it may hold (a range, a set of choices, whether a resumed run may change it).
/// `envs/` and `agents/` never depend on CLI11: `launch/` turns the declarations into flags and
/// config-file keys (with the constraints in --help), every struct's validate() checks its own
/// declarations (check_declared), and a resume compares the options not declared
/// may_change_on_resume (RunConfig::resumable_options). Flags are long names without "--".

#include <cmath>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace marlsched {

/// The value of an option that names one of a fixed set of choices, held in an enum: the names,
/// and how to read and write the enum (OptionBinder::choice declares one).
class Choice {
 public:
  template <class E>
  Choice(E& value, const std::vector<std::pair<std::string, E>>& choices)
      : get_([&value] { return static_cast<long>(value); }),
        set_([&value](long v) { value = static_cast<E>(v); }) {
    for (const auto& [name, v] : choices) {
      names_.push_back(name);
      values_.push_back(static_cast<long>(v));
    }
  }
  /// The choices' names, in declaration order.
  const std::vector<std::string>& names() const { return names_; }
  /// The name of the current value ("" when the enum holds a value no name declares, such as a
  /// learner's internal setting).
  std::string name() const;
  /// Sets the value that `name` names; false when it names none.
  bool set(const std::string& name);

 private:
  std::vector<std::string> names_;
  std::vector<long> values_;
  std::function<long()> get_;
  std::function<void(long)> set_;
};

/// One declared option. The constraint setters return the option, so that a declaration reads
/// `b.add("es-top", top, "share of the directions").greater_than(0).at_most(1);`.
class Option {
 public:
  using Value =
      std::variant<int*, std::int64_t*, std::uint64_t*, double*, bool*, std::string*,
                   std::vector<int>*, std::vector<double>*, std::vector<std::string>*, Choice*>;
  Option(std::string group, std::string flag, std::string help, Value value)
      : group_(std::move(group)), flag_(std::move(flag)), help_(std::move(help)), value_(value) {}

  /// Numbers (each element of a list): > lo, >= lo, < hi, <= hi (finite bounds), and finite once
  /// any bound is set.
  Option& greater_than(double lo);
  Option& at_least(double lo);
  Option& less_than(double hi);
  Option& at_most(double hi);
  /// > 0.
  Option& positive() { return greater_than(0); }
  /// [lo, hi].
  Option& in(double lo, double hi) { return at_least(lo).at_most(hi); }
  /// (0, 1]: above 1 an Adam or SGD step overshoots any parameter scale these networks have.
  Option& learning_rate() { return greater_than(0).at_most(1); }
  /// Text (each element of a list): one of `choices` ("" among them when empty means none).
  Option& one_of(std::vector<std::string> choices);
  /// A list whose element i belongs to `names[i]` (a site of --sites): a violation names it,
  /// "--gpus: site DE-LU must be ...", instead of "--gpus[1] must be ...". `names` must outlive
  /// the option (a member of the same config struct).
  Option& elements_of(const std::vector<std::string>& names, std::string noun);
  /// A resumed run may give it a new value (run length, logging, evaluation); every other
  /// option must equal the checkpointed run's.
  Option& may_change_on_resume();

  const std::string& group() const { return group_; }
  const std::string& flag() const { return flag_; }
  const std::string& help() const { return help_; }
  const Value& value() const { return value_; }
  bool resumable() const { return resumable_; }
  /// What the option may hold, for --help: "in (0, 1]", ">= 1", "one of agent, targets"; ""
  /// when anything of its type goes.
  std::string rule() const;
  /// "" when the value keeps the rule, else "--FLAG must be RULE, got VALUE" ("--FLAG[i] ..."
  /// for element i of a list).
  std::string violation() const;

 private:
  bool bounded() const { return std::isfinite(lo_) || std::isfinite(hi_); }

  std::string group_, flag_, help_;
  Value value_;
  double lo_ = -std::numeric_limits<double>::infinity();
  double hi_ = std::numeric_limits<double>::infinity();
  bool lo_open_ = false, hi_open_ = false, resumable_ = false;
  std::vector<std::string> choices_;
  const std::vector<std::string>* names_ = nullptr;
  std::string noun_;
};

/// Collects the options that config structs declare (`cfg.bind(binder)`). launch/ derives a
/// CLI11 binder from it (added() makes the flag); on its own it is the declarations of a struct.
class OptionBinder {
 public:
  OptionBinder() = default;
  OptionBinder(const OptionBinder&) = delete;
  OptionBinder& operator=(const OptionBinder&) = delete;
  virtual ~OptionBinder() = default;

  /// Starts a named group (a section in --help and in the printed config).
  void group(const std::string& name) { group_ = name; }
  /// Declares an option bound to `value` (int, int64, uint64, double, bool, string or a vector
  /// of int, double or string); constrain it through the returned Option.
  template <class T>
  Option& add(const std::string& flag, T& value, const std::string& help) {
    declared_.emplace_back(group_, flag, help, Option::Value(&value));
    added(declared_.back());
    return declared_.back();
  }
  /// Declares an option whose value is one of `choices`, named on the command line and in
  /// config files, held in the enum `value`: `b.choice("actor", actor, {{"mlp",
  /// ActorKind::kMlp}, {"targets", ActorKind::kTargets}}, "help")`. Its rule is one_of the names.
  template <class E>
  Option& choice(const std::string& flag, E& value,
                 const std::vector<std::pair<std::string, E>>& choices, const std::string& help) {
    choices_.emplace_back(value, choices);
    declared_.emplace_back(group_, flag, help, Option::Value(&choices_.back()));
    declared_.back().one_of(choices_.back().names());
    added(declared_.back());
    return declared_.back();
  }
  /// Every option declared so far, in declaration order.
  const std::deque<Option>& declared() const { return declared_; }
  /// Throws ConfigError with the first declared option whose value breaks its rule.
  void check() const;
  /// The flags declared may_change_on_resume.
  std::vector<std::string> resumable() const;

 protected:
  /// Called with each option as it is declared (before its constraints are set, but a choice's
  /// one_of).
  virtual void added(Option&) {}

 private:
  std::string group_ = "Options";
  std::deque<Option> declared_;
  std::deque<Choice> choices_;  ///< the values of choice options (stable addresses)
};

/// Checks each option that `cfg.bind(binder, args...)` declares against its declared rule (for
/// validate()); throws ConfigError with the first violation.
template <class C, class... A>
void check_declared(const C& cfg, A&&... bind_args) {
  C copy(cfg);  // bind() takes its members by reference; the copy's values are cfg's
  OptionBinder declared;
  copy.bind(declared, std::forward<A>(bind_args)...);
  declared.check();
}

}  // namespace marlsched
