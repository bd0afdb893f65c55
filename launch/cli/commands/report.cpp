/// \file report.cpp
/// `marlsched report`: a run's training curves and evaluation as a page.

#include <iostream>
#include <string>

#include "commands.hpp"
#include "envs/baselines.hpp"
#include "report.hpp"

namespace marlsched::cli {

namespace {

class ReportCommand : public Subcommand {
 public:
  CLI::App* add_to(CLI::App& app) override {
    auto* rep = app.add_subcommand(
        "report",
        "draw a run's training curves and evaluation comparison as SVG (training.svg, "
        "eval.svg in the run directory)");
    rep->add_option("run_dir", run_, "the run directory")
        ->required()
        ->check(CLI::ExistingDirectory);
    return rep;
  }
  bool serial() const override { return true; }
  int run(const dist::Comm&) override {
    for (const auto& f : write_report(run_, heuristic_names())) std::cout << "wrote " << f << "\n";
    return 0;
  }

 private:
  std::string run_;
};

}  // namespace

std::unique_ptr<Subcommand> make_report_command() {
  return std::make_unique<ReportCommand>();
}

}  // namespace marlsched::cli
