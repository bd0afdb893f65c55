/// \file baselines.cpp
/// `marlsched baselines`: evaluates the env's baselines alone.

#include "run_command.hpp"

namespace marlsched::cli {

namespace {

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

std::unique_ptr<Subcommand> make_baselines_command() {
  return std::make_unique<BaselinesCommand>();
}

}  // namespace marlsched::cli
