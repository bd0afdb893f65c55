/// \file run_commands.cpp
/// The subcommands that train and evaluate: train, eval, baselines. They share Command (the run,
/// env and learner options) and the phase-1 preparation: the config file, validation, the env's
/// data, the torch threads.

#include <climits>
#include <filesystem>
#include <functional>
#include <iostream>
#include <optional>

#include <unistd.h>

#include "agents/archive_check.hpp"
#include "agents/exported/torchscript_policy.hpp"
#include "agents/torch_threads.hpp"
#include "commands.hpp"
#include "core/blas.hpp"
#include "core/error.hpp"
#include "core/file.hpp"
#include "envs/baselines.hpp"
#include "evaluate_all.hpp"
#include "io/trajectory.hpp"
#include "train/checkpoint.hpp"
#include "train/manifest.hpp"
#include "train/run_dir.hpp"

namespace marlsched::cli {

namespace {

/// Creates the run directory if needed and proves that this rank can write into it, so that a
/// read-only or full file system fails before training with one message instead of later.
void check_run_dir_writable(const std::string& run_dir, int rank) {
  std::error_code ec;
  std::filesystem::create_directories(run_dir, ec);
  if (ec)
    MARLSCHED_THROW(InputError,
                    "cannot create run directory '" << run_dir << "': " << ec.message());
  const std::string probe = run_dir + "/.write-probe-rank-" + std::to_string(rank);
  write_file(probe, "marlsched\n");
  std::filesystem::remove(probe, ec);
}

/// What a resume continues from, and what rank 0 moves to the run's quarantine first.
struct ResumePlan {
  std::string checkpoint;
  std::vector<std::string> quarantine;  ///< damaged checkpoint directories, trajectory segment
};

/// Chooses the checkpoint a resume of `run.run_dir` continues from and checks it against this
/// job. A damaged newest checkpoint or trajectory segment stops the resume with a message that
/// names the newest intact checkpoint, unless `quarantine_damaged`: then they are listed to be
/// moved aside. With it every rank checks every rank's checkpoint files, so that all ranks
/// choose the same checkpoint; without it each rank checks its own.
ResumePlan plan_resume(const RunConfig& run, const dist::Comm& comm, const std::string& fingerprint,
                       bool quarantine_damaged) {
  const std::string& dir = run.run_dir;
  auto all = checkpoints(dir);
  MARLSCHED_REQUIRE(!all.empty(), "--resume: no complete checkpoint in '"
                                      << dir << "/checkpoints' (train with --checkpoint-every N)");
  ResumePlan plan;
  if (quarantine_damaged) {
    while (!all.empty() && !checkpoint_damage(all.back()).empty()) {
      plan.quarantine.push_back(all.back());
      all.pop_back();
    }
    MARLSCHED_REQUIRE(!all.empty(), "--resume: every checkpoint in '"
                                        << dir
                                        << "/checkpoints' is damaged; there is nothing to resume "
                                           "from (start afresh with --force)");
  } else if (const auto damage = checkpoint_damage(all.back(), comm.rank()); !damage.empty()) {
    std::string intact;
    for (auto it = all.rbegin() + 1; it != all.rend() && intact.empty(); ++it)
      if (checkpoint_damage(*it).empty()) intact = *it;
    MARLSCHED_THROW(
        InputError,
        damage << "; "
               << (intact.empty() ? "no older checkpoint is intact either (start afresh with "
                                    "--force)"
                                  : "the newest intact checkpoint is " + intact +
                                        ": give --quarantine-damaged to move the damaged ones "
                                        "to " +
                                        dir + "/quarantine/ and resume from it"));
  }
  plan.checkpoint = all.back();
  // Its files were checked above (this rank's, or every rank's with quarantine_damaged).
  const Manifest m = validate_checkpoint(plan.checkpoint, comm.size(), run.agents_per_rank,
                                         run.envs_per_rank, fingerprint);
  MARLSCHED_REQUIRE(m.iteration <= run.iterations,
                    "--resume: the checkpoint holds "
                        << m.iteration << " iterations but --iterations is " << run.iterations
                        << "; a resume never shrinks a run (give --iterations " << m.iteration
                        << " or more)");
  if (comm.is_root()) {  // rank 0 alone reads, cuts and moves trajectory files
    try {
      check_segment_for_resume(dir, m.traj_segment, m.traj_rows);
    } catch (const InputError& e) {
      if (!quarantine_damaged)
        MARLSCHED_THROW(InputError,
                        e.what() << "; give --quarantine-damaged to move it to " << dir
                                 << "/quarantine/ and resume without it (the training state is "
                                    "in the checkpoint; the steps that file held are then only "
                                    "in the quarantine)");
      const std::string seg = traj_segment_path(dir, m.traj_segment);
      if (std::filesystem::exists(seg)) plan.quarantine.push_back(seg);
    }
  }
  return plan;
}

/// The resolved config as the run records it (config.toml, the trajectory files): the options,
/// then how the env read its input files, as comments (not options; the fingerprint that a
/// resume checks skips comments).
std::string config_record(const Command& cmd, const std::vector<std::string>& notes) {
  std::string text = cmd.binder->to_toml();
  if (!notes.empty()) text += "\n# Input files as read (not options):\n";
  for (const auto& note : notes) text += "# " + note + "\n";
  return text;
}

struct Prepared {
  std::unique_ptr<EnvFactory> factory;
  std::vector<std::string> input_notes;  ///< factory->input_notes(), printed and recorded
};

/// Phase 1 (no collectives): config file, validation, env data loading. `before_validate` (if
/// given) runs between resolving and validating the config, for checks that explain a mismatch
/// better than the env's agent count would.
Prepared prepare(Command& cmd, const dist::Comm& comm, bool needs_learner,
                 const std::function<void()>& before_validate = {}) {
  cmd.resolve(needs_learner);
  if (before_validate) before_validate();
  const int n = cmd.run.agents_per_rank * comm.size();
  const auto& entry = find_env(cmd.run.env);
  auto& ec = cmd.env_config();
  ec.validate(n);
  Prepared p;
  p.factory = entry.make_factory(ec, n);
  p.input_notes = p.factory->input_notes();
  if (comm.is_root())
    for (const auto& note : p.input_notes) std::cout << note << "\n";
  if (needs_learner) {
    cmd.learners.check_env(cmd.run.algo, p.factory->spec());
    check_env(cmd.run, p.factory->spec());
  }
  return p;
}

/// What train, eval and baselines have in common: Command's options, and phase 1 as one
/// sequence with a hook at each place where one of them checks more.
class RunCommand : public Subcommand {
 public:
  std::optional<int> validate(const dist::Comm& comm) override {
    before_prepare(comm);
    if (cmd_.print_config) {  // resolved values only: validation needs the real rank count
      if (!cmd_.config_path.empty()) apply_config_file(cmd_.app, *cmd_.binder, cmd_.config_path);
      if (comm.is_root()) std::cout << cmd_.binder->to_toml();
      return 0;
    }
    prep_ = prepare(cmd_, comm, needs_learner(), [&] { check_models(comm); });
    after_prepare(comm);
    set_torch_threads(cmd_.run.threads);
    if (comm.is_root() && blas_info().reference())
      std::cerr << "marlsched: warning: libtorch runs on the reference BLAS (" << blas_info().path
                << "), several times slower than an optimized one; install "
                   "libopenblas0-pthread (launch/install-deps.sh does)\n";
    after_threads(comm);
    return std::nullopt;
  }
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

