#include "run_command.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>

#include <unistd.h>

#include "agents/exported/torchscript_policy.hpp"
#include "agents/model_archive.hpp"
#include "agents/torch_threads.hpp"
#include "core/blas.hpp"
#include "core/error.hpp"
#include "core/file.hpp"
#include "envs/baselines.hpp"
#include "train/checkpoint.hpp"
#include "train/manifest.hpp"

namespace marlsched::cli {

std::string config_record(const Command& cmd, const std::vector<std::string>& notes) {
  std::string text = cmd.binder->to_toml();
  if (!notes.empty()) text += "\n# Input files as read, and what ran (not options):\n";
  for (const auto& note : notes) text += "# " + note + "\n";
  return text;
}

namespace {
/// Refuses a layout whose rollout storage alone would not fit in this rank's share of the
/// node's memory (issue 42: a huge --agents-per-rank grew memory without a word). The estimate
/// is a floor: per agent, env copy and step its observation, next observation and trajectory
/// row; per env copy and step every agent's observation (the global state a critic reads).
void check_memory(const RunConfig& run, const EnvSpec& spec, int ranks) {
  const double K = run.agents_per_rank, E = run.envs_per_rank, T = spec.episode_length + 1.0;
  const double d = spec.obs_dim(), N = K * ranks;
  const double bytes = 4.0 * E * T * (K * (4 * d + 8) + N * d);
  const double phys =
      static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGESIZE));
  const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  const int per_node = local != nullptr ? std::max(1, std::atoi(local)) : 1;
  if (phys <= 0 || bytes <= phys / per_node) return;
  const double gib = 1024.0 * 1024 * 1024;
  std::ostringstream os;
  os << std::fixed << std::setprecision(1) << "--agents-per-rank " << run.agents_per_rank
     << " x --envs-per-rank " << run.envs_per_rank << " x " << spec.episode_length
     << " steps needs at least " << bytes / gib << " GiB per rank for its rollouts, more than the "
     << phys / per_node / gib << " GiB a rank has here (" << phys / gib << " GiB for " << per_node
     << " rank(s) on this node): give fewer agents or env copies per rank, or "
        "more ranks";
  MARLSCHED_THROW(ConfigError, os.str());
}
}  // namespace

Prepared prepare(Command& cmd, const dist::Comm& comm, bool needs_learner,
                 const std::function<void()>& before_validate) {
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
  check_traj_chunks(cmd.run, p.factory->spec());
  check_memory(cmd.run, p.factory->spec(), comm.size());
  if (needs_learner) {
    cmd.learners.check_env(cmd.run.algo, p.factory->spec());
    for (const auto& b : cmd.learners.baselines(cmd.run.algo))
      make_heuristic(b.name, p.factory->spec(), 0);  // ConfigError for a name the env lacks
    check_env(cmd.run, p.factory->spec());
  }
  return p;
}

namespace {

namespace fs = std::filesystem;

/// Whether `inner` is `outer` or lies inside it (both made absolute, symlinks resolved).
bool within(const fs::path& inner, const fs::path& outer) {
  auto i = inner.begin(), o = outer.begin();
  for (; o != outer.end(); ++i, ++o)
    if (i == inner.end() || *i != *o) return false;
  return true;
}

/// --force removes the earlier run's files; refused when one of them is, holds or lies inside
/// a path this command reads (a dataset written into the run directory, a model for
/// --init-from, the config file): the inputs were checked in phase 1 and would be gone by the
/// time phase 2 reads them.
void refuse_clearing_inputs(const std::string& run_dir, const std::vector<std::string>& artifacts,
                            const CLI::App& app) {
  for (const CLI::Option* opt : app.get_options()) {
    const std::string name = opt->get_name();
    if (name == "--run-dir" || name == "--resume") continue;
    for (const auto& value : opt->results()) {
      std::error_code ec;
      if (value.empty() || !fs::exists(fs::symlink_status(value, ec))) continue;
      const fs::path input = fs::weakly_canonical(value, ec);
      if (ec) continue;
      for (const auto& a : artifacts) {
        const fs::path art = fs::weakly_canonical(fs::path(run_dir) / a, ec);
        if (ec || !(within(input, art) || within(art, input))) continue;
        MARLSCHED_THROW(InputError, "--force would remove '"
                                        << (fs::path(run_dir) / a).string() << "', but this "
                                        << "command reads " << name << " '" << value
                                        << "' from there: copy that input elsewhere first, or "
                                           "choose another --run-dir");
      }
    }
  }
}

/// A run's own files must be real files: a link planted among them (`metrics.csv -> ~/notes`)
/// would make the run write into its target, or a resume truncate it.
void refuse_planted_links(const std::string& run_dir, int rank) {
  std::vector<std::string> names = run_artifacts(run_dir);
  names.push_back(".lock-rank-" + std::to_string(rank));
  names.push_back(".write-probe-rank-" + std::to_string(rank));
  for (const auto& n : names) refuse_link(run_dir + "/" + n);
}

}  // namespace

