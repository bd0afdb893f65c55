/// \file train.cpp
/// `marlsched train`: trains a learner (or resumes a run), then evaluates it against the baselines.

#include <climits>
#include <filesystem>
#include <functional>
#include <iostream>
#include <optional>

#include <unistd.h>

#include "agents/exported/torchscript_policy.hpp"
#include "agents/model_archive.hpp"
#include "agents/torch_threads.hpp"
#include "core/blas.hpp"
#include "core/error.hpp"
#include "core/file.hpp"
#include "envs/baselines.hpp"
#include "io/trajectory.hpp"
#include "run_command.hpp"
#include "train/checkpoint.hpp"
#include "train/manifest.hpp"
#include "train/run_dir.hpp"

namespace marlsched::cli {

namespace {

/// --init-from: a run or checkpoint directory whose models were written by as many ranks as this
/// job has, with this rank's model intact (the learner checks its layout: check_init).
void check_init_from(const std::string& source, const dist::Comm& comm) {
  MARLSCHED_REQUIRE(std::filesystem::is_directory(source),
                    "--init-from '" << source << "' is not a run or checkpoint directory");
  const bool ckpt = std::filesystem::exists(source + "/MANIFEST");
  const int ranks = ckpt ? read_manifest(source + "/MANIFEST").ranks : trained_ranks(source);
  MARLSCHED_REQUIRE(ranks == comm.size(),
                    "--init-from '" << source << "' holds the models of " << ranks
                                    << " ranks (one per training rank) "
                                       "but this job has "
                                    << comm.size() << ": start it with mpirun -n " << ranks);
  verify_archive(init_model_path(source, comm.rank()), "model");
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
        train(cmd_.run,
              learner_recipe(cmd_.run.algo, cmd_.learners, prep_.factory->spec(),
                             baseline_maker(prep_.factory->spec())),
              *prep_.factory, comm, config_record(cmd_, prep_.input_notes), resume_.checkpoint);
    if (summary.stop_signal != 0) return kExitRequeue;
    // A stop signal during the last iteration: training is complete, evaluation is skipped.
    if (cmd_.run.eval_after && comm.allreduce_max(stop_requested()) == 0)
      evaluate_all(cmd_.run, cmd_.learners, *prep_.factory, comm,
                   LearnedPolicy{cmd_.run.run_dir, "", ""}, default_baselines(cmd_.run.env),
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
      check_sealed_config(cmd_.config_path);
    }
  }

  /// Before the env checks the agent count: a resume at another rank count is named as such
  /// (the env would blame its site list).
  void check_models(const dist::Comm& comm) override {
    const std::string dir = !resume_dir_.empty() ? resume_dir_
                            : auto_resume_       ? cmd_.run.run_dir
                                                 : "";
    if (dir.empty()) return;
    const auto latest = latest_checkpoint(dir);
    if (!latest) return;  // plan_resume says there is nothing to resume
    Manifest m;
    try {
      m = read_manifest(*latest + "/MANIFEST");
    } catch (const std::exception&) {
      return;  // a damaged manifest: plan_resume names it and the intact checkpoint
    }
    MARLSCHED_REQUIRE(m.ranks == comm.size(),
                      "--resume: '" << dir << "' was trained by " << m.ranks << " rank"
                                    << (m.ranks == 1 ? "" : "s") << " (its checkpoints hold one "
                                    << "state per rank) and this job has " << comm.size()
                                    << ": resume it with mpirun -n " << m.ranks);
  }

  void after_prepare(const dist::Comm& comm) override {
    auto& run = cmd_.run;
    if (auto_resume_ && resume_dir_.empty() && latest_checkpoint(run.run_dir).has_value())
      resume_dir_ = run.run_dir;
    if (!resume_dir_.empty()) {
      run.run_dir = resume_dir_;
      // Before its checkpoints and trajectories are read: a live job's files being written are
      // not damage (a second --auto-resume racing a running resume said they were).
      run_lock_.emplace(run.run_dir, comm.rank());
      resume_ = plan_resume(
          run, comm, config_fingerprint(cmd_.binder->to_toml(), cmd_.run.resumable_options()),
          quarantine_damaged_);
    }
    cmd_.learners.check_copies(run.algo, run.envs_per_rank);
    cmd_.learners.check_inputs(run.algo, prep_.factory->spec(), run.agents_per_rank * comm.size(),
                               comm.rank(), comm.size());
    if (resume_dir_.empty() && !run.init_from.empty()) {
      check_init_from(run.init_from, comm);
      cmd_.learners.check_init(run.algo, prep_.factory->spec(), run.agents_per_rank * comm.size(),
                               run.agents_per_rank, init_model_path(run.init_from, comm.rank()));
    }
    claim_run_dir(run, *cmd_.app, comm, force_, !resume_dir_.empty(),
                  run_lock_);  // held until the job ends
  }

  std::string resume_dir_;
  bool force_ = false, quarantine_damaged_ = false, auto_resume_ = false;
  std::optional<RunDirLock> run_lock_;  // a training's hold on its run directory, to the end
  ResumePlan resume_;
};

}  // namespace

std::unique_ptr<Subcommand> make_train_command() {
  return std::make_unique<TrainCommand>();
}

}  // namespace marlsched::cli