  /// --baselines: every baseline of the env when none is named; each name must make one.
  void check_baselines(std::vector<std::string>& names) const {
    if (names.empty()) names = heuristic_names(cmd_.run.env);
    for (const auto& b : names) make_heuristic(b, prep_.factory->spec(), 0);
  }

  Command cmd_;
  Prepared prep_;
};

class TrainCommand : public RunCommand {
 public:
  CLI::App* add_to(CLI::App& app) override {
    cmd_.bind(app.add_subcommand("train", "train a learner (default: MAPPO on geodc)"));
    cmd_.app
        ->add_option("--resume", resume_dir_,
                     "continue RUN_DIR from its latest complete checkpoint (uses "
                     "RUN_DIR/config.toml unless --config is given)")
        ->check(CLI::ExistingDirectory);
    cmd_.app->add_flag(
        "--force", force_,
        "start afresh in a --run-dir that holds an earlier run: remove that run's files (config, "
        "metrics, models, checkpoints, trajectories, TensorBoard, evaluations; nothing else) "
        "first");
    cmd_.app->add_flag(
        "--quarantine-damaged", quarantine_damaged_,
        "on resume, move damaged checkpoints (and a damaged or unusable trajectory segment) to "
        "RUN_DIR/quarantine/ and continue from the newest intact checkpoint");
    cmd_.app->add_flag(
        "--auto-resume", auto_resume_,
        "continue from the newest complete checkpoint in --run-dir if it has one, else start "
        "fresh (for requeued batch jobs: the same command line works every time)");
    return cmd_.app;
  }

