#include "cli.hpp"

#include <CLI/CLI.hpp>

#include <climits>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>

#include <unistd.h>

#include "commands.hpp"
#include "core/blas.hpp"
#include "core/error.hpp"
#include "core/version.hpp"
#include "dist/watchdog.hpp"

namespace marlsched::cli {

void report_error(const std::string& line) {
  std::cout.flush();
  const std::string text = line + "\n";
  std::size_t off = 0;
  while (off < text.size()) {
    const auto n = ::write(2, text.data() + off, text.size() - off);
    if (n <= 0) break;
    off += static_cast<std::size_t>(n);
  }
}

std::string describe_parse_error(CLI::App& app, const CLI::ParseError& e) {
  std::string msg = e.what();
  const CLI::App* sub = &app;
  for (const CLI::App* s = &app; s != nullptr;) {  // the deepest subcommand parsed
    sub = s;
    const auto subs = s->get_subcommands();
    s = subs.empty() ? nullptr : subs.back();
  }
  std::istringstream words(msg.substr(msg.find(':') + 1));
  std::string w, hints;
  std::vector<std::string> names;
  for (const CLI::App* s : app.get_subcommands({})) names.push_back(s->get_name());
  if (sub == &app && !names.empty()) {  // none of its subcommands parsed: a misspelled one?
    for (const auto& arg : app.remaining()) {
      if (arg.rfind("-", 0) == 0) continue;
      const auto best = nearest_name(arg, names);
      hints = " ('" + arg + "' is not one" +
              (best.empty() ? "; `marlsched --help` lists them)" : ": did you mean " + best + "?)");
      break;
    }
    return msg + hints;
  }
  if (dynamic_cast<const CLI::ExtrasError*>(&e) == nullptr) return msg;
  while (words >> w) {
    if (w.rfind("--", 0) != 0) continue;
    const std::string key = w.substr(2, w.find('=') - 2);
    std::vector<std::string> names;
    for (const CLI::Option* o : sub->get_options())
      for (const auto& name : o->get_lnames()) names.push_back(name);
    if (const auto best = nearest_name(key, names); !best.empty())
      hints += (hints.empty() ? " (did you mean " : ", ") + std::string("--") + best;
  }
  return msg + (hints.empty() ? "" : hints + "?)");
}

std::vector<std::unique_ptr<Subcommand>> make_subcommands() {
  std::vector<std::unique_ptr<Subcommand>> v;
  v.push_back(make_train_command());
  v.push_back(make_eval_command());
  v.push_back(make_baselines_command());
  v.push_back(make_collect_command());
  v.push_back(make_gen_data_command());
  v.push_back(make_list_command());
  v.push_back(make_export_command());
  v.push_back(make_report_command());
  v.push_back(make_compare_command());
  v.push_back(make_slurm_command());
  return v;
}

namespace {

/// An exception's message, with the source location for internal errors only: a config or
/// input error is the user's to fix, and the location would only distract from what to fix.
std::string error_text(const std::exception& e) {
  // std::filesystem's own text ("filesystem error: cannot create directories: Permission
  // denied [R]") said plainly, with the path and the system's reason.
  if (const auto* fe = dynamic_cast<const std::filesystem::filesystem_error*>(&e)) {
    std::string text = "cannot use '" + fe->path1().string() + "'";
    if (!fe->path2().empty()) text += " (with '" + fe->path2().string() + "')";
    return text + ": " + fe->code().message();
  }
  const auto* me = dynamic_cast<const Error*>(&e);
  const bool internal = me != nullptr && !me->where().empty() &&
                        dynamic_cast<const ConfigError*>(&e) == nullptr &&
                        dynamic_cast<const InputError*>(&e) == nullptr;
  return std::string(e.what()) + (internal ? " (at " + me->where() + ")" : "");
}

/// CLI11's help, without the value a negated flag sets: `--eval-after,--no-eval-after{false}`
/// read as "defaults to false" for a flag whose default is true (the help text states it).
class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_option_name(const CLI::Option* opt, bool is_positional) const override {
    std::string name = CLI::Formatter::make_option_name(opt, is_positional);
    for (auto open = name.find('{'); open != std::string::npos; open = name.find('{')) {
      const auto close = name.find('}', open);
      if (close == std::string::npos) break;
      name.erase(open, close - open + 1);
    }
    return name;
  }
};

/// A command that rank 0 runs alone, with no collectives (export, report, slurm): the other
/// ranks return 0 at once; an error prints one line and gives exit code 2.
template <class F>
int serial_command(bool root, F&& body) {
  if (!root) return 0;
  try {
    return body();
  } catch (const std::exception& e) {
    report_error(std::string("marlsched: error: ") + e.what());
    return 2;
  }
}

}  // namespace

