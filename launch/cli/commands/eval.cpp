/// \file eval.cpp
/// `marlsched eval`: evaluates a trained policy against the baselines on held-out episodes.

#include <filesystem>

#include "core/error.hpp"
#include "run_command.hpp"
#include "train/run_dir.hpp"

namespace marlsched::cli {

namespace {

class EvalCommand : public RunCommand {
 public:
  CLI::App* add_to(CLI::App& app) override {
    cmd_.bind(app.add_subcommand(
        "eval",
        "evaluate a trained policy (a run, a checkpoint or an exported file) against every "
        "heuristic baseline on held-out seeds; env options choose other traces"));
    auto* a = cmd_.app;
    model_.bind(a);
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
    evaluate_all(cmd_.run, cmd_.learners, *prep_.factory, comm, model_.learned(), baselines_,
                 greedy_ || cmd_.run.eval_greedy, out_);
    return 0;
  }

 private:
  void before_prepare(const dist::Comm& comm) override {
    MARLSCHED_REQUIRE(model_.count() == 1,
                      "eval needs exactly one of --model RUN_DIR, --checkpoint DIR, --policy FILE");
    model_.choose_config(cmd_, comm);
  }
  void check_models(const dist::Comm& comm) override { model_.check_models(cmd_, comm); }
  void after_threads(const dist::Comm& comm) override {
    model_.check_loaded(cmd_, prep_, comm);
    if (out_.empty())  // every rank alike: nothing creates it before phase 2
      out_ = next_eval_dir(!model_.policy.empty()
                               ? std::filesystem::path(model_.policy).parent_path().string()
                               : model_.model_run_dir());
    check_baselines(baselines_);
  }

  ModelSource model_;
  std::string out_;
  std::vector<std::string> baselines_;  // default: every baseline of the env
  bool greedy_ = false;
};

}  // namespace

std::unique_ptr<Subcommand> make_eval_command() {
  return std::make_unique<EvalCommand>();
}

}  // namespace marlsched::cli
