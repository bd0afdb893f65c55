/// \file collect.cpp
/// `marlsched collect`: a dataset from any behaviour policy. The policy (a heuristic, a trained
/// run's or checkpoint's models, or an exported file), optionally ε-randomised, runs through the
/// training loop as a learner that never learns (train/behaviour.hpp), so the dataset is the
/// training run's trajectory file: same layout, ranks, flushes and metrics. One iteration is one
/// episode of every env copy.

#include <filesystem>
#include <iostream>
#include <sstream>

#include "commands.hpp"
#include "core/error.hpp"
#include "envs/baselines.hpp"
#include "run_command.hpp"
#include "train/behaviour.hpp"

namespace marlsched::cli {

namespace {

class CollectCommand : public RunCommand {
 public:
  CLI::App* add_to(CLI::App& app) override {
    cmd_.bind(app.add_subcommand(
        "collect",
        "write a dataset: run a behaviour policy (a heuristic, a trained run, a checkpoint or an "
        "exported policy, optionally epsilon-randomised) and log every transition to "
        "RUN_DIR/trajectories in the training layout (docs/hdf5-layout.md)"));
    auto* a = cmd_.app;
    a->add_option("--heuristic", heuristic_,
                  "a heuristic baseline of the env (`marlsched list`), e.g. least-loaded or "
                  "green-fit:0.1");
    model_.bind(a);
    a->add_option("--epsilon", epsilon_,
                  "with this probability an agent takes a uniformly random action instead of "
                  "the policy's (the episode's own draw: the same at every rank count)")
        ->check(CLI::Range(0.0, 1.0));
    a->add_option("--episodes", episodes_,
                  "episodes of every env copy (--envs-per-rank of them run side by side)")
        ->required()
        ->check(CLI::Range(1, 1 << 20));
    a->add_flag("--greedy", greedy_,
                "a learned policy takes its most probable action (default: it samples, as in "
                "training)");
    a->add_flag("--force", force_,
                "write into a --run-dir that holds an earlier run after removing that run's "
                "files");
    return a;
  }

  int run(const dist::Comm& comm) override {
    LearnerRecipe recipe;
    recipe.rollout_steps = prep_.factory->spec().episode_length;
    recipe.behaviour = behaviour_name();
    recipe.behaviour_epsilon = epsilon_;
    recipe.make = [this](const LearnerLayout& l) -> std::unique_ptr<Learner> {
      std::unique_ptr<Policy> policy;
      const Learner* learner = nullptr;
      if (!heuristic_.empty())
        policy = make_heuristic(heuristic_, *l.spec, cmd_.run.seed);
      else
        policy = make_learned_policy(cmd_.run, cmd_.learners, *l.spec, *l.comm, model_.learned(),
                                     greedy_, &learner);
      return std::make_unique<BehaviourLearner>(std::move(policy), learner, greedy_, epsilon_,
                                                l.spec->num_actions());
    };
    auto notes = prep_.input_notes;
    std::ostringstream what;
    what << "collect: behaviour policy " << recipe.behaviour << ", epsilon " << epsilon_ << ", "
         << episodes_ << " episodes of each of " << cmd_.run.envs_per_rank << " env copies";
    notes.push_back(what.str());
    const auto summary =
        train(cmd_.run, recipe, *prep_.factory, comm, config_record(cmd_, notes), "");
    if (summary.stop_signal != 0) return kExitRequeue;
    if (comm.is_root())
      std::cout << "dataset: " << traj_segment_path(cmd_.run.run_dir, 0) << " ("
                << summary.iterations << " episodes of each of " << cmd_.run.envs_per_rank
                << " env copies)" << std::endl;
    return 0;
  }

 private:
  bool needs_learner() const override {
    return !model_.run_dir.empty() || !model_.checkpoint.empty();
  }

  /// What the dataset names as its behaviour policy.
  std::string behaviour_name() const {
    if (!heuristic_.empty()) return heuristic_;
    const std::string kind = greedy_ ? " (greedy)" : " (sampling)";
    if (!model_.policy.empty()) return "exported policy " + model_.policy + kind;
    return cmd_.run.algo + " of " + (model_.run_dir.empty() ? model_.checkpoint : model_.run_dir) +
           kind;
  }

  void before_prepare(const dist::Comm& comm) override {
    MARLSCHED_REQUIRE(!heuristic_.empty() + model_.count() == 1,
                      "collect needs exactly one behaviour policy: --heuristic NAME, --model "
                      "RUN_DIR, --checkpoint DIR or --policy FILE");
    if (model_.count() == 1) model_.choose_config(cmd_, comm);
  }
  void check_models(const dist::Comm& comm) override { model_.check_models(cmd_, comm); }

  void after_prepare(const dist::Comm& comm) override {
    auto& run = cmd_.run;
    run.iterations = episodes_;
    run.eval_after = false;
    run.checkpoint_every = 0;  // a collection is rerun, not resumed
    if (run.traj.every <= 0) {
      run.traj.every = 10;
      if (comm.is_root())
        std::cout << "collect: the config turns trajectories off (traj-every = 0); writing them "
                     "every 10 episodes"
                  << std::endl;
    }
    const std::string source = model_.model_run_dir();
    MARLSCHED_REQUIRE(source.empty() || !std::filesystem::exists(run.run_dir) ||
                          !std::filesystem::equivalent(source, run.run_dir),
                      "collect would write into the run directory of its model ('"
                          << run.run_dir << "'): give another --run-dir");
    claim_run_dir(run, *cmd_.app, comm, force_, false, run_lock_);
  }

  void after_threads(const dist::Comm& comm) override {
    model_.check_loaded(cmd_, prep_, comm);
    if (!heuristic_.empty()) make_heuristic(heuristic_, prep_.factory->spec(), 0);
  }

  ModelSource model_;
  std::string heuristic_;
  double epsilon_ = 0.0;
  int episodes_ = 0;
  bool greedy_ = false, force_ = false;
  std::optional<RunDirLock> run_lock_;
};

}  // namespace

std::unique_ptr<Subcommand> make_collect_command() {
  return std::make_unique<CollectCommand>();
}

}  // namespace marlsched::cli