  int run(const dist::Comm& comm) override {
    const bool root = comm.is_root();
    const StopSignals stop_signals;
    if (root)
      for (const auto& damaged : resume_.quarantine)
        std::cerr << "marlsched: moved the damaged " << damaged << " to "
                  << quarantine(cmd_.run.run_dir, damaged) << "\n";
    if (!resume_.quarantine.empty() && root)
      std::cerr << "marlsched: resuming from " << resume_.checkpoint << "\n";
    comm.barrier();
    const auto summary =
        train(cmd_.run, learner_recipe(cmd_.run.algo, cmd_.learners, prep_.factory->spec()),
              *prep_.factory, comm, config_record(cmd_, prep_.input_notes), resume_.checkpoint);
    if (summary.stop_signal != 0) return kExitRequeue;
    // A stop signal during the last iteration: training is complete, evaluation is skipped.
    if (cmd_.run.eval_after && comm.allreduce_max(stop_requested()) == 0)
      evaluate_all(cmd_.run, cmd_.learners, *prep_.factory, comm,
                   LearnedPolicy{cmd_.run.run_dir, "", ""}, heuristic_names(cmd_.run.env),
                   cmd_.run.eval_greedy, cmd_.run.run_dir);
    return summary.parameters_identical ? 0 : 3;
  }

 private:
  void before_prepare(const dist::Comm&) override {
    MARLSCHED_REQUIRE(!force_ || resume_dir_.empty(),
                      "--force starts a run afresh; it does not go with --resume");
    if (!resume_dir_.empty() && cmd_.config_path.empty()) {
      MARLSCHED_REQUIRE(
          std::filesystem::exists(resume_dir_ + "/config.toml"),
          "--resume: '" << resume_dir_ << "' has no config.toml (not a run directory)");
      cmd_.config_path = resume_dir_ + "/config.toml";
    }
  }

  void after_prepare(const dist::Comm& comm) override {
    auto& run = cmd_.run;
    if (auto_resume_ && resume_dir_.empty() && latest_checkpoint(run.run_dir).has_value())
      resume_dir_ = run.run_dir;
    if (!resume_dir_.empty()) {
      run.run_dir = resume_dir_;
      resume_ =
          plan_resume(run, comm, config_fingerprint(cmd_.binder->to_toml()), quarantine_damaged_);
    }
    cmd_.learners.check_copies(run.algo, run.envs_per_rank);
    check_run_dir_writable(run.run_dir, comm.rank());
    run_lock_.emplace(run.run_dir, comm.rank());  // held until the job ends
    const auto earlier =
        resume_dir_.empty() ? run_artifacts(run.run_dir) : std::vector<std::string>{};
    if (!earlier.empty() && !force_) {
      std::string names;
      for (const auto& e : earlier) names += (names.empty() ? "" : ", ") + e;
      MARLSCHED_THROW(InputError,
                      "run directory '"
                          << run.run_dir << "' already holds a run (" << names << "): "
                          << (latest_checkpoint(run.run_dir)
                                  ? "continue it with --resume " + run.run_dir + ", "
                                  : std::string())
                          << "choose another --run-dir, or give --force to remove it and "
                             "start afresh");
    }
    if (!earlier.empty() && comm.is_root()) clear_run_artifacts(run.run_dir);
  }

