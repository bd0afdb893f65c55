#include "cli.hpp"

#include <CLI/CLI.hpp>

#include <charconv>
#include <climits>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <sstream>

#include <unistd.h>

#include "agents/archive_check.hpp"
#include "agents/baselines/heuristics.hpp"
#include "agents/exported/torchscript_policy.hpp"
#include "agents/registry.hpp"
#include "config_file.hpp"
#include "core/blas.hpp"
#include "core/csv.hpp"
#include "core/error.hpp"
#include "core/rng.hpp"
#include "core/version.hpp"
#include "dist/watchdog.hpp"
#include "envs/registry.hpp"
#include "evaluate_all.hpp"
#include "geodc/geodc.hpp"
#include "geodc/traces.hpp"
#include "geodc/workload.hpp"
#include "io/trajectory.hpp"
#include "lstcb/lstcb.hpp"
#include "report.hpp"
#include "slurm.hpp"
#include "train/checkpoint.hpp"
#include "train/manifest.hpp"
#include "train/run_dir.hpp"
#include "train/trainer.hpp"

namespace marlsched::cli {

namespace {

/// Writes one line to stderr with a single write(2), so that it is not interleaved with other
/// ranks' output on a shared terminal or pipe.
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

/// Creates the run directory if needed and proves that this rank can write into it, so that a
/// read-only or full file system fails before training with one message instead of later.
void check_run_dir_writable(const std::string& run_dir, int rank) {
  std::error_code ec;
  std::filesystem::create_directories(run_dir, ec);
  if (ec)
    MARLSCHED_THROW(InputError,
                    "cannot create run directory '" << run_dir << "': " << ec.message());
  const std::string probe = run_dir + "/.write-probe-rank-" + std::to_string(rank);
  write_file(probe, "marlsched\n");
  std::filesystem::remove(probe, ec);
}

/// An exception's message, with the source location for internal errors only: a config or
/// input error is the user's to fix, and the location would only distract from what to fix.
std::string error_text(const std::exception& e) {
  const auto* me = dynamic_cast<const Error*>(&e);
  const bool internal = me != nullptr && !me->where().empty() &&
                        dynamic_cast<const ConfigError*>(&e) == nullptr &&
                        dynamic_cast<const InputError*>(&e) == nullptr;
  return std::string(e.what()) + (internal ? " (at " + me->where() + ")" : "");
}

/// CLI11's message for a command-line error, with the nearest known option for each unknown
/// --flag (searched in the subcommand being parsed).
std::string describe_parse_error(CLI::App& app, const CLI::ParseError& e) {
  std::string msg = e.what();
  if (dynamic_cast<const CLI::ExtrasError*>(&e) == nullptr) return msg;
  const CLI::App* sub = &app;
  for (const CLI::App* s = &app; s != nullptr;) {  // the deepest subcommand parsed
    sub = s;
    const auto subs = s->get_subcommands();
    s = subs.empty() ? nullptr : subs.back();
  }
  std::istringstream words(msg.substr(msg.find(':') + 1));
  std::string w, hints;
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

/// Everything a run-like subcommand binds.
struct Command {
  CLI::App* app = nullptr;
  std::unique_ptr<Binder> binder;
  RunConfig run;
  LearnerConfigs learners;
  std::vector<std::unique_ptr<EnvConfig>> envs;  // one per registered env, registry order
  std::string config_path;
  bool print_config = false;

  void bind(CLI::App* a) {
    app = a;
    binder = std::make_unique<Binder>(a);
    a->add_option("--config", config_path, "TOML config file; flags given too override it")
        ->check(CLI::ExistingFile);
    a->add_flag("--print-config", print_config,
                "print the resolved configuration as TOML and exit");
    run.bind(*binder, learner_names());
    for (const auto& e : env_registry()) {
      envs.push_back(e.make_config());
      envs.back()->bind(*binder);
    }
    learners.bind(*binder);
  }
  /// Applies the config file (if any; flags win) and validates the run and learner options.
  void resolve(bool needs_learner) {
    if (!config_path.empty()) apply_config_file(app, *binder, config_path);
    run.validate();
    if (needs_learner) learners.validate(run.algo);
  }
  EnvConfig& env_config() {
    const auto& reg = env_registry();
    for (std::size_t i = 0; i < reg.size(); ++i)
      if (reg[i].name == run.env) return *envs[i];
    find_env(run.env);  // throws with the known names
    return *envs[0];
  }
};

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

/// Reads a trained run's config.toml into `cmd` (bound to a scratch parser of its own).
void load_run_config(Command& cmd, CLI::App& scratch, const std::string& run_dir) {
  cmd.bind(&scratch);
  cmd.config_path = run_dir + "/config.toml";
  MARLSCHED_REQUIRE(std::filesystem::exists(cmd.config_path),
                    "'" << run_dir << "' has no config.toml (not a run directory)");
  cmd.resolve(true);
}

/// What a resume continues from, and what rank 0 moves to the run's quarantine first.
struct ResumePlan {
  std::string checkpoint;
  std::vector<std::string> quarantine;  ///< damaged checkpoint directories, trajectory segment
};

/// Chooses the checkpoint a resume of `run.run_dir` continues from and checks it against this
/// job. A damaged newest checkpoint or trajectory segment stops the resume with a message that
/// names the newest intact checkpoint, unless `quarantine_damaged`: then they are listed to be
/// moved aside. With it every rank checks every rank's checkpoint files, so that all ranks
/// choose the same checkpoint; without it each rank checks its own.
ResumePlan plan_resume(const RunConfig& run, const dist::Comm& comm, const std::string& fingerprint,
                       bool quarantine_damaged) {
  const std::string& dir = run.run_dir;
  auto all = checkpoints(dir);
  MARLSCHED_REQUIRE(!all.empty(), "--resume: no complete checkpoint in '"
                                      << dir << "/checkpoints' (train with --checkpoint-every N)");
  ResumePlan plan;
  if (quarantine_damaged) {
    while (!all.empty() && !checkpoint_damage(all.back()).empty()) {
      plan.quarantine.push_back(all.back());
      all.pop_back();
    }
    MARLSCHED_REQUIRE(!all.empty(), "--resume: every checkpoint in '"
                                        << dir
                                        << "/checkpoints' is damaged; there is nothing to resume "
                                           "from (start afresh with --force)");
  } else if (const auto damage = checkpoint_damage(all.back(), comm.rank()); !damage.empty()) {
    std::string intact;
    for (auto it = all.rbegin() + 1; it != all.rend() && intact.empty(); ++it)
      if (checkpoint_damage(*it).empty()) intact = *it;
    MARLSCHED_THROW(
        InputError,
        damage << "; "
               << (intact.empty() ? "no older checkpoint is intact either (start afresh with "
                                    "--force)"
                                  : "the newest intact checkpoint is " + intact +
                                        ": give --quarantine-damaged to move the damaged ones "
                                        "to " +
                                        dir + "/quarantine/ and resume from it"));
  }
  plan.checkpoint = all.back();
  // Its files were checked above (this rank's, or every rank's with quarantine_damaged).
  const Manifest m = validate_checkpoint(plan.checkpoint, comm.size(), run.agents_per_rank,
                                         run.envs_per_rank, fingerprint);
  MARLSCHED_REQUIRE(m.iteration <= run.iterations,
                    "--resume: the checkpoint holds "
                        << m.iteration << " iterations but --iterations is " << run.iterations
                        << "; a resume never shrinks a run (give --iterations " << m.iteration
                        << " or more)");
  if (comm.is_root()) {  // rank 0 alone reads, cuts and moves trajectory files
    try {
      check_segment_for_resume(dir, m.traj_segment, m.traj_rows);
    } catch (const InputError& e) {
      if (!quarantine_damaged)
        MARLSCHED_THROW(InputError,
                        e.what() << "; give --quarantine-damaged to move it to " << dir
                                 << "/quarantine/ and resume without it (the training state is "
                                    "in the checkpoint; the steps that file held are then only "
                                    "in the quarantine)");
      const std::string seg = traj_segment_path(dir, m.traj_segment);
      if (std::filesystem::exists(seg)) plan.quarantine.push_back(seg);
    }
  }
  return plan;
}

/// The rank count of a trained run from its model files (trained_ranks), also naming a missing
/// last model-rank-R.pt where the run's config defines its agent count (`ec`, `k` per rank).
int model_ranks(const std::string& run_dir, const EnvConfig& ec, int k) {
  const int found = trained_ranks(run_dir);  // names a gap among the files
  const int defined = ec.defined_agents();
  const int expected = defined > 0 && k > 0 && defined % k == 0 ? defined / k : 0;
  MARLSCHED_REQUIRE(expected <= found, "'" << run_dir << "' lacks model-rank-" << found
                                           << ".pt: its config defines " << defined << " agents at "
                                           << k << " per rank, so " << expected
                                           << " ranks trained it, and that rank's model was "
                                              "removed or never saved");
  return found;
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
    learners.push_back(
        make_learner(cmd.run.algo, cmd.learners, spec, self, n, r * k, k, 1, cmd.run.seed));
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

/// The resolved config as the run records it (config.toml, the trajectory files): the options,
/// then how the env read its input files, as comments (not options; the fingerprint that a
/// resume checks skips comments).
std::string config_record(const Command& cmd, const std::vector<std::string>& notes) {
  std::string text = cmd.binder->to_toml();
  if (!notes.empty()) text += "\n# Input files as read (not options):\n";
  for (const auto& note : notes) text += "# " + note + "\n";
  return text;
}

struct Prepared {
  std::unique_ptr<EnvFactory> factory;
  std::vector<std::string> input_notes;  ///< factory->input_notes(), printed and recorded
};

/// Phase 1 (no collectives): config file, validation, env data loading. `before_validate` (if
/// given) runs between resolving and validating the config, for checks that explain a mismatch
/// better than the env's agent count would.
Prepared prepare(Command& cmd, const dist::Comm& comm, bool needs_learner,
                 const std::function<void()>& before_validate = {}) {
  cmd.resolve(needs_learner);
  if (before_validate) before_validate();
  const int n = cmd.run.agents_per_rank * comm.size();
  const auto& entry = find_env(cmd.run.env);
  auto& ec = cmd.env_config();
  ec.validate(n);
  Prepared p;
  p.factory = entry.make_factory(ec, n);
  p.input_notes = p.factory->input_notes();
  if (comm.is_root())
    for (const auto& note : p.input_notes) std::cout << note << "\n";
  if (needs_learner) {
    cmd.learners.check_env(cmd.run.algo, p.factory->spec());
    check_env(cmd.run, p.factory->spec());
  }
  return p;
}

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

  Command train_cmd, eval_cmd, base_cmd;
  train_cmd.bind(app.add_subcommand("train", "train a learner (default: MAPPO on geodc)"));
  std::string resume_dir;
  train_cmd.app
      ->add_option("--resume", resume_dir,
                   "continue RUN_DIR from its latest complete checkpoint (uses RUN_DIR/config.toml "
                   "unless --config is given)")
      ->check(CLI::ExistingDirectory);
  bool force = false;
  train_cmd.app->add_flag(
      "--force", force,
      "start afresh in a --run-dir that holds an earlier run: remove that run's files (config, "
      "metrics, models, checkpoints, trajectories, TensorBoard, evaluations; nothing else) first");
  bool quarantine_damaged = false;
  train_cmd.app->add_flag(
      "--quarantine-damaged", quarantine_damaged,
      "on resume, move damaged checkpoints (and a damaged or unusable trajectory segment) to "
      "RUN_DIR/quarantine/ and continue from the newest intact checkpoint");
  bool auto_resume = false;
  train_cmd.app->add_flag(
      "--auto-resume", auto_resume,
      "continue from the newest complete checkpoint in --run-dir if it has one, else start "
      "fresh (for requeued batch jobs: the same command line works every time)");
  eval_cmd.bind(app.add_subcommand(
      "eval",
      "evaluate a trained policy (a run, a checkpoint or an exported file) against every "
      "heuristic baseline on held-out seeds; env options choose other traces"));
  std::string eval_run_dir, eval_ckpt, eval_policy, eval_out, eval_config_tmp;
  // The run directory of the model evaluated: --model, or the checkpoint's run ("" for --policy).
  auto eval_model_run_dir = [&] {
    return !eval_run_dir.empty() ? eval_run_dir
           : !eval_ckpt.empty()
               ? (std::filesystem::path(eval_ckpt) / "../..").lexically_normal().string()
               : std::string();
  };
  std::vector<std::string> eval_baselines;  // default: every baseline of the env
  bool greedy = false;
  eval_cmd.app->add_option("--model", eval_run_dir, "run directory holding the trained model")
      ->check(CLI::ExistingDirectory);
  eval_cmd.app->add_option("--checkpoint", eval_ckpt, "a checkpoint directory of a trained run")
      ->check(CLI::ExistingDirectory);
  eval_cmd.app
      ->add_option("--policy", eval_policy,
                   "a policy written by `marlsched export` (any rank count)")
      ->check(CLI::ExistingFile);
  eval_cmd.app->add_option("--out", eval_out,
                           "where to write eval.csv, eval.md and eval-episodes.csv (default: a "
                           "new evals/K beside the model: in its run directory, the checkpoint's "
                           "run directory or the policy file's directory)");
  eval_cmd.app
      ->add_option("--baselines", eval_baselines,
                   "heuristics to compare against (default: all of the env's)")
      ->delimiter(',');
  eval_cmd.app->add_flag("--greedy", greedy,
                         "take the most probable action (the default unless --eval-greedy false)");
  base_cmd.bind(app.add_subcommand("baselines", "evaluate the heuristic baselines only"));
  std::vector<std::string> base_list;  // default: every baseline of the env
  base_cmd.app
      ->add_option("--baselines", base_list, "heuristics to evaluate (default: all of the env's)")
      ->delimiter(',');

  auto* gen = app.add_subcommand(
      "gen-data",
      "write the project's synthetic traces (Electricity Maps and price formats) and a "
      "sample pai_task_table");
  std::string gen_out = "data/generated";
  int gen_days = 14, gen_tasks = 200;
  gen->add_option("--out", gen_out, "output directory")->capture_default_str();
  gen->add_option("--days", gen_days, "days of hourly trace per zone")
      ->capture_default_str()
      ->check(CLI::Range(1, 36600));
  gen->add_option("--tasks", gen_tasks, "rows of the sample pai_task_table")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000000));
  std::string gen_profiles = "data/lstcb/batch_profiles.csv";
  gen->add_option("--profiles-out", gen_profiles, "where to write the lstcb batch profiles")
      ->capture_default_str();
  auto* list = app.add_subcommand("list", "list environments, learners and baselines");
  auto* exp = app.add_subcommand(
      "export",
      "write a trained run's policy as TorchScript (loads in PyTorch and libtorch), with its "
      "metadata");
  std::string export_run, export_out;
  bool export_critic = false;
  exp->add_option("run_dir", export_run, "the trained run directory")
      ->required()
      ->check(CLI::ExistingDirectory);
  exp->add_option("--out", export_out, "output file (default RUN_DIR/policy.pt)");
  exp->add_flag("--critic", export_critic, "include the centralized critic (method value)");
  auto* rep = app.add_subcommand(
      "report",
      "draw a run's training curves and evaluation comparison as SVG (training.svg, "
      "eval.svg in the run directory)");
  std::string report_run;
  rep->add_option("run_dir", report_run, "the run directory")
      ->required()
      ->check(CLI::ExistingDirectory);
  auto* cmp = app.add_subcommand(
      "compare",
      "aggregate several training seeds evaluated on the same held-out episodes: per policy the "
      "mean and IQM with 95 % intervals, the paired difference to the best heuristic, the "
      "probability of improvement and the oracle gap; comparison.{csv,md,svg}");
  std::vector<std::string> compare_runs;
  std::string compare_out = "runs/compare";
  int compare_resamples = 5000;
  cmp->add_option("run_dirs", compare_runs, "run directories (each with eval-episodes.csv)")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmp->add_option("--out", compare_out, "directory for comparison.{csv,md,svg}")
      ->capture_default_str();
  cmp->add_option("--resamples", compare_resamples, "bootstrap resamples")->capture_default_str();

