#pragma once
/// \file slurm.hpp
/// `marlsched slurm`: renders an sbatch script from the templates in slurm/ (compiled into the
/// binary) for a training job, a job-array sweep or an evaluation job, and submits it with
/// `sbatch` (or prints it with --dry-run). The rank count is derived from the config (agents it
/// defines / agents per rank) unless given; nodes and tasks per node follow from it.

#include <map>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace marlsched::cli {

struct SlurmOptions {
  std::string kind = "train";  ///< train | sweep | eval
  int ranks = 0;               ///< 0: agents the config defines / agents per rank
  int nodes = 0;               ///< 0: from ranks-per-node, else 1
  int ranks_per_node = 0;      ///< 0: ranks / nodes, rounded up
  int cpus_per_task = 0;       ///< 0: --threads
  std::string time = "01:00:00";
  std::string partition, account, job_name;
  int signal_seconds = 120;  ///< USR1 this long before the time limit (--signal=B:USR1@N)
  std::string sweep;         ///< sweep file: one line of extra train flags per array task
  int seeds = 0;  ///< a sweep of training seeds 1..N (one array task each) instead of a file
  int sweep_parallel = 0;           ///< at most this many array tasks at once (0: no limit)
  std::string model;                ///< eval: the trained run directory
  std::vector<std::string> sbatch;  ///< extra sbatch options, one "#SBATCH" line each
  bool dry_run = false;

  void add_to(CLI::App* app);
};

/// A rendered job: the script and the files it reads, all under `run_dir`.
struct SlurmJob {
  std::string run_dir;      ///< absolute
  std::string script_path;  ///< run_dir/job-KIND.sbatch
  std::string script;
  std::string config_path;  ///< run_dir/job-KIND.toml, the resolved configuration
  std::string config_text;
  std::vector<std::string> sweep_lines;  ///< written to run_dir/sweep.txt for a sweep
  int ranks = 0, nodes = 0, ranks_per_node = 0;
};

/// Replaces every {{KEY}} of `tmpl`; throws ConfigError on a key `vars` lacks.
std::string render_template(const std::string& tmpl,
                            const std::map<std::string, std::string>& vars);

/// Plans the job: rank layout, paths, and the rendered script. `defined_agents` is the env
/// config's agent count (0: any). Throws ConfigError with a clear message on a bad request.
SlurmJob plan_slurm_job(const SlurmOptions& o, int agents_per_rank, int defined_agents, int threads,
                        const std::string& run_dir, const std::string& config_text,
                        const std::string& binary);

/// Writes the job's files (script, resolved config, sweep file) under its run directory.
void write_slurm_job(const SlurmJob& job);

/// Writes the job's files and runs `sbatch --parsable`; prints the job id. Returns sbatch's
/// exit code.
int submit_slurm_job(const SlurmJob& job);

/// Whether `t` is a time limit sbatch accepts (--time).
bool valid_slurm_time(const std::string& t);

}  // namespace marlsched::cli
