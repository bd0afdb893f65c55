#pragma once
/// \file commands.hpp
/// The subcommands of `marlsched`, one type each: its options, its checks (phase 1: on every
/// rank, before any collective, so that bad input gives one message and exit 2) and its work
/// (phase 2). cli.cpp parses the command line and runs the one given. Internal to launch/.

#include <CLI/CLI.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agents/registry.hpp"
#include "config_file.hpp"
#include "core/env.hpp"
#include "dist/comm.hpp"
#include "envs/registry.hpp"
#include "train/trainer.hpp"

namespace marlsched::cli {

class Subcommand {
 public:
  virtual ~Subcommand() = default;
  /// Adds this subcommand and its options to `app`; returns the subcommand's parser.
  virtual CLI::App* add_to(CLI::App& app) = 0;
  /// Rank 0 alone runs it, with no collectives (export, report, compare, slurm); the other
  /// ranks return 0 at once, and an error gives one line and exit 2.
  virtual bool serial() const { return false; }
  /// Phase 1, on every rank before any collective: every check that bad input can fail. A
  /// value means the command is already done (--print-config), with that exit code.
  virtual std::optional<int> validate(const dist::Comm& comm) {
    (void)comm;
    return std::nullopt;
  }
  /// Phase 2 (a serial command: rank 0 alone); returns the exit code.
  virtual int run(const dist::Comm& comm) = 0;
  /// The watchdog's limit during phase 2 (0: none).
  virtual double watchdog_s() const { return 0; }
};

/// Every subcommand, in the order --help lists them.
std::vector<std::unique_ptr<Subcommand>> make_subcommands();

/// Writes one line to stderr with a single write(2), so that it is not interleaved with other
/// ranks' output on a shared terminal or pipe.
void report_error(const std::string& line);
/// CLI11's message for a command-line error, with the nearest known option for each unknown
/// --flag (searched in the subcommand being parsed).
std::string describe_parse_error(CLI::App& app, const CLI::ParseError& e);

/// Everything a run-like subcommand binds.
struct Command {
  CLI::App* app = nullptr;
  std::unique_ptr<Binder> binder;
  RunConfig run;
  LearnerConfigs learners;
  std::vector<std::unique_ptr<EnvConfig>> envs;  // one per registered env, registry order
  std::string config_path;
  bool print_config = false;

  void bind(CLI::App* a) {
    app = a;
    binder = std::make_unique<Binder>(a);
    binder->sections = {"run", "train", "eval", "traj", "checkpoint", "env", "algo"};
    for (const auto& e : env_registry()) {
      binder->sections.push_back(e.name);
      binder->sections.push_back("env." + e.name);
    }
    for (const auto& l : learner_names()) {
      binder->sections.push_back(l);
      binder->sections.push_back("algo." + l);
    }
    a->add_option("--config", config_path, "TOML config file; flags given too override it")
        ->check(CLI::ExistingFile);
    a->add_flag("--print-config", print_config,
                "print the resolved configuration as TOML and exit");
    run.bind(*binder, learner_names());
    for (const auto& e : env_registry()) {
      envs.push_back(e.make_config());
      envs.back()->bind(*binder);
    }
    learners.bind(*binder);
    binder->finish();
    MARLSCHED_CHECK(binder->resumable() == run.resumable_options(),
                    "only run options may be declared may_change_on_resume: the trainer's resume "
                    "check reads RunConfig's declarations");
  }
  /// Applies the config file (if any; flags win) and validates the run and learner options.
  void resolve(bool needs_learner) {
    if (!config_path.empty()) apply_config_file(app, *binder, config_path);
    run.validate();
    if (needs_learner) learners.validate(run.algo);
  }
  EnvConfig& env_config() {
    const auto& reg = env_registry();
    for (std::size_t i = 0; i < reg.size(); ++i)
      if (reg[i].name == run.env) return *envs[i];
    find_env(run.env);  // throws with the known names
    return *envs[0];
  }
};

/// Reads a trained run's config.toml into `cmd` (bound to a scratch parser of its own).
void load_run_config(Command& cmd, CLI::App& scratch, const std::string& run_dir);

/// The rank count of a trained run from its model files (trained_ranks), also naming a missing
/// last model-rank-R.pt where the run's config defines its agent count (`ec`, `k` per rank).
int model_ranks(const std::string& run_dir, const EnvConfig& ec, int k);

/// The subcommands, one file each under commands/ (commands/train.cpp, commands/eval.cpp, ...).
std::unique_ptr<Subcommand> make_train_command();
std::unique_ptr<Subcommand> make_eval_command();
std::unique_ptr<Subcommand> make_baselines_command();
std::unique_ptr<Subcommand> make_collect_command();
std::unique_ptr<Subcommand> make_gen_data_command();
std::unique_ptr<Subcommand> make_list_command();
std::unique_ptr<Subcommand> make_export_command();
std::unique_ptr<Subcommand> make_report_command();
std::unique_ptr<Subcommand> make_compare_command();
std::unique_ptr<Subcommand> make_slurm_command();

}  // namespace marlsched::cli
