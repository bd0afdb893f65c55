/// \file list.cpp
/// `marlsched list`: the environments, learners and baselines.

#include <iostream>
#include <string>

#include "commands.hpp"
#include "envs/baselines.hpp"

namespace marlsched::cli {

namespace {

class ListCommand : public Subcommand {
 public:
  CLI::App* add_to(CLI::App& app) override {
    return app.add_subcommand("list", "list environments, learners and baselines");
  }
  int run(const dist::Comm& comm) override {
    if (!comm.is_root()) return 0;
    std::cout << "environments:\n";
    for (const auto& e : env_registry())
      std::cout << "  " << e.name << "  " << e.description << "\n";
    std::cout << "learners:\n";
    for (const auto& l : learner_names())
      std::cout << "  " << l << std::string(l.size() < 8 ? 8 - l.size() : 1, ' ')
                << learner_description(l) << "\n";
    std::cout << "baselines:\n";
    for (const auto& e : env_registry()) {
      std::cout << "  " << e.name << ":";
      for (const auto& b : heuristic_names(e.name)) std::cout << " " << b;
      std::cout << "\n";
    }
    return 0;
  }
};

}  // namespace

std::unique_ptr<Subcommand> make_list_command() {
  return std::make_unique<ListCommand>();
}

}  // namespace marlsched::cli
