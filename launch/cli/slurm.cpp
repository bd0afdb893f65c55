#include "slurm.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>

#include <sys/wait.h>

#include "core/error.hpp"
#include "core/file.hpp"
#include "slurm_templates.hpp"
#include "train/checkpoint.hpp"

namespace fs = std::filesystem;

namespace marlsched::cli {

bool valid_slurm_time(const std::string& t) {
  // sbatch --time: "minutes", "minutes:seconds", "hours:minutes:seconds", "days-hours",
  // "days-hours:minutes", "days-hours:minutes:seconds"; minutes and seconds below 60 after the
  // first field; "UNLIMITED" or "INFINITE".
  static const std::regex form(
      R"(^(\d{1,9})(:[0-5]?\d){0,2}$|^\d{1,9}-\d{1,9}(:[0-5]?\d){0,2}$|^(UNLIMITED|INFINITE)$)",
      std::regex::icase);
  return std::regex_match(t, form);
}

void SlurmOptions::add_to(CLI::App* app) {
  const std::string g = "Slurm";
  app->add_option("--kind", kind, "train (one job), sweep (a job array) or eval")
      ->check(CLI::IsMember({"train", "sweep", "eval"}))
      ->capture_default_str()
      ->group(g);
  // Counts given explicitly must be positive (0 is only the "derive it" default).
  const auto positive = CLI::Range(1, 1 << 20);
  app->add_option("--ranks", ranks, "MPI ranks (default: agents in the config / agents per rank)")
      ->check(positive)
      ->group(g);
  app->add_option("--nodes", nodes, "nodes (default: from --ranks-per-node, else 1)")
      ->check(positive)
      ->group(g);
  app->add_option("--ranks-per-node", ranks_per_node, "MPI ranks per node")
      ->check(positive)
      ->group(g);
  app->add_option("--cpus-per-task", cpus_per_task, "cores per rank (default: --threads)")
      ->check(positive)
      ->group(g);
  app->add_option("--time", time,
                  "time limit in a Slurm form: MINUTES, MINUTES:SECONDS, HOURS:MINUTES:SECONDS, "
                  "DAYS-HOURS, DAYS-HOURS:MINUTES, DAYS-HOURS:MINUTES:SECONDS or UNLIMITED")
      ->check(CLI::Validator(
          [](std::string& v) {
            return valid_slurm_time(v) ? std::string()
                                       : "'" + v +
                                             "' is not a Slurm time limit (e.g. 90, "
                                             "01:30:00, 2-00:00:00)";
          },
          "TIME"))
      ->capture_default_str()
      ->group(g);
  app->add_option("--partition", partition, "partition")->group(g);
  app->add_option("--account", account, "account")->group(g);
  app->add_option("--job-name", job_name, "job name (default: marlsched-KIND)")->group(g);
  app->add_option("--signal-seconds", signal_seconds,
                  "warning signal this many seconds before the time limit")
      ->check(CLI::Range(1, 65535))
      ->capture_default_str()
      ->group(g);
  app->add_option("--sweep", sweep,
                  "sweep file: each line holds the extra train flags of one array task")
      ->check(CLI::ExistingFile)
      ->group(g);
  app->add_option("--seeds", seeds,
                  "sweep: N training seeds of the config (array task K trains --seed K+1 into "
                  "RUN_DIR/task-K); compare them with `marlsched compare RUN_DIR/task-*`")
      ->check(positive)
      ->group(g);
  app->add_option("--sweep-parallel", sweep_parallel, "at most N array tasks at once")
      ->check(positive)
      ->group(g);
  app->add_option("--model", model, "eval: the trained run directory")
      ->check(CLI::ExistingDirectory)
      ->group(g);
  app->add_option("--sbatch", sbatch, "extra sbatch option, e.g. --sbatch=--qos=high (repeatable)")
      ->group(g);
  app->add_flag("--dry-run", dry_run,
                "write the job script and the files it reads, print it, and do not submit it")
      ->group(g);
}

std::string render_template(const std::string& tmpl,
                            const std::map<std::string, std::string>& vars) {
  std::string out;
  std::size_t pos = 0;
  while (true) {
    const auto open = tmpl.find("{{", pos);
    if (open == std::string::npos) break;
    const auto close = tmpl.find("}}", open);
    if (close == std::string::npos) MARLSCHED_THROW(ConfigError, "template: unclosed '{{'");
    const std::string key = tmpl.substr(open + 2, close - open - 2);
    const auto it = vars.find(key);
    if (it == vars.end()) MARLSCHED_THROW(ConfigError, "template: no value for {{" << key << "}}");
    out += tmpl.substr(pos, open - pos) + it->second;
    pos = close + 2;
  }
  return out + tmpl.substr(pos);
}

namespace {

/// Paths go into the script unquoted (#SBATCH lines cannot quote): refuse what a shell would split.
void require_plain_path(const std::string& what, const std::string& p) {
  MARLSCHED_REQUIRE(
      p.find_first_of(" \t\n\"'`$\\;&|<>()*?[]{}#") == std::string::npos,
      what << " '" << p << "' contains spaces or shell characters; use a plain path for Slurm");
}

/// Names that go into #SBATCH lines (job name, partition, account): one word of printable
/// characters; a newline would start a line of the script, a space split the option.
void require_plain_word(const std::string& what, const std::string& v) {
  bool ok = !v.empty();
  for (char c : v)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f ||
        std::string("\"'`$\\;&|<>()*?[]{}#").find(c) != std::string::npos)
      ok = false;
  std::string shown;  // control characters written out, so that the message is one line
  for (char c : v) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') {
      shown += "\\n";
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      shown += buf;
    } else {
      shown += c;
    }
  }
  MARLSCHED_REQUIRE(ok, what << " '" << shown
                             << "' must be one word of printable characters without shell "
                                "characters (it goes into an #SBATCH line of the job script)");
}

