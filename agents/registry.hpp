#pragma once
/// \file registry.hpp
/// The table of learners (trained by `marlsched train`); the heuristic baselines are the envs'
/// (envs/baselines.hpp). A learner is a folder under agents/ (its options type, the Learner, and
/// an entry.cpp that makes its row, a LearnerFamily) plus one line in registry.cpp's table; a
/// program linking the library adds its row with register_learner before binding options. The
/// README's "Add a learner" walks through it, and tests/train/test_walkthrough.cpp keeps the
/// walk-through true.

#include <functional>
#include <memory>
#include <string>
#include <typeinfo>
#include <vector>

#include "core/error.hpp"
#include "core/learner.hpp"
#include "core/options.hpp"

namespace marlsched {

/// One group of learner options (a type with `bind(OptionBinder&)`), type-erased so that the
/// table, not this header, says which groups exist. Learners of one family share a group
/// (mappo and ippo read MappoConfig; tsdqn reads DqnConfig for its short head and TsdqnConfig).
class LearnerOptions {
 public:
  virtual ~LearnerOptions() = default;
  virtual void bind(OptionBinder& b) = 0;
  virtual std::unique_ptr<LearnerOptions> clone() const = 0;
};

template <class C>
class OptionsOf final : public LearnerOptions {
 public:
  C value;
  void bind(OptionBinder& b) override { value.bind(b); }
  std::unique_ptr<LearnerOptions> clone() const override {
    return std::make_unique<OptionsOf>(*this);
  }
};

/// An env baseline a learner's options name: the option (e.g. "--imitate") and the name.
struct NamedBaseline {
  std::string option, name;
};

/// Options of every registered learner: one object per options group of the table (in the
/// order the rows first name them, which is the order of --help and config keys), and --device.
class LearnerConfigs {
 public:
  LearnerConfigs();
  LearnerConfigs(const LearnerConfigs& other);
  LearnerConfigs& operator=(const LearnerConfigs& other);
  LearnerConfigs(LearnerConfigs&&) noexcept = default;
  LearnerConfigs& operator=(LearnerConfigs&&) noexcept = default;
  ~LearnerConfigs() = default;

  /// The options group of type C (MappoConfig, DqnConfig, ...); ConfigError if no registered
  /// row names it.
  template <class C>
  C& get() {
    return const_cast<C&>(static_cast<const LearnerConfigs&>(*this).get<C>());
  }
  template <class C>
  const C& get() const {
    for (const auto& g : groups_)
      if (const auto* o = dynamic_cast<const OptionsOf<C>*>(g.get())) return o->value;
    MARLSCHED_THROW(ConfigError, "no registered learner has the options " << typeid(C).name());
  }
  /// The group C with --device applied (every learner with networks reads it from there).
  template <class C>
  C with_device() const {
    C c = get<C>();
    c.device = device;
    return c;
  }

  std::string device = "cpu";  ///< --device, for every learner (nn::check_device)
  void bind(OptionBinder& b);
  /// Validates the named learner's options; throws ConfigError for an unknown name.
  void validate(const std::string& algo) const;
  /// Throws ConfigError when the named learner cannot act in an env of this spec (before any
  /// collective, so that the error is one clear line).
  void check_env(const std::string& algo, const EnvSpec& spec) const;
  /// Throws ConfigError when the named learner cannot train on `copies` env copies per rank
  /// (ES: antithetic pairs of copies that share episodes, so an even number).
  void check_copies(const std::string& algo, int copies) const;
  /// The named learner's check of the input files its training reads
  /// (LearnerFamily::check_inputs), if it reads any.
  void check_inputs(const std::string& algo, const EnvSpec& spec, int num_agents, int rank,
                    int ranks) const;
  /// The named learner's check of a warm start's model file (LearnerFamily::check_init);
  /// ConfigError when it cannot warm-start at all.
  void check_init(const std::string& algo, const EnvSpec& spec, int num_agents, int local_agents,
                  const std::string& model) const;
  /// Environment steps per iteration in an env of this spec, and β of the team reward, of the
  /// named learner.
  int rollout_steps(const std::string& algo, const EnvSpec& spec) const;
  double team_reward(const std::string& algo) const;
  /// Whether the named learner keeps one network for all agents (else one per agent).
  bool shared(const std::string& algo) const;
  /// The env baselines the named learner's options name (LearnerFamily::baselines).
  std::vector<NamedBaseline> baselines(const std::string& algo) const;

