#pragma once
/// \file run_command.hpp
/// What the run-like subcommands (train, eval, baselines, collect) share: phase 1 as one
/// sequence with hooks (RunCommand), a trained policy named on the command line (ModelSource)
/// and a run directory claimed for writing (claim_run_dir). Internal to launch/.

#include <optional>
#include <string>
#include <vector>

#include "commands.hpp"
#include "evaluate_all.hpp"
#include "train/run_dir.hpp"

namespace marlsched::cli {

/// The resolved config as the run records it (config.toml, the trajectory files): the options,
/// then `notes` (how the env read its input files, what a collection ran) as comments (not
/// options; the fingerprint that a resume checks skips comments).
std::string config_record(const Command& cmd, const std::vector<std::string>& notes);

struct Prepared {
  std::unique_ptr<EnvFactory> factory;
  std::vector<std::string> input_notes;  ///< factory->input_notes(), printed and recorded
};

/// Phase 1 (no collectives): config file, validation, env data loading. `before_validate` (if
/// given) runs between resolving and validating the config, for checks that explain a mismatch
/// better than the env's agent count would.
Prepared prepare(Command& cmd, const dist::Comm& comm, bool needs_learner,
                 const std::function<void()>& before_validate = {});

/// The env's baselines an evaluation runs when none are named: all of them (a central planner,
/// Policy::needs_every_agent, included).
std::vector<std::string> default_baselines(const std::string& env);

/// Creates `run.run_dir` if needed, proves that this rank can write into it, and takes this
/// rank's lock on it (held while `lock` lives). Unless `resuming`, a directory that holds an
/// earlier run is refused with one message, or with `force` cleared of that run's files (refused
/// too when one of them is or holds a path that an option of `app` reads). A symbolic link in
/// place of one of the run's files is refused.
void claim_run_dir(const RunConfig& run, const CLI::App& app, const dist::Comm& comm, bool force,
                   bool resuming, std::optional<RunDirLock>& lock);

/// What train, eval, baselines and collect have in common: Command's options, and phase 1 as
/// one sequence with a hook at each place where one of them checks more.
class RunCommand : public Subcommand {
 public:
  std::optional<int> validate(const dist::Comm& comm) override;
  double watchdog_s() const override { return cmd_.run.watchdog_s; }

 protected:
  virtual bool needs_learner() const { return true; }
  /// Before the config is resolved (it may choose the config file).
  virtual void before_prepare(const dist::Comm&) {}
  /// Between resolving and validating the config: checks that explain a mismatch better than
  /// the env's agent count would.
  virtual void check_models(const dist::Comm&) {}
  /// After the env is prepared, before the torch threads are set.
  virtual void after_prepare(const dist::Comm&) {}
  /// Last in phase 1.
  virtual void after_threads(const dist::Comm&) {}

  /// --baselines: every baseline of the env when none is named (default_baselines); each name
  /// must make one, once.
  void check_baselines(std::vector<std::string>& names) const;

  Command cmd_;
  Prepared prep_;
};

/// A trained policy named on the command line (eval, collect): a run's models (--model), a
/// checkpoint's (--checkpoint) or a file written by `marlsched export` (--policy), with the
/// checks it needs and the training configuration it brings.
struct ModelSource {
  std::string run_dir, checkpoint, policy;

  /// Adds --model, --checkpoint and --policy to the subcommand `a`.
  void bind(CLI::App* a);
  /// How many of the three are given.
  int count() const;
  /// The run directory of the model: --model, or the checkpoint's run ("" for --policy).
  std::string model_run_dir() const;
  /// Before the config is resolved: the model's training config unless --config gave one, and
  /// an exported policy's agents spread over this job's ranks unless --agents-per-rank is given.
  void choose_config(Command& cmd, const dist::Comm& comm);
  /// Between resolving and validating the config: a run's or checkpoint's models hold one
  /// rank's agents each: says plainly when this job's rank count differs or a model is missing
  /// or damaged.
  void check_models(Command& cmd, const dist::Comm& comm) const;
  /// After the env is prepared: removes the temporary config, and loads an exported policy once
  /// (it must have been trained for this many agents).
  void check_loaded(const Command& cmd, const Prepared& prep, const dist::Comm& comm);
  LearnedPolicy learned() const { return {run_dir, checkpoint, policy}; }

 private:
  std::string command_, config_tmp_;
};

}  // namespace marlsched::cli