std::vector<std::string> read_sweep(const std::string& path) {
  std::ifstream in(path);
  MARLSCHED_REQUIRE(in, "cannot read the sweep file '" << path << "'");
  std::vector<std::string> lines;
  int lineno = 0;
  for (std::string line; std::getline(in, line);) {
    ++lineno;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    MARLSCHED_REQUIRE(line.find_first_of("\"'`$\\;&|<>") == std::string::npos,
                      path << ":" << lineno
                           << ": a sweep line holds plain flags separated by spaces (no quotes or "
                              "shell characters)");
    lines.push_back(line);
  }
  MARLSCHED_REQUIRE(!lines.empty(), "the sweep file '" << path << "' has no task lines");
  return lines;
}

}  // namespace

SlurmJob plan_slurm_job(const SlurmOptions& o, int agents_per_rank, int defined_agents, int threads,
                        const std::string& run_dir, const std::string& config_text,
                        const std::string& binary) {
  SlurmJob job;
  job.ranks = o.ranks;
  if (job.ranks == 0) {
    MARLSCHED_REQUIRE(defined_agents > 0,
                      "the config does not fix the number of agents (replicate-sites): give "
                      "--ranks");
    MARLSCHED_REQUIRE(defined_agents % agents_per_rank == 0,
                      "the config defines " << defined_agents << " agents, which "
                                            << agents_per_rank << " agents per rank do not divide");
    job.ranks = defined_agents / agents_per_rank;
  }
  MARLSCHED_REQUIRE(job.ranks >= 1, "--ranks must be >= 1, got " << job.ranks);
  MARLSCHED_REQUIRE(o.nodes >= 0 && o.ranks_per_node >= 0 && o.cpus_per_task >= 0,
                    "--nodes, --ranks-per-node and --cpus-per-task must be >= 0");
  if (o.nodes > 0 && o.ranks_per_node > 0)
    MARLSCHED_REQUIRE(o.nodes * o.ranks_per_node >= job.ranks,
                      o.nodes << " nodes x " << o.ranks_per_node << " ranks per node cannot hold "
                              << job.ranks << " ranks");
  job.nodes = o.nodes > 0            ? o.nodes
              : o.ranks_per_node > 0 ? (job.ranks + o.ranks_per_node - 1) / o.ranks_per_node
                                     : 1;
  MARLSCHED_REQUIRE(job.nodes <= job.ranks,
                    job.nodes << " nodes for " << job.ranks << " ranks leaves a node idle");
  job.ranks_per_node =
      o.ranks_per_node > 0 ? o.ranks_per_node : (job.ranks + job.nodes - 1) / job.nodes;
  MARLSCHED_REQUIRE(o.signal_seconds >= 1, "--signal-seconds must be >= 1");
  MARLSCHED_REQUIRE(!o.time.empty(), "--time must not be empty");
  MARLSCHED_REQUIRE(o.kind != "sweep" || o.sweep.empty() != (o.seeds == 0),
                    "--kind sweep needs one of --sweep FILE and --seeds N");
  MARLSCHED_REQUIRE(o.kind == "sweep" || (o.sweep.empty() && o.seeds == 0),
                    "--sweep and --seeds need --kind sweep");
  MARLSCHED_REQUIRE(o.seeds >= 0, "--seeds must be >= 1, got " << o.seeds);
  MARLSCHED_REQUIRE(o.kind != "eval" || !o.model.empty(), "--kind eval needs --model RUN_DIR");

  job.run_dir = fs::absolute(run_dir).lexically_normal().string();
  while (job.run_dir.size() > 1 && job.run_dir.back() == '/') job.run_dir.pop_back();
  require_plain_path("the run directory", job.run_dir);
  require_plain_path("the marlsched binary", binary);
  const std::string model =
      o.model.empty() ? "" : fs::absolute(o.model).lexically_normal().string();
  if (!model.empty()) require_plain_path("--model", model);
  job.script_path = job.run_dir + "/job-" + o.kind + ".sbatch";
  job.config_path = job.run_dir + "/job-" + o.kind + ".toml";
  job.config_text = config_text;

  if (!o.partition.empty()) require_plain_word("--partition", o.partition);
  if (!o.account.empty()) require_plain_word("--account", o.account);
  if (!o.job_name.empty()) require_plain_word("--job-name", o.job_name);
  std::ostringstream lines;
  if (!o.partition.empty()) lines << "#SBATCH --partition=" << o.partition << "\n";
  if (!o.account.empty()) lines << "#SBATCH --account=" << o.account << "\n";
  std::string output = job.run_dir + "/slurm-%j.out";
  if (o.kind == "sweep") {
    if (o.seeds > 0)
      for (int k = 1; k <= o.seeds; ++k) job.sweep_lines.push_back("--seed " + std::to_string(k));
    else
      job.sweep_lines = read_sweep(o.sweep);
    lines << "#SBATCH --array=0-" << job.sweep_lines.size() - 1;
    if (o.sweep_parallel > 0) lines << "%" << o.sweep_parallel;
    lines << "\n";
    output = job.run_dir + "/slurm-%A_%a.out";
  }
  for (const auto& s : o.sbatch) {
    require_plain_path("--sbatch", s);
    lines << "#SBATCH " << s << "\n";
  }
  std::string extra = lines.str();
  if (!extra.empty()) extra.pop_back();  // the template line ends with its own newline

  // Open MPI's shared-memory transport: two concurrent srun jobs on one node crashed here in
  // mca_btl_vader with the default backing directory (Open MPI 4.1.4, Slurm 22.05), and ran
  // with one directory per job. Each job start makes (and removes) its own in /dev/shm on every
  // node. The job id alone is not unique on a node that two Slurm clusters share (the test
  // suite's two clusters both ran a job 1 at once, and one's clean-up removed the other's
  // directory under its starting ranks): the batch shell's PID makes it so.
  const std::string each_node = "srun --ntasks-per-node=1 --ntasks=\"${SLURM_JOB_NUM_NODES}\" ";
  const std::string shm_setup =
      "# Open MPI shared memory: one backing directory per job start on every node (see "
      "launch/cli/slurm.cpp)\n"
      "MARLSCHED_SHM=/dev/shm/marlsched-${SLURM_JOB_ID}-$$\n"
      "export OMPI_MCA_btl_vader_backing_directory=$MARLSCHED_SHM\n" +
      each_node + "mkdir -p \"$MARLSCHED_SHM\"";
  const std::string shm_cleanup = each_node + "rm -rf \"$MARLSCHED_SHM\"";
  const std::map<std::string, std::string> vars = {
      {"SHM_SETUP", shm_setup},
      {"SHM_CLEANUP", shm_cleanup},
      {"KIND", o.kind},
      {"JOB_NAME", o.job_name.empty() ? "marlsched-" + o.kind : o.job_name},
      {"NODES", std::to_string(job.nodes)},
      {"RANKS", std::to_string(job.ranks)},
      {"RANKS_PER_NODE", std::to_string(job.ranks_per_node)},
      {"AGENTS_PER_RANK", std::to_string(agents_per_rank)},
      {"CPUS_PER_TASK", std::to_string(o.cpus_per_task > 0 ? o.cpus_per_task : threads)},
      {"TIME", o.time},
      {"OUTPUT", output},
      {"SIGNAL_SECONDS", std::to_string(o.signal_seconds)},
      {"SBATCH_LINES", extra},
      {"RUN_DIR", job.run_dir},
      {"CONFIG", job.config_path},
      {"MARLSCHED", binary},
      {"MODEL", model},
  };
  job.script =
      render_template(o.kind == "eval" ? slurm_templates::kEval : slurm_templates::kTrain, vars);
  return job;
}

void write_slurm_job(const SlurmJob& job) {
  make_dirs(job.run_dir);
  write_file_atomic(job.config_path, job.config_text);
  if (!job.sweep_lines.empty()) {
    std::string s;
    for (const auto& l : job.sweep_lines) s += l + "\n";
    write_file_atomic(job.run_dir + "/sweep.txt", s);
  }
  write_file_atomic(job.script_path, job.script);
  fs::permissions(job.script_path, fs::perms::owner_exec, fs::perm_options::add);
}

int submit_slurm_job(const SlurmJob& job) {
  write_slurm_job(job);
  const std::string cmd = "sbatch --parsable '" + job.script_path + "' 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  MARLSCHED_REQUIRE(p != nullptr, "cannot run sbatch");
  std::string out;
  char buf[256];
  while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
  const int status = ::pclose(p);
  const int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  MARLSCHED_REQUIRE(rc == 0, "sbatch failed (exit " << rc << "): " << out);
  std::cout << "submitted job " << out.substr(0, out.find(';')) << ": " << job.script_path << " ("
            << job.ranks << " ranks on " << job.nodes << " node(s))" << std::endl;
  return 0;
}

}  // namespace marlsched::cli