 private:
  std::vector<std::unique_ptr<LearnerOptions>> groups_;
};

/// A maker of one options group, for LearnerFamily::options().
using OptionsMaker = std::function<std::unique_ptr<LearnerOptions>()>;
/// The maker of the options group C.
template <class C>
OptionsMaker options_of() {
  return [] { return std::make_unique<OptionsOf<C>>(); };
}

/// One row of the learner table: what `marlsched` needs to know of a learner besides the
/// Learner itself. A learner overrides what differs from the defaults (name, description,
/// options, rollout_steps and make are its own) and is registered by one line.
class LearnerFamily {
 public:
  virtual ~LearnerFamily() = default;
  /// Its --algo name, and the line `marlsched list` prints.
  virtual std::string name() const = 0;
  virtual std::string description() const = 0;
  /// The options groups it reads (each made once per LearnerConfigs, shared with other rows).
  virtual std::vector<OptionsMaker> options() const = 0;
  /// Validates its options (ConfigError).
  virtual void validate(const LearnerConfigs&) const {}
  /// After validate: ConfigError when it cannot act in an env of this spec.
  virtual void check_env(const LearnerConfigs&, const EnvSpec&) const {}
  /// Environment steps per iteration in an env of this spec.
  virtual int rollout_steps(const LearnerConfigs&, const EnvSpec&) const = 0;
  /// β of the team reward (0: each agent learns from its own reward).
  virtual double team_reward(const LearnerConfigs&) const { return 0.0; }
  /// Whether it keeps one network for all agents (else one per agent).
  virtual bool shared(const LearnerConfigs&) const { return true; }
  /// Builds it for this rank's layout.
  virtual std::unique_ptr<Learner> make(const LearnerConfigs&, const LearnerLayout&) const = 0;
  /// Writes the learners of every training rank as one TorchScript policy (`with_critic`: with
  /// its critic). By default: ConfigError, it has no export.
  virtual void export_policy(const std::vector<const Learner*>& ranks, const std::string& path,
                             const std::string& metadata, bool with_critic) const;
  /// Copies per group of common episodes that training needs (Learner::common_episodes): the
  /// env copies per rank must be a multiple of it.
  virtual int copy_group(const LearnerConfigs&) const { return 1; }
  /// Whether training reads input files (an offline learner's dataset), and their check for a
  /// run of `num_agents` agents, on every rank (`rank` of `ranks`) before any collective
  /// (InputError with one clear message).
  virtual bool reads_inputs() const { return false; }
  virtual void check_inputs(const LearnerConfigs&, const EnvSpec&, int num_agents, int rank,
                            int ranks) const;
  /// Whether it can warm-start from a trained model (--init-from), and the check, before any
  /// collective, that this rank's model file of a run with `num_agents` agents, `local_agents`
  /// per rank, can start it (ConfigError otherwise).
  virtual bool warm_starts() const { return false; }
  virtual void check_init(const LearnerConfigs&, const EnvSpec&, int num_agents, int local_agents,
                          const std::string& model) const;
  /// The env baselines it will ask LearnerLayout::baselines for (a teacher, a base), each with
  /// the option that names it, so that the layer that knows the env checks them before a run.
  virtual std::vector<NamedBaseline> baselines(const LearnerConfigs&) const { return {}; }
};

/// Adds a row (before any LearnerConfigs is made or options are bound); ConfigError if the name
/// is taken.
void register_learner(std::unique_ptr<LearnerFamily> family);

/// The learners of every rank as type T, for an exporter (an internal error if one is not).
template <class T>
std::vector<const T*> learners_as(const std::vector<const Learner*>& ranks) {
  std::vector<const T*> out;
  for (const Learner* l : ranks) {
    const T* t = dynamic_cast<const T*>(l);
    MARLSCHED_CHECK(t != nullptr, "export: learner is not a " << l->name());
    out.push_back(t);
  }
  return out;
}

/// Every registered learner's name, in table order (register_learner's rows last).
std::vector<std::string> learner_names();
/// The named learner's one-line description (for `marlsched list`).
std::string learner_description(const std::string& algo);

/// Builds the named learner for this rank's layout; throws ConfigError for an unknown name.
std::unique_ptr<Learner> make_learner(const std::string& algo, const LearnerConfigs& cfg,
                                      const LearnerLayout& layout);
/// The same for a layout given part by part (the team reward over all agents; `baselines`: the
/// env's, for a learner whose options name one).
std::unique_ptr<Learner> make_learner(const std::string& algo, const LearnerConfigs& cfg,
                                      const EnvSpec& spec, const dist::Comm& comm, int num_agents,
                                      int first_agent, int local_agents, int copies,
                                      std::uint64_t seed, BaselineMaker baselines = {});

/// The named learner as the trainer takes it (core/learner.hpp): its builder (handing it
/// `baselines`), rollout length in an env of this spec and team-reward β. Validates the
/// learner's options first.
LearnerRecipe learner_recipe(const std::string& algo, const LearnerConfigs& cfg,
                             const EnvSpec& spec, BaselineMaker baselines = {});

/// Writes the learners of every training rank (made by make_learner with `algo`) as one
/// TorchScript policy; `with_critic` adds MAPPO's critic (other learners have none: error).
void export_learners(const std::string& algo, const std::vector<const Learner*>& ranks,
                     const std::string& path, const std::string& metadata, bool with_critic);

}  // namespace marlsched
