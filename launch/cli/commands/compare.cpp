/// \file compare.cpp
/// `marlsched compare`: several runs' evaluations, paired, with intervals.

#include <iostream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "envs/baselines.hpp"
#include "report.hpp"

namespace marlsched::cli {

namespace {

class CompareCommand : public Subcommand {
 public:
  CLI::App* add_to(CLI::App& app) override {
    auto* cmp = app.add_subcommand(
        "compare",
        "aggregate several training seeds evaluated on the same held-out episodes: per policy "
        "the mean and IQM with 95 % intervals, the paired difference to the best heuristic, the "
        "probability of improvement and the oracle gap; comparison.{csv,md,svg}");
    cmp->add_option("run_dirs", runs_, "run directories (each with eval-episodes.csv)")
        ->required()
        ->check(CLI::ExistingDirectory);
    cmp->add_option("--out", out_, "directory for comparison.{csv,md,svg}")->capture_default_str();
    cmp->add_option("--resamples", resamples_, "bootstrap resamples")->capture_default_str();
    cmp->add_option("--versus", versus_,
                    "the policy the differences are to, by its name in eval.csv (e.g. \"bc "
                    "(greedy)\" of runs given too; seed i paired with its seed i); default: the "
                    "best heuristic");
    return cmp;
  }
  bool serial() const override { return true; }
  int run(const dist::Comm&) override {
    for (const auto& f : write_comparison(runs_, heuristic_names(), out_, resamples_, versus_))
      std::cout << "wrote " << f << "\n";
    return 0;
  }

 private:
  std::vector<std::string> runs_;
  std::string out_ = "runs/compare", versus_;
  int resamples_ = 5000;
};

}  // namespace

std::unique_ptr<Subcommand> make_compare_command() {
  return std::make_unique<CompareCommand>();
}

}  // namespace marlsched::cli