int run(int argc, char** argv, const dist::Comm& comm) {
  const bool root = comm.is_root();
  CLI::App app{
      "marlsched " MARLSCHED_VERSION
      ": multi-agent reinforcement-learning schedulers trained across MPI ranks.\n"
      "Each MPI rank hosts --agents-per-rank agents (data centers) with their env shards."};
  app.formatter(std::make_shared<HelpFormatter>());  // before the subcommands, which inherit it
  // --version names the BLAS that libtorch runs on and its thread count at start (the rank sets
  // it to --threads before any work): the two things besides the code that change a run's speed.
  app.set_version_flag("--version", [] {
    const int threads = blas_threads();
    return std::string("marlsched " MARLSCHED_VERSION " (" MARLSCHED_GIT_REVISION ")\nBLAS: ") +
           blas_info().describe() +
           (threads > 0 ? ", " + std::to_string(threads) + " thread(s)" : std::string());
  });
  app.require_subcommand(1);
  auto subcommands = make_subcommands();
  std::vector<CLI::App*> apps;
  for (auto& s : subcommands) apps.push_back(s->add_to(app));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {  // --help, --version: CLI11 prints them
      if (root) return app.exit(e);
      std::ostringstream sink;
      return app.exit(e, sink, sink);
    }
    // Bad input on the command line: one line and exit 2, as everywhere (CLI11's own codes,
    // 105-109, and its "Run with --help" trailer say less), with the nearest option for a typo.
    if (root) report_error("marlsched: error: " + describe_parse_error(app, e));
    return 2;
  }
  Subcommand* cmd = nullptr;
  for (std::size_t i = 0; i < apps.size(); ++i)
    if (apps[i]->parsed()) cmd = subcommands[i].get();
  MARLSCHED_CHECK(cmd != nullptr, "no subcommand parsed");
  if (cmd->serial()) return serial_command(root, [&] { return cmd->run(comm); });

  // Phase 1: everything that can fail on bad input, before any collective. Every rank runs the
  // same deterministic checks; the lowest failing rank reports and all exit with code 2.
  std::string failure;
  try {
    if (const auto done = cmd->validate(comm)) return *done;
  } catch (const std::exception& e) {
    failure = error_text(e);
  }
  const int bad = comm.allreduce_min(failure.empty() ? INT_MAX : comm.rank());
  if (bad != INT_MAX) {
    if (comm.rank() == bad)
      report_error("marlsched: error" + (bad != 0 ? " on rank " + std::to_string(bad) : "") + ": " +
                   failure);
    return 2;
  }

  // Phase 2: the run itself. An error here may leave peers inside a collective, so the failing
  // rank prints its message and aborts the whole job.
  try {
    const dist::Watchdog watchdog(cmd->watchdog_s(), comm.rank(), comm.size());
    return cmd->run(comm);
  } catch (const std::exception& e) {
    report_error("marlsched: error on rank " + std::to_string(comm.rank()) + " of " +
                 std::to_string(comm.size()) + ": " + error_text(e) + "; aborting the job");
    // Bad input found only while running (a trace value that overflows the reward, a learning
    // rate that overflows the update) exits 2 like all bad input; anything else 1.
    const bool bad_input = dynamic_cast<const InputError*>(&e) != nullptr ||
                           dynamic_cast<const ConfigError*>(&e) != nullptr ||
                           dynamic_cast<const std::filesystem::filesystem_error*>(&e) != nullptr;
    comm.abort(bad_input ? 2 : 1);
  }
}

}  // namespace marlsched::cli
