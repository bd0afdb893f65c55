/// \file tool_commands.cpp
/// The subcommands around training: gen-data, list, export, report, compare and slurm.

#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include <unistd.h>

#include "commands.hpp"
#include "core/error.hpp"
#include "core/file.hpp"
#include "core/version.hpp"
#include "envs/baselines.hpp"
#include "report.hpp"
#include "slurm.hpp"
#include "train/run_dir.hpp"

namespace marlsched::cli {

namespace {

/// A JSON string literal.
std::string json(const std::string& v) {
  std::string o = "\"";
  for (unsigned char c : v) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += static_cast<char>(c);
    } else if (c == '\n') {
      o += "\\n";
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      o += buf;
    } else {
      o += static_cast<char>(c);
    }
  }
  return o + "\"";
}
std::string json(const std::vector<std::string>& v) {
  std::string o = "[";
  for (std::size_t i = 0; i < v.size(); ++i) o += (i ? ", " : "") + json(v[i]);
  return o + "]";
}

/// `marlsched export RUN_DIR`: every rank's saved learner, loaded in this one process, exported
/// as one TorchScript module.
void export_policy(const std::string& run_dir, const std::string& out, bool with_critic) {
  CLI::App scratch;
  Command cmd;
  load_run_config(cmd, scratch, run_dir);
  auto& ec = cmd.env_config();
  const int k = cmd.run.agents_per_rank, ranks = model_ranks(run_dir, ec, k), n = ranks * k;
  ec.validate(n);
  const auto factory = find_env(cmd.run.env).make_factory(ec, n);
  const EnvSpec& spec = factory->spec();
  dist::Comm self(MPI_COMM_SELF, false);
  std::vector<std::unique_ptr<Learner>> learners;
  std::vector<const Learner*> view;
  for (int r = 0; r < ranks; ++r) {
    // The run's env copies per rank: a learner that keeps per-copy state (tsdqn) checks it.
    learners.push_back(make_learner(cmd.run.algo, cmd.learners, spec, self, n, r * k, k,
                                    cmd.run.envs_per_rank, cmd.run.seed, baseline_maker(spec)));
    learners.back()->load(model_path(run_dir, r));
    view.push_back(learners.back().get());
  }
  std::string config;
  {
    std::ifstream in(run_dir + "/config.toml");
    config.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::ostringstream meta;
  meta << "{\n  \"format\": \"marlsched-policy\",\n  \"format_version\": 1,\n"
       << "  \"marlsched_version\": " << json(MARLSCHED_VERSION) << ",\n"
       << "  \"git_revision\": " << json(MARLSCHED_GIT_REVISION) << ",\n"
       << "  \"env\": " << json(spec.name) << ",\n  \"algo\": " << json(cmd.run.algo) << ",\n"
       << "  \"num_agents\": " << n << ",\n  \"obs_dim\": " << spec.obs_dim() << ",\n"
       << "  \"obs_fields\": " << json(spec.obs_fields) << ",\n"
       << "  \"num_public_obs_fields\": " << spec.num_public << ",\n"
       << "  \"action_names\": " << json(spec.action_names) << ",\n"
       << "  \"shared_actor\": " << (cmd.learners.shared(cmd.run.algo) ? "true" : "false") << ",\n"
       << "  \"critic\": " << (with_critic ? "true" : "false") << ",\n"
       << "  \"input\": "
       << json(
              "obs: float32 [num_agents, obs_dim] or [batch, num_agents, obs_dim], the raw "
              "observations of every agent in obs_fields order (an agent needs its own and the "
              "first num_public_obs_fields of every site); agent: int, 0 <= agent < num_agents")
       << ",\n  \"output\": "
       << json(cmd.run.algo == "dqn"
                   ? "forward(obs, agent, deterministic=False) -> (probs [.., num_actions], "
                     "action), the greedy policy (probs one-hot); probs(obs, agent); "
                     "q(obs, agent) -> Q-values [.., num_actions]"
                   : "forward(obs, agent, deterministic=False) -> (probs [.., num_actions], "
                     "action); probs(obs, agent); value(obs, agent) when critic is true")
       << ",\n  \"trained_ranks\": " << ranks << ",\n  \"agents_per_rank\": " << k << ",\n"
       << "  \"config\": " << json(config) << "\n}\n";
  export_learners(cmd.run.algo, view, out + ".tmp", meta.str(), with_critic);
  std::filesystem::rename(out + ".tmp", out);
  std::cout << "exported "
            << (cmd.learners.shared(cmd.run.algo) ? "the shared network" : "every agent's network")
            << (with_critic ? " and the critic" : "") << " of " << n << " agents to " << out
            << std::endl;
}

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

class ExportCommand : public Subcommand {
 public:
  CLI::App* add_to(CLI::App& app) override {
    auto* exp = app.add_subcommand(
        "export",
        "write a trained run's policy as TorchScript (loads in PyTorch and libtorch), with its "
        "metadata");
    exp->add_option("run_dir", run_, "the trained run directory")
        ->required()
        ->check(CLI::ExistingDirectory);
    exp->add_option("--out", out_, "output file (default RUN_DIR/policy.pt)");
    exp->add_flag("--critic", critic_, "include the centralized critic (method value)");
    return exp;
  }
  bool serial() const override { return true; }
  int run(const dist::Comm&) override {  // rank 0 alone reads every rank's model
    if (const auto holder = run_dir_holder(run_); !holder.empty())
      std::cerr << "marlsched: warning: '" << run_ << "' is in use by a running training ("
                << holder
                << "): export reads the models it has written so far (its last "
                   "completed run or segment), not the one it is training\n";
    export_policy(run_, out_.empty() ? run_ + "/policy.pt" : out_, critic_);
    return 0;
  }

 private:
  std::string run_, out_;
  bool critic_ = false;
};

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

std::unique_ptr<Subcommand> make_gen_data_command() {
  return std::make_unique<GenDataCommand>();
}
std::unique_ptr<Subcommand> make_list_command() {
  return std::make_unique<ListCommand>();
}
std::unique_ptr<Subcommand> make_export_command() {
  return std::make_unique<ExportCommand>();
}
std::unique_ptr<Subcommand> make_report_command() {
  return std::make_unique<ReportCommand>();
}
std::unique_ptr<Subcommand> make_compare_command() {
  return std::make_unique<CompareCommand>();
}
std::unique_ptr<Subcommand> make_slurm_command() {
  return std::make_unique<SlurmCommand>();
}

}  // namespace marlsched::cli
