/// \file gen_data.cpp
/// `marlsched gen-data`: every env's generated input files.

#include <iostream>
#include <memory>
#include <optional>
#include <vector>

#include "commands.hpp"

namespace marlsched::cli {

namespace {

/// `marlsched gen-data`: every env's generated input files (EnvEntry::make_generator), each env
/// binding its own flags.
class GenDataCommand : public Subcommand {
 public:
  CLI::App* add_to(CLI::App& app) override {
    auto* gen = app.add_subcommand("gen-data",
                                   "write the envs' generated input files: geodc's synthetic "
                                   "traces (Electricity Maps and price formats) and sample "
                                   "pai_task_table, lstcb's batch profiles");
    binder_ = std::make_unique<Binder>(gen);
    for (const auto& e : env_registry())
      if (e.make_generator) {
        generators_.push_back(e.make_generator());
        generators_.back()->bind(*binder_);
      }
    binder_->finish();
    return gen;
  }
  std::optional<int> validate(const dist::Comm& comm) override {
    (void)comm;
    for (const auto& g : generators_) g->validate();
    return std::nullopt;
  }
  int run(const dist::Comm& comm) override {
    if (!comm.is_root()) return 0;
    for (const auto& g : generators_)
      for (const auto& line : g->write()) std::cout << line << std::endl;
    return 0;
  }

 private:
  std::unique_ptr<Binder> binder_;
  std::vector<std::unique_ptr<DataGenerator>> generators_;
};

}  // namespace

std::unique_ptr<Subcommand> make_gen_data_command() {
  return std::make_unique<GenDataCommand>();
}

}  // namespace marlsched::cli