  std::string resume_dir_;
  bool force_ = false, quarantine_damaged_ = false, auto_resume_ = false;
  std::optional<RunDirLock> run_lock_;  // a training's hold on its run directory, to the end
  ResumePlan resume_;
};

class EvalCommand : public RunCommand {
 public:
  CLI::App* add_to(CLI::App& app) override {
    cmd_.bind(app.add_subcommand(
        "eval",
        "evaluate a trained policy (a run, a checkpoint or an exported file) against every "
        "heuristic baseline on held-out seeds; env options choose other traces"));
    auto* a = cmd_.app;
    a->add_option("--model", run_dir_, "run directory holding the trained model")
        ->check(CLI::ExistingDirectory);
    a->add_option("--checkpoint", ckpt_, "a checkpoint directory of a trained run")
        ->check(CLI::ExistingDirectory);
    a->add_option("--policy", policy_, "a policy written by `marlsched export` (any rank count)")
        ->check(CLI::ExistingFile);
    a->add_option("--out", out_,
                  "where to write eval.csv, eval.md and eval-episodes.csv (default: a new "
                  "evals/K beside the model: in its run directory, the checkpoint's run "
                  "directory or the policy file's directory)");
    a->add_option("--baselines", baselines_,
                  "heuristics to compare against (default: all of the env's)")
        ->delimiter(',');
    a->add_flag("--greedy", greedy_,
                "take the most probable action (the default unless --eval-greedy false)");
    return a;
  }

  int run(const dist::Comm& comm) override {
    evaluate_all(cmd_.run, cmd_.learners, *prep_.factory, comm,
                 LearnedPolicy{run_dir_, ckpt_, policy_}, baselines_,
                 greedy_ || cmd_.run.eval_greedy, out_);
    return 0;
  }

 private:
  /// The run directory of the model evaluated: --model, or the checkpoint's run ("" for
  /// --policy).
  std::string model_run_dir() const {
    return !run_dir_.empty() ? run_dir_
           : !ckpt_.empty()  ? (std::filesystem::path(ckpt_) / "../..").lexically_normal().string()
                             : std::string();
  }

  void before_prepare(const dist::Comm& comm) override {
    MARLSCHED_REQUIRE((!run_dir_.empty()) + (!ckpt_.empty()) + (!policy_.empty()) == 1,
                      "eval needs exactly one of --model RUN_DIR, --checkpoint DIR, --policy FILE");
    const std::string meta = policy_.empty() ? "" : exported_policy_metadata(policy_);
    // The training configuration, unless --config gives one: the run's, the checkpoint's run's,
    // or the one stored in the exported policy.
    if (cmd_.config_path.empty()) {
      const std::string run_dir = model_run_dir();
      if (!run_dir.empty() && std::filesystem::exists(run_dir + "/config.toml")) {
        cmd_.config_path = run_dir + "/config.toml";
      } else if (!policy_.empty()) {
        const auto config = json_string_field(meta, "config");
        MARLSCHED_REQUIRE(!config.empty(),
                          "'" << policy_ << "' carries no training config: give --config");
        config_tmp_ = (std::filesystem::temp_directory_path() /
                       ("marlsched-eval-" + std::to_string(::getpid()) + ".toml"))
                          .string();
        write_file_atomic(config_tmp_, config);
        cmd_.config_path = config_tmp_;
      }
    }
    // An exported policy holds every agent: spread them over this job's ranks unless told.
    auto* apr = cmd_.app->get_option("--agents-per-rank");
    if (!policy_.empty() && apr->count() == 0) {
      const int n = json_int_field(meta, "num_agents");
      MARLSCHED_REQUIRE(n > 0 && n % comm.size() == 0, "'" << policy_ << "' holds " << n
                                                           << " agents, which " << comm.size()
                                                           << " ranks do not divide");
      apr->add_result(std::to_string(n / comm.size()));
      apr->run_callback();
    }
  }