  Command slurm_cmd;
  auto* slurm_app = app.add_subcommand(
      "slurm",
      "write a Slurm job script (training, a job-array sweep or evaluation) for the given "
      "config and submit it with sbatch (--dry-run writes and prints it without submitting); "
      "takes every train option");
  SlurmOptions slurm_opts;
  slurm_opts.add_to(slurm_app);  // first, so that --help lists its own options before train's
  slurm_cmd.bind(slurm_app);

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

  if (exp->parsed())  // rank 0 alone reads every rank's model
    return serial_command(root, [&] {
      export_policy(export_run, export_out.empty() ? export_run + "/policy.pt" : export_out,
                    export_critic);
      return 0;
    });
  if (cmp->parsed())
    return serial_command(root, [&] {
      for (const auto& f :
           write_comparison(compare_runs, heuristic_names(), compare_out, compare_resamples))
        std::cout << "wrote " << f << "\n";
      return 0;
    });
  if (rep->parsed())
    return serial_command(root, [&] {
      for (const auto& f : write_report(report_run, heuristic_names()))
        std::cout << "wrote " << f << "\n";
      return 0;
    });
  if (slurm_cmd.app->parsed())  // rank 0 alone writes and submits
    return serial_command(root, [&] {
      auto& c = slurm_cmd;
      if (slurm_opts.kind == "eval" && c.config_path.empty() && !slurm_opts.model.empty() &&
          std::filesystem::exists(slurm_opts.model + "/config.toml"))
        c.config_path = slurm_opts.model + "/config.toml";
      c.resolve(true);
      auto& ec = c.env_config();
      const auto job = plan_slurm_job(slurm_opts, c.run.agents_per_rank, ec.defined_agents(),
                                      c.run.threads, c.run.run_dir, c.binder->to_toml(),
                                      std::filesystem::read_symlink("/proc/self/exe").string());
      ec.validate(job.ranks * c.run.agents_per_rank);
      check_sweep_lines(job);
      if (slurm_opts.dry_run) {  // the files the script reads are written, nothing is submitted
        write_slurm_job(job);
        std::cout << job.script << std::flush;
        std::cerr << "marlsched: dry run: wrote " << job.script_path << " and the files it reads; "
                  << "submit it with sbatch " << job.script_path << "\n";
        return 0;
      }
      return submit_slurm_job(job);
    });

