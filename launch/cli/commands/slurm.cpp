/// \file slurm.cpp
/// `marlsched slurm`: writes (and submits) a Slurm job for a run, a sweep or an evaluation.

#include <filesystem>
#include <iostream>
#include <sstream>

#include <unistd.h>

#include "commands.hpp"
#include "core/error.hpp"
#include "core/file.hpp"
#include "slurm.hpp"

namespace marlsched::cli {

namespace {

/// Applies every line of a sweep to the job's configuration as its array task will (`train
/// --config JOB.toml LINE...`) and validates the result for the job's rank count, so that a
/// misspelled flag or a bad value stops the submission instead of the task.
void check_sweep_lines(const SlurmJob& job) {
  if (job.sweep_lines.empty()) return;
  const std::string tmp = (std::filesystem::temp_directory_path() /
                           ("marlsched-sweep-" + std::to_string(::getpid()) + ".toml"))
                              .string();
  write_file_atomic(tmp, job.config_text);
  struct Remove {
    std::string path;
    ~Remove() { std::filesystem::remove(path); }
  } remove{tmp};
  for (std::size_t i = 0; i < job.sweep_lines.size(); ++i) {
    const std::string& line = job.sweep_lines[i];
    CLI::App scratch("sweep line", "train");
    Command t;
    t.bind(&scratch);
    std::vector<std::string> args;
    std::istringstream words(line);
    for (std::string w; words >> w;) args.push_back(w);
    args.insert(args.begin(), {"--config", tmp});
    const std::string where = "sweep line " + std::to_string(i + 1) + " ('" + line + "'): ";
    // The job script gives these itself (slurm/train.sbatch.in): a line that gives one again
    // would fail in every array task.
    for (std::size_t j = 2; j < args.size(); ++j)  // after the "--config TMP" put first
      for (const char* own : {"--config", "--run-dir", "--auto-resume", "--resume", "--threads"})
        if (args[j] == own || args[j].rfind(std::string(own) + "=", 0) == 0)
          MARLSCHED_THROW(ConfigError,
                          where << own
                                << " is set by the job script for every task (each trains into "
                                   "RUN_DIR/task-K with --auto-resume, --threads from "
                                   "--cpus-per-task, and the job's config): leave it out of the "
                                   "sweep line");
    try {
      scratch.parse(std::vector<std::string>(args.rbegin(), args.rend()));  // CLI11: reversed
      t.resolve(true);
      t.env_config().validate(job.ranks * t.run.agents_per_rank);
    } catch (const CLI::ParseError& e) {
      MARLSCHED_THROW(ConfigError, where << describe_parse_error(scratch, e));
    } catch (const std::exception& e) {
      MARLSCHED_THROW(ConfigError, where << e.what());
    }
  }
}

class SlurmCommand : public Subcommand {
 public:
  CLI::App* add_to(CLI::App& app) override {
    auto* slurm_app = app.add_subcommand(
        "slurm",
        "write a Slurm job script (training, a job-array sweep or evaluation) for the given "
        "config and submit it with sbatch (--dry-run writes and prints it without submitting); "
        "takes every train option");
    opts_.add_to(slurm_app);  // first, so that --help lists its own options before train's
    cmd_.bind(slurm_app);
    return slurm_app;
  }
  bool serial() const override { return true; }
  int run(const dist::Comm&) override {  // rank 0 alone writes and submits
    auto& c = cmd_;
    if (opts_.kind == "eval" && c.config_path.empty() && !opts_.model.empty() &&
        std::filesystem::exists(opts_.model + "/config.toml"))
      c.config_path = opts_.model + "/config.toml";
    c.resolve(true);
    auto& ec = c.env_config();
    const auto job = plan_slurm_job(opts_, c.run.agents_per_rank, ec.defined_agents(),
                                    c.run.threads, c.run.run_dir, c.binder->to_toml(),
                                    std::filesystem::read_symlink("/proc/self/exe").string());
    ec.validate(job.ranks * c.run.agents_per_rank);
    check_sweep_lines(job);
    if (opts_.dry_run) {  // the files the script reads are written, nothing is submitted
      write_slurm_job(job);
      std::cout << job.script << std::flush;
      std::cerr << "marlsched: dry run: wrote " << job.script_path << " and the files it reads; "
                << "submit it with sbatch " << job.script_path << "\n";
      return 0;
    }
    return submit_slurm_job(job);
  }

 private:
  Command cmd_;
  SlurmOptions opts_;
};

}  // namespace

std::unique_ptr<Subcommand> make_slurm_command() {
  return std::make_unique<SlurmCommand>();
}

}  // namespace marlsched::cli