  /// A run's models (or a checkpoint's) hold one rank's agents each: say plainly when this
  /// job's rank count differs or a model is missing, before the env checks its agent count.
  void check_models(const dist::Comm& comm) override {
    if (run_dir_.empty() && ckpt_.empty()) return;
    const std::string what = run_dir_.empty() ? ckpt_ : run_dir_;
    if (!ckpt_.empty()) {
      const int trained = read_manifest(ckpt_ + "/MANIFEST").ranks;
      MARLSCHED_REQUIRE(trained == comm.size(), "checkpoint '"
                                                    << what << "' was written by " << trained
                                                    << " ranks (one model per rank); run eval with "
                                                       "mpirun -n "
                                                    << trained);
      const std::string damage = checkpoint_damage(ckpt_, comm.rank());
      if (!damage.empty()) MARLSCHED_THROW(InputError, damage);
      return;
    }
    const int found = model_ranks(run_dir_, cmd_.env_config(), cmd_.run.agents_per_rank);
    MARLSCHED_REQUIRE(
        found == comm.size(),
        "'" << what << "' holds the models of " << found << " rank" << (found == 1 ? "" : "s")
            << " (model-rank-0.pt"
            << (found > 1 ? " to model-rank-" + std::to_string(found - 1) + ".pt" : std::string(""))
            << ", one per training rank) but this job has " << comm.size()
            << ": run eval with mpirun -n " << found
            << ", or export the run and evaluate the policy file (eval "
               "--policy) at any rank count");
    verify_archive(model_path(run_dir_, comm.rank()), "model");  // before phase 2 loads it
  }

  void after_threads(const dist::Comm& comm) override {
    if (!config_tmp_.empty()) std::filesystem::remove(config_tmp_);
    if (out_.empty())  // every rank alike: nothing creates it before phase 2
      out_ = next_eval_dir(!policy_.empty() ? std::filesystem::path(policy_).parent_path().string()
                                            : model_run_dir());
    if (!policy_.empty())  // loads, and was trained for this many agents
      load_exported_policy(policy_, prep_.factory->spec(), cmd_.run.agents_per_rank * comm.size(),
                           true);
    check_baselines(baselines_);
  }

  std::string run_dir_, ckpt_, policy_, out_, config_tmp_;
  std::vector<std::string> baselines_;  // default: every baseline of the env
  bool greedy_ = false;
};

class BaselinesCommand : public RunCommand {
 public:
  CLI::App* add_to(CLI::App& app) override {
    cmd_.bind(app.add_subcommand("baselines", "evaluate the heuristic baselines only"));
    cmd_.app->add_option("--baselines", list_, "heuristics to evaluate (default: all of the env's)")
        ->delimiter(',');
    return cmd_.app;
  }
  int run(const dist::Comm& comm) override {
    evaluate_all(cmd_.run, cmd_.learners, *prep_.factory, comm, LearnedPolicy{}, list_, false, "");
    return 0;
  }

 private:
  bool needs_learner() const override { return false; }
  void after_threads(const dist::Comm&) override { check_baselines(list_); }
  std::vector<std::string> list_;  // default: every baseline of the env
};

}  // namespace

void load_run_config(Command& cmd, CLI::App& scratch, const std::string& run_dir) {
  cmd.bind(&scratch);
  cmd.config_path = run_dir + "/config.toml";
  MARLSCHED_REQUIRE(std::filesystem::exists(cmd.config_path),
                    "'" << run_dir << "' has no config.toml (not a run directory)");
  cmd.resolve(true);
}

int model_ranks(const std::string& run_dir, const EnvConfig& ec, int k) {
  const int found = trained_ranks(run_dir);  // names a gap among the files
  const int defined = ec.defined_agents();
  const int expected = defined > 0 && k > 0 && defined % k == 0 ? defined / k : 0;
  MARLSCHED_REQUIRE(expected <= found, "'" << run_dir << "' lacks model-rank-" << found
                                           << ".pt: its config defines " << defined << " agents at "
                                           << k << " per rank, so " << expected
                                           << " ranks trained it, and that rank's model was "
                                              "removed or never saved");
  return found;
}

std::unique_ptr<Subcommand> make_train_command() {
  return std::make_unique<TrainCommand>();
}
std::unique_ptr<Subcommand> make_eval_command() {
  return std::make_unique<EvalCommand>();
}
std::unique_ptr<Subcommand> make_baselines_command() {
  return std::make_unique<BaselinesCommand>();
}

}  // namespace marlsched::cli