  // Phase 1: everything that can fail on bad input, before any collective. Every rank runs the
  // same deterministic checks; the lowest failing rank reports and all exit with code 2.
  Command* cmd = train_cmd.app->parsed()  ? &train_cmd
                 : eval_cmd.app->parsed() ? &eval_cmd
                 : base_cmd.app->parsed() ? &base_cmd
                                          : nullptr;
  Prepared prep;
  std::optional<RunDirLock> run_lock;  // a training's hold on its run directory, to the end
  std::string failure;
  ResumePlan resume;
  try {
    MARLSCHED_REQUIRE(cmd != &train_cmd || !force || resume_dir.empty(),
                      "--force starts a run afresh; it does not go with --resume");
    if (cmd == &train_cmd && !resume_dir.empty() && train_cmd.config_path.empty()) {
      MARLSCHED_REQUIRE(
          std::filesystem::exists(resume_dir + "/config.toml"),
          "--resume: '" << resume_dir << "' has no config.toml (not a run directory)");
      train_cmd.config_path = resume_dir + "/config.toml";
    }
    if (cmd == &eval_cmd) {
      MARLSCHED_REQUIRE(
          (!eval_run_dir.empty()) + (!eval_ckpt.empty()) + (!eval_policy.empty()) == 1,
          "eval needs exactly one of --model RUN_DIR, --checkpoint DIR, --policy FILE");
      const std::string meta = eval_policy.empty() ? "" : exported_policy_metadata(eval_policy);
      // The training configuration, unless --config gives one: the run's, the checkpoint's run's,
      // or the one stored in the exported policy.
      if (eval_cmd.config_path.empty()) {
        const std::string run_dir = eval_model_run_dir();
        if (!run_dir.empty() && std::filesystem::exists(run_dir + "/config.toml")) {
          eval_cmd.config_path = run_dir + "/config.toml";
        } else if (!eval_policy.empty()) {
          const auto config = json_string_field(meta, "config");
          MARLSCHED_REQUIRE(!config.empty(),
                            "'" << eval_policy << "' carries no training config: give --config");
          eval_config_tmp = (std::filesystem::temp_directory_path() /
                             ("marlsched-eval-" + std::to_string(::getpid()) + ".toml"))
                                .string();
          write_file_atomic(eval_config_tmp, config);
          eval_cmd.config_path = eval_config_tmp;
        }
      }
      // An exported policy holds every agent: spread them over this job's ranks unless told.
      auto* apr = eval_cmd.app->get_option("--agents-per-rank");
      if (!eval_policy.empty() && apr->count() == 0) {
        const int n = json_int_field(meta, "num_agents");
        MARLSCHED_REQUIRE(n > 0 && n % comm.size() == 0, "'" << eval_policy << "' holds " << n
                                                             << " agents, which " << comm.size()
                                                             << " ranks do not divide");
        apr->add_result(std::to_string(n / comm.size()));
        apr->run_callback();
      }
    }
    if (cmd != nullptr) {
      if (cmd->print_config) {  // resolved values only: validation needs the real rank count
        if (!cmd->config_path.empty()) apply_config_file(cmd->app, *cmd->binder, cmd->config_path);
        if (root) std::cout << cmd->binder->to_toml();
        return 0;
      }
      // A run's models (or a checkpoint's) hold one rank's agents each: say plainly when this
      // job's rank count differs or a model is missing, before the env checks its agent count.
      auto check_models = [&] {
        if (cmd != &eval_cmd || (eval_run_dir.empty() && eval_ckpt.empty())) return;
        const std::string what = eval_run_dir.empty() ? eval_ckpt : eval_run_dir;
        if (!eval_ckpt.empty()) {
          const int trained = read_manifest(eval_ckpt + "/MANIFEST").ranks;
          MARLSCHED_REQUIRE(trained == comm.size(),
                            "checkpoint '" << what << "' was written by " << trained
                                           << " ranks (one model per rank); run eval with "
                                              "mpirun -n "
                                           << trained);
          const std::string damage = checkpoint_damage(eval_ckpt, comm.rank());
          if (!damage.empty()) MARLSCHED_THROW(InputError, damage);
          return;
        }
        const int found =
            model_ranks(eval_run_dir, eval_cmd.env_config(), eval_cmd.run.agents_per_rank);
        MARLSCHED_REQUIRE(found == comm.size(),
                          "'" << what << "' holds the models of " << found << " rank"
                              << (found == 1 ? "" : "s") << " (model-rank-0.pt"
                              << (found > 1 ? " to model-rank-" + std::to_string(found - 1) + ".pt"
                                            : std::string(""))
                              << ", one per training rank) but this job has " << comm.size()
                              << ": run eval with mpirun -n " << found
                              << ", or export the run and evaluate the policy file (eval "
                                 "--policy) at any rank count");
        verify_archive(model_path(eval_run_dir, comm.rank()), "model");  // before phase 2 loads it
      };
      prep = prepare(*cmd, comm, cmd != &base_cmd, check_models);
      if (cmd == &train_cmd && auto_resume && resume_dir.empty() &&
          latest_checkpoint(train_cmd.run.run_dir).has_value())
        resume_dir = train_cmd.run.run_dir;
      if (cmd == &train_cmd && !resume_dir.empty()) {
        train_cmd.run.run_dir = resume_dir;
        resume = plan_resume(train_cmd.run, comm, config_fingerprint(train_cmd.binder->to_toml()),
                             quarantine_damaged);
      }
      if (cmd == &train_cmd) {
        train_cmd.learners.check_copies(train_cmd.run.algo, train_cmd.run.envs_per_rank);
        check_run_dir_writable(train_cmd.run.run_dir, comm.rank());
        run_lock.emplace(train_cmd.run.run_dir, comm.rank());  // held until the job ends
        const auto earlier =
            resume_dir.empty() ? run_artifacts(train_cmd.run.run_dir) : std::vector<std::string>{};
        if (!earlier.empty() && !force) {
          std::string names;
          for (const auto& e : earlier) names += (names.empty() ? "" : ", ") + e;
          MARLSCHED_THROW(InputError,
                          "run directory '"
                              << train_cmd.run.run_dir << "' already holds a run (" << names
                              << "): "
                              << (latest_checkpoint(train_cmd.run.run_dir)
                                      ? "continue it with --resume " + train_cmd.run.run_dir + ", "
                                      : std::string())
                              << "choose another --run-dir, or give --force to remove it and "
                                 "start afresh");
        }
        if (!earlier.empty() && root) clear_run_artifacts(train_cmd.run.run_dir);
      }
      set_torch_threads(cmd->run.threads);
      if (root && blas_info().reference())
        std::cerr << "marlsched: warning: libtorch runs on the reference BLAS (" << blas_info().path
                  << "), several times slower than an optimized one; install "
                     "libopenblas0-pthread (launch/install-deps.sh does)\n";
    }
    if (cmd == &eval_cmd) {
      if (!eval_config_tmp.empty()) std::filesystem::remove(eval_config_tmp);
      if (eval_out.empty())  // every rank alike: nothing creates it before phase 2
        eval_out = next_eval_dir(!eval_policy.empty()
                                     ? std::filesystem::path(eval_policy).parent_path().string()
                                     : eval_model_run_dir());
      if (!eval_policy.empty()) {  // loads, and was trained for this many agents
        load_exported_policy(eval_policy, prep.factory->spec(),
                             eval_cmd.run.agents_per_rank * comm.size(), true);
      }
      if (eval_baselines.empty()) eval_baselines = heuristic_names(eval_cmd.run.env);
      for (const auto& b : eval_baselines) make_heuristic(b, prep.factory->spec(), 0);
    }
    if (cmd == &base_cmd) {
      if (base_list.empty()) base_list = heuristic_names(base_cmd.run.env);
      for (const auto& b : base_list) make_heuristic(b, prep.factory->spec(), 0);
    }
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
    const dist::Watchdog watchdog(cmd != nullptr ? cmd->run.watchdog_s : 0.0, comm.rank(),
                                  comm.size());
    if (cmd == &train_cmd) {
      const StopSignals stop_signals;
      if (root)
        for (const auto& damaged : resume.quarantine)
          std::cerr << "marlsched: moved the damaged " << damaged << " to "
                    << quarantine(train_cmd.run.run_dir, damaged) << "\n";
      if (!resume.quarantine.empty() && root)
        std::cerr << "marlsched: resuming from " << resume.checkpoint << "\n";
      comm.barrier();
      const auto summary =
          train(train_cmd.run,
                learner_recipe(train_cmd.run.algo, train_cmd.learners, prep.factory->spec()),
                *prep.factory, comm, config_record(train_cmd, prep.input_notes), resume.checkpoint);
      if (summary.stop_signal != 0) return kExitRequeue;
      // A stop signal during the last iteration: training is complete, evaluation is skipped.
      if (train_cmd.run.eval_after && comm.allreduce_max(stop_requested()) == 0)
        evaluate_all(train_cmd.run, train_cmd.learners, *prep.factory, comm,
                     LearnedPolicy{train_cmd.run.run_dir, "", ""},
                     heuristic_names(train_cmd.run.env), train_cmd.run.eval_greedy,
                     train_cmd.run.run_dir);
      return summary.parameters_identical ? 0 : 3;
    }
    if (cmd == &eval_cmd) {
      LearnedPolicy learned{eval_run_dir, eval_ckpt, eval_policy};
      evaluate_all(eval_cmd.run, eval_cmd.learners, *prep.factory, comm, learned, eval_baselines,
                   greedy || eval_cmd.run.eval_greedy, eval_out);
      return 0;
    }
    if (cmd == &base_cmd) {
      evaluate_all(base_cmd.run, base_cmd.learners, *prep.factory, comm, LearnedPolicy{}, base_list,
                   false, "");
      return 0;
    }
    if (gen->parsed()) {
      if (root) {
        std::filesystem::create_directories(gen_out);
        std::int64_t t0 = 0;
        csv::parse_datetime("2023-01-01 00:00", t0);
        // The same seeds as the default run's synthetic traces (site i of the default site list
        // uses derive_seed(trace_seed, {i})), so these files are the first days of that data.
        const geodc::Config defaults;
        for (std::size_t i = 0; i < defaults.sites.size(); ++i) {
          const auto& z = defaults.sites[i];
          const auto& p = geodc::zone_profile(z);
          const auto seed = derive_seed(defaults.trace_seed, {i});
          geodc::write_carbon_csv(gen_out + "/" + z + "_synthetic_hourly.csv",
                                  geodc::synth_carbon(p, t0 / 3600, gen_days * 24, seed), z);
          geodc::write_price_csv(gen_out + "/" + z + "_synthetic_prices.csv",
                                 geodc::synth_price(p, t0 / 3600, gen_days * 24, seed));
        }
        geodc::write_pai_task_table(gen_out + "/pai_task_table_sample.csv", gen_tasks, 2020);
        std::cout << "wrote synthetic traces for " << geodc::builtin_zones().size()
                  << " zones and a pai_task_table sample into " << gen_out << std::endl;
        const auto dir = std::filesystem::path(gen_profiles).parent_path();
        if (!dir.empty()) std::filesystem::create_directories(dir);
        write_file_atomic(gen_profiles, lstcb::profiles_csv(lstcb::builtin_profiles()));
        std::cout << "wrote the lstcb batch profiles to " << gen_profiles << std::endl;
      }
      return 0;
    }
    if (list->parsed() && root) {
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
    }
    return 0;
  } catch (const std::exception& e) {
    report_error("marlsched: error on rank " + std::to_string(comm.rank()) + " of " +
                 std::to_string(comm.size()) + ": " + error_text(e) + "; aborting the job");
    // Bad input found only while running (a trace value that overflows the reward, a learning
    // rate that overflows the update) exits 2 like all bad input; anything else 1.
    const bool bad_input = dynamic_cast<const InputError*>(&e) != nullptr ||
                           dynamic_cast<const ConfigError*>(&e) != nullptr;
    comm.abort(bad_input ? 2 : 1);
  }
}

}  // namespace marlsched::cli