void claim_run_dir(const RunConfig& run, const CLI::App& app, const dist::Comm& comm, bool force,
                   bool resuming, std::optional<RunDirLock>& lock) {
  // Created and written to now, so that a read-only or full file system fails before training
  // with one message instead of later.
  std::error_code ec;
  std::filesystem::create_directories(run.run_dir, ec);
  if (ec)
    MARLSCHED_THROW(InputError,
                    "cannot create run directory '" << run.run_dir << "': " << ec.message());
  refuse_planted_links(run.run_dir, comm.rank());
  const std::string probe = run.run_dir + "/.write-probe-rank-" + std::to_string(comm.rank());
  write_file(probe, "marlsched\n");
  std::filesystem::remove(probe, ec);
  if (!lock) lock.emplace(run.run_dir, comm.rank());
  const auto earlier = resuming ? std::vector<std::string>{} : run_artifacts(run.run_dir);
  if (!earlier.empty() && !force) {
    std::string names;
    for (const auto& e : earlier) names += (names.empty() ? "" : ", ") + e;
    MARLSCHED_THROW(InputError, "run directory '"
                                    << run.run_dir << "' already holds a run (" << names << "): "
                                    << (latest_checkpoint(run.run_dir)
                                            ? "continue it with --resume " + run.run_dir + ", "
                                            : std::string())
                                    << "choose another --run-dir, or give --force to remove it "
                                       "and start afresh");
  }
  if (!earlier.empty()) refuse_clearing_inputs(run.run_dir, earlier, app);
  if (!earlier.empty() && comm.is_root()) clear_run_artifacts(run.run_dir);
}

namespace {

/// Collective. One warning line each, from rank 0, for a BLAS and a thread layout that make the
/// run slower than it could: the reference BLAS (several times slower); with more than one thread
/// per rank, a BLAS whose own thread pool competes with libtorch's OpenMP pool (4x slower than
/// one thread at the default sizes here, docs/performance.md "BLAS and threads"), a BLAS built
/// single-threaded, and ranks with fewer cores to themselves than threads (mpirun binds each rank
/// to one core by default).
void warn_about_threads(const dist::Comm& comm, int threads) {
  const BlasInfo& blas = blas_info();
  const double cores = threads > 1 ? comm.allreduce_min(comm.cores_per_rank()) : 0.0;
  if (!comm.is_root()) return;
  if (blas.reference())
    std::cerr << "marlsched: warning: libtorch runs on the reference BLAS (" << blas.path
              << "), several times slower than an optimized one; install "
                 "libopenblas0-openmp (launch/install-deps.sh does)\n";
  if (threads <= 1) return;
  const char* install =
      "; install the OpenMP build (libopenblas0-openmp, selected by "
      "launch/install-deps.sh)\n";
  if (blas.single_threaded())
    std::cerr << "marlsched: warning: --threads " << threads << ", but " << blas.name
              << " is its single-threaded build (" << blas.path
              << "): the matrix products run on one thread" << install;
  if (blas.own_threads())
    std::cerr << "marlsched: warning: --threads " << threads << " with " << blas.name
              << "'s own thread pool (" << blas.path
              << "): its threads and libtorch's OpenMP threads compete for the cores (4x slower "
                 "than one thread at the default sizes here)"
              << install;
  if (cores < threads) {
    std::ostringstream c;
    c << std::setprecision(2) << cores;
    std::cerr << "marlsched: warning: --threads " << threads << ", but a rank has " << c.str()
              << " core(s) to itself (its CPU affinity, shared with the ranks on its node): its "
                 "threads will wait for each other; give each rank "
              << threads << " cores (mpirun --map-by slot:PE=" << threads
              << ", srun --cpus-per-task=" << threads << ") or lower --threads\n";
  }
}

}  // namespace

std::optional<int> RunCommand::validate(const dist::Comm& comm) {
  before_prepare(comm);
  if (cmd_.print_config) {  // resolved values only: validation needs the real rank count
    if (!cmd_.config_path.empty()) apply_config_file(cmd_.app, *cmd_.binder, cmd_.config_path);
    if (comm.is_root()) std::cout << cmd_.binder->to_toml();
    return 0;
  }
  prep_ = prepare(cmd_, comm, needs_learner(), [&] { check_models(comm); });
  after_prepare(comm);
  set_torch_threads(cmd_.run.threads);
  warn_about_threads(comm, cmd_.run.threads);
  after_threads(comm);
  return std::nullopt;
}

std::vector<std::string> default_baselines(const std::string& env) {
  return heuristic_names(env);
}

void RunCommand::check_baselines(std::vector<std::string>& names) const {
  const EnvSpec& spec = prep_.factory->spec();
  if (names.empty()) names = default_baselines(cmd_.run.env);
  for (std::size_t i = 0; i < names.size(); ++i)
    MARLSCHED_REQUIRE(std::find(names.begin() + static_cast<std::ptrdiff_t>(i) + 1, names.end(),
                                names[i]) == names.end(),
                      "--baselines names '" << names[i] << "' twice: give each baseline once");
  for (const auto& b : names) make_heuristic(b, spec, 0);  // refuses an unknown name
}

void ModelSource::bind(CLI::App* a) {
  command_ = a->get_name();
  a->add_option("--model", run_dir, "run directory holding the trained model")
      ->check(CLI::ExistingDirectory);
  a->add_option("--checkpoint", checkpoint, "a checkpoint directory of a trained run")
      ->check(CLI::ExistingDirectory);
  a->add_option("--policy", policy, "a policy written by `marlsched export` (any rank count)")
      ->check(CLI::ExistingFile);
}

int ModelSource::count() const {
  return (!run_dir.empty()) + (!checkpoint.empty()) + (!policy.empty());
}

std::string ModelSource::model_run_dir() const {
  return !run_dir.empty() ? run_dir
         : !checkpoint.empty()
             ? (std::filesystem::path(checkpoint) / "../..").lexically_normal().string()
             : std::string();
}

void ModelSource::choose_config(Command& cmd, const dist::Comm& comm) {
  const std::string meta = policy.empty() ? "" : exported_policy_metadata(policy);
  // The training configuration, unless --config gives one: the run's, the checkpoint's run's,
  // or the one stored in the exported policy.
  if (cmd.config_path.empty()) {
    const std::string dir = model_run_dir();
    if (!dir.empty() && std::filesystem::exists(dir + "/config.toml")) {
      cmd.config_path = dir + "/config.toml";
      check_sealed_config(cmd.config_path);
    } else if (!policy.empty()) {
      const auto config = json_string_field(meta, "config");
      MARLSCHED_REQUIRE(!config.empty(),
                        "'" << policy << "' carries no training config: give --config");
      config_tmp_ = (std::filesystem::temp_directory_path() /
                     ("marlsched-model-" + std::to_string(::getpid()) + ".toml"))
                        .string();
      write_file_atomic(config_tmp_, config);
      cmd.config_path = config_tmp_;
    }
  }
  // An exported policy holds every agent: spread them over this job's ranks unless told.
  auto* apr = cmd.app->get_option("--agents-per-rank");
  if (!policy.empty() && apr->count() == 0) {
    const int n = json_int_field(meta, "num_agents");
    MARLSCHED_REQUIRE(n > 0 && n % comm.size() == 0, "'" << policy << "' holds " << n
                                                         << " agents, which " << comm.size()
                                                         << " ranks do not divide");
    apr->add_result(std::to_string(n / comm.size()));
    apr->run_callback();
  }
}

void ModelSource::check_models(Command& cmd, const dist::Comm& comm) const {
  if (run_dir.empty() && checkpoint.empty()) return;
  const std::string what = run_dir.empty() ? checkpoint : run_dir;
  if (const auto holder = run_dir_holder(model_run_dir()); !holder.empty() && comm.is_root())
    std::cerr << "marlsched: warning: '" << model_run_dir() << "' is in use by a running training ("
              << holder << "): " << command_
              << " reads the models it has written so far (its last completed run, segment or "
                 "checkpoint), not the one it is training\n";
  if (!checkpoint.empty()) {
    const int trained = read_manifest(checkpoint + "/MANIFEST").ranks;
    MARLSCHED_REQUIRE(trained == comm.size(), "checkpoint '"
                                                  << what << "' was written by " << trained
                                                  << " ranks (one model per rank); run " << command_
                                                  << " with mpirun -n " << trained);
    const std::string damage = checkpoint_damage(checkpoint, comm.rank());
    if (!damage.empty()) MARLSCHED_THROW(InputError, damage);
    return;
  }
  const int found = model_ranks(run_dir, cmd.env_config(), cmd.run.agents_per_rank);
  MARLSCHED_REQUIRE(
      found == comm.size(),
      "'" << what << "' holds the models of " << found << " rank" << (found == 1 ? "" : "s")
          << " (model-rank-0.pt"
          << (found > 1 ? " to model-rank-" + std::to_string(found - 1) + ".pt" : std::string(""))
          << ", one per training rank) but this job has " << comm.size() << ": run " << command_
          << " with mpirun -n " << found << ", or export the run and give the policy file ("
          << command_ << " --policy) at any rank count");
  verify_archive(model_path(run_dir, comm.rank()), "model");  // before phase 2 loads it
}

void ModelSource::check_loaded(const Command& cmd, const Prepared& prep, const dist::Comm& comm) {
  if (!config_tmp_.empty()) std::filesystem::remove(config_tmp_);
  if (!policy.empty())  // loads, and was trained for this many agents
    load_exported_policy(policy, prep.factory->spec(), cmd.run.agents_per_rank * comm.size(), true);
}

void load_run_config(Command& cmd, CLI::App& scratch, const std::string& run_dir) {
  cmd.bind(&scratch);
  cmd.config_path = run_dir + "/config.toml";
  MARLSCHED_REQUIRE(std::filesystem::exists(cmd.config_path),
                    "'" << run_dir << "' has no config.toml (not a run directory)");
  cmd.resolve(true);
}

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

}  // namespace marlsched::cli
