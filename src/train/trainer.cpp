#include "train/trainer.hpp"

#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <iterator>
#include <limits>
#include <memory>
#include <sstream>
#include <thread>

#include <sys/resource.h>
#include <unistd.h>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/rng.hpp"
#include "core/serialize.hpp"
#include "core/stats.hpp"
#include "dist/watchdog.hpp"
#include "io/tensorboard.hpp"
#include "train/checkpoint.hpp"
#include "train/evaluate.hpp"
#include "train/world.hpp"

namespace marlsched {

void RunConfig::bind(OptionBinder& b, const std::vector<std::string>& learners) {
  b.group("Run");
  b.add("env", env, "environment name (`marlsched list` shows them)");
  std::string algos;
  for (const auto& a : learners) algos += (algos.empty() ? "" : ", ") + a;
  b.add("algo", algo, "learning algorithm (" + algos + ")");
  b.add("seed", seed, "root seed: env copies, agents, ranks derive theirs from it");
  b.add("iterations", iterations, "training iterations (rollout + update)");
  b.add("agents-per-rank", agents_per_rank, "agents hosted by each MPI rank");
  b.add("envs-per-rank", envs_per_rank, "environment copies per rank");
  b.add("run-dir", run_dir, "output directory of the run");
  b.add("eval-episodes", eval_episodes, "episodes per policy in evaluation");
  b.add("eval-seed", eval_seed, "seed of evaluation episodes (held out from training)");
  b.add("eval-after", eval_after, "evaluate against the baselines after training");
  b.add("eval-greedy", eval_greedy,
        "evaluate learned policies greedily (most probable action); false: sample as in training");
  b.add("eval-bound", eval_bound,
        "also compute the env's hindsight upper bound on each evaluation episode's utility "
        "(geodc: an LP relaxation) and every policy's gap to it");
  b.add("check-every", check_every, "iterations between cross-rank parameter identity checks");
  b.add("threads", threads, "torch intra-op threads per rank");
  b.add("quiet", quiet, "no per-iteration progress lines");
  b.add("tensorboard", tensorboard,
        "write training curves as TensorBoard event files into RUN_DIR/tb");
  b.add("team-scope", team_scope,
        "which agents the team part of the reward (--team-reward) averages: all, or targets (the "
        "agent and its neighbours in the env's targeted action space, e.g. geodc "
        "--site-neighbours)");
  b.add("checkpoint-every", checkpoint_every, "iterations between checkpoints (0: none)");
  b.add("keep-checkpoints", keep_checkpoints, "how many recent checkpoints to keep");
  b.add("watchdog-s", watchdog_s,
        "abort the whole job when a rank makes no progress for this many seconds (0: never)");
  traj.bind(b);
}

void RunConfig::validate() const {
  MARLSCHED_REQUIRE(iterations >= 0, "--iterations must be >= 0, got " << iterations);
  MARLSCHED_REQUIRE(agents_per_rank >= 1,
                    "--agents-per-rank must be >= 1, got " << agents_per_rank);
  MARLSCHED_REQUIRE(envs_per_rank >= 1, "--envs-per-rank must be >= 1, got " << envs_per_rank);
  MARLSCHED_REQUIRE(!run_dir.empty(), "--run-dir must not be empty");
  MARLSCHED_REQUIRE(eval_episodes >= 1, "--eval-episodes must be >= 1");
  MARLSCHED_REQUIRE(check_every >= 1, "--check-every must be >= 1");
  MARLSCHED_REQUIRE(threads >= 1, "--threads must be >= 1");
  MARLSCHED_REQUIRE(checkpoint_every >= 0, "--checkpoint-every must be >= 0");
  MARLSCHED_REQUIRE(std::isfinite(watchdog_s) && watchdog_s >= 0,
                    "--watchdog-s must be >= 0 (0 turns the watchdog off)");
  MARLSCHED_REQUIRE(keep_checkpoints >= 1, "--keep-checkpoints must be >= 1");
  MARLSCHED_REQUIRE(team_scope == "all" || team_scope == "targets",
                    "--team-scope must be all or targets, got '" << team_scope << "'");
  traj.validate();
}

std::string model_path(const std::string& run_dir, int rank) {
  return run_dir + "/model-rank-" + std::to_string(rank) + ".pt";
}

namespace {

/// Where a fault-injection variable "RANK:ITERATION[:STEP]" points (-1: unset); STEP -1 is the
/// start of the iteration, STEP >= 0 the rollout just before env step STEP.
struct FaultAt {
  const char* text = nullptr;
  int rank = -1, iteration = -1, step = -1;
  explicit FaultAt(const char* var) : text(std::getenv(var)) {
    if (text != nullptr && std::sscanf(text, "%d:%d:%d", &rank, &iteration, &step) < 2) rank = -1;
  }
  bool at(int r, int it, int st) const { return r == rank && it == iteration && st == step; }
};

/// Test hooks, read once: MARLSCHED_FAIL_AT throws on that rank there (mid-rollout: while the
/// peers wait in a collective), MARLSCHED_KILL_AT raises SIGKILL (crash tests),
/// MARLSCHED_HANG_AT="RANK:ITERATION" stops making progress (watchdog tests).
void maybe_inject_fault(int rank, int iteration, int step) {
  static const FaultAt fail("MARLSCHED_FAIL_AT"), kill("MARLSCHED_KILL_AT"),
      hang("MARLSCHED_HANG_AT");
  if (fail.at(rank, iteration, step))
    MARLSCHED_THROW(Error, "injected fault (MARLSCHED_FAIL_AT=" << fail.text << ")");
  if (kill.at(rank, iteration, step)) std::raise(SIGKILL);
  if (hang.at(rank, iteration, step))
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}

/// Test hook: MARLSCHED_NAN_AT="0:ITERATION" makes that iteration's first update statistic NaN,
/// as a diverged update would (the learning rates that once did it are now refused up front).
void maybe_poison_stats(int iteration, UpdateStats& us) {
  static const FaultAt nan_at("MARLSCHED_NAN_AT");
  if (nan_at.iteration == iteration && !us.values.empty()) {
    us.values[0] = std::numeric_limits<double>::quiet_NaN();
    us.stepped = true;
  }
}

/// Resident set size of this process now, and its peak so far, in MiB (Linux /proc, getrusage).
double rss_mib() {
  std::ifstream in("/proc/self/statm");
  long pages = 0, resident = 0;
  in >> pages >> resident;
  return static_cast<double>(resident) * static_cast<double>(::sysconf(_SC_PAGESIZE)) / 1048576.0;
}
double peak_rss_mib() {
  struct rusage u {};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // kilobytes on Linux
}

constexpr std::uint32_t kTrainerStateMagic = 0x6D617274;  // "mart"

/// Keeps the header and the rows of `path` whose first field (the iteration) is <= `last`.
void truncate_rows(const std::string& path, int last) {
  std::ifstream in(path);
  if (!in) return;
  std::ostringstream keep;
  std::string line;
  bool header = true;
  while (std::getline(in, line)) {
    if (header || std::atoi(line.c_str()) <= last) keep << line << '\n';
    header = false;
  }
  in.close();
  write_file_atomic(path, keep.str());
}

std::string fmt_eta(double s) {
  std::ostringstream os;
  if (s >= 3600)
    os << static_cast<int>(s / 3600) << "h" << std::setw(2) << std::setfill('0')
       << static_cast<int>(std::fmod(s, 3600) / 60) << "m";
  else if (s >= 60)
    os << static_cast<int>(s / 60) << "m" << std::setw(2) << std::setfill('0')
       << static_cast<int>(std::fmod(s, 60)) << "s";
  else
    os << std::fixed << std::setprecision(0) << s << "s";
  return os.str();
}

}  // namespace

namespace {
/// Stops the run at the first non-finite value the env hands this rank's agents (a NaN or
/// infinite reward, reward component or observation), naming where it appeared: left alone it
/// turns every loss NaN and the run still ends with exit 0 and a NaN model.
void check_env_finite(World& world, const EnvSpec& spec, int it, int t) {
  const int d = spec.obs_dim(), nc = static_cast<int>(spec.reward_components.size());
  for (int c = 0; c < world.copies(); ++c) {
    const GlobalObs obs = world.obs(c);
    for (int kk = 0; kk < world.local_agents(); ++kk) {
      const int a = world.first_agent() + kk;
      std::string what;
      double v = world.reward(c, a);
      if (!std::isfinite(v)) what = "reward";
      for (int j = 0; what.empty() && j < nc; ++j)
        if (v = world.component(c, a, j); !std::isfinite(v))
          what = "reward component '" + spec.reward_components[static_cast<std::size_t>(j)] + "'";
      for (int f = 0; what.empty() && f < d; ++f)
        if (v = obs.row(a)[f]; !std::isfinite(v))
          what = "observation '" + spec.obs_fields[static_cast<std::size_t>(f)] + "'";
      if (!what.empty()) {
        const std::string inputs = world.shard(c, kk).describe_inputs();
        MARLSCHED_THROW(InputError, "the env gave agent "
                                        << a << " a non-finite " << what << " (" << v
                                        << ") at iteration " << it << ", step " << t + 1
                                        << ", env copy " << c
                                        << (inputs.empty() ? "" : " (" + inputs + ")")
                                        << ": a trace value or an option too large for float "
                                           "arithmetic? (check the traces and reward weights)");
      }
    }
  }
}

/// Stops the run when an update reports a non-finite statistic (a NaN or infinite loss or
/// gradient norm: the parameters are no longer trustworthy), before anything saves them. The
/// statistics are identical on every rank, so rank 0 alone checks (one message, not one per
/// rank); the others wait in the next collective until its abort ends the job.
void check_update_finite(const UpdateStats& us, const std::vector<StatName>& names,
                         const std::string& algo, int it) {
  for (std::size_t i = 0; i < us.values.size() && i < names.size(); ++i) {
    const double v = us.values[i];
    if (std::isfinite(v) || (std::isnan(v) && !us.stepped)) continue;
    MARLSCHED_THROW(InputError, algo << "'s update at iteration " << it << " gave a non-finite "
                                     << names[i].column << " (" << v
                                     << "); the run stops before saving its parameters (a "
                                        "learning rate or a reward scale too large?)");
  }
}

volatile std::sig_atomic_t g_stop_signal = 0;
extern "C" void on_stop_signal(int sig) {
  g_stop_signal = sig;
}
constexpr int kStopSignals[StopSignals::kCount] = {SIGUSR1, SIGUSR2, SIGTERM, SIGINT};

/// How a stop signal reached the ranks. mpirun kills a job on SIGTERM and SIGINT instead of
/// forwarding them, so launch/mpirun.sh forwards them as SIGUSR1 and SIGUSR2.
std::string stop_signal_text(int sig) {
  std::string text = "signal " + std::to_string(sig) + " (" + strsignal(sig);
  if (sig == SIGUSR1) text += ": Slurm's warning, or SIGTERM forwarded by launch/mpirun.sh";
  if (sig == SIGUSR2) text += ": SIGINT forwarded by launch/mpirun.sh";
  return text + ")";
}
}  // namespace

StopSignals::StopSignals() {
  g_stop_signal = 0;
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  for (std::size_t i = 0; i < std::size(kStopSignals); ++i)
    sigaction(kStopSignals[i], &sa, &old_[i]);
}

StopSignals::~StopSignals() {
  for (std::size_t i = 0; i < std::size(kStopSignals); ++i)
    sigaction(kStopSignals[i], &old_[i], nullptr);
}

int stop_requested() {
  return static_cast<int>(g_stop_signal);
}

void check_env(const RunConfig& run, const EnvSpec& spec) {
  MARLSCHED_REQUIRE(run.team_scope != "targets" || spec.num_targets() > 0,
                    "--team-scope targets needs an env with a targeted action space (geodc); '"
                        << spec.name << "' has none");
}

TrainSummary train(const RunConfig& run, const LearnerRecipe& learner, const EnvFactory& factory,
                   const dist::Comm& comm, const std::string& resolved_config,
                   const std::string& resume_from) {
  const bool root = comm.is_root();
  if (root) {
    std::filesystem::create_directories(run.run_dir);
    write_file_atomic(run.run_dir + "/config.toml", resolved_config);
  }
  comm.barrier();

  World world(factory, comm, run.agents_per_rank, run.envs_per_rank, run.seed);
  const EnvSpec& spec = world.spec();
  const int n = world.num_agents(), e = world.copies(), k = world.local_agents();
  const int nc = static_cast<int>(spec.reward_components.size());
  auto agent = learner.make({&spec, &comm, n, world.first_agent(), k, e, run.seed});
  world.set_common_episodes(agent->common_episodes());
  const int T = learner.rollout_steps;
  const double beta = learner.team_reward;
  check_env(run, spec);
  const bool team_targets = run.team_scope == "targets";

  // Resume: the checkpoint's trainer and world state (read before any file is touched).
  int start_iteration = 1;
  std::int64_t env_steps = 0;
  std::vector<double> ep_return(static_cast<std::size_t>(e), 0.0);
  std::vector<std::byte> world_state;
  if (!resume_from.empty()) {
    const std::string sp = resume_from + "/" + ckpt_state_file(comm.rank());
    std::ifstream in(sp, std::ios::binary);
    std::vector<std::byte> bytes;
    if (in) {
      std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      bytes.resize(raw.size());
      if (!raw.empty()) std::memcpy(bytes.data(), raw.data(), raw.size());
    }
    ByteReader r(bytes.data(), bytes.size(), sp);
    if (r.get<std::uint32_t>() != kTrainerStateMagic)
      MARLSCHED_THROW(InputError, sp << ": not a marlsched trainer state");
    start_iteration = r.get<std::int32_t>() + 1;
    env_steps = r.get<std::int64_t>();
    ep_return = r.get_vector<double>();
    world_state = r.get_vector<std::byte>();
    if (static_cast<int>(ep_return.size()) != e)
      MARLSCHED_THROW(InputError, sp << ": wrong layout");
    agent->load(resume_from + "/" + ckpt_model_file(comm.rank()));
  }

  // Trajectories: a fresh run starts segment 0; a resumed run cuts the checkpoint's segment back
  // to the checkpoint and starts the next one, so no step is on disk twice.
  int traj_segment = -1;
  std::int64_t traj_rows = 0;
  if (!resume_from.empty()) {
    const Manifest m = read_manifest(resume_from + "/MANIFEST");
    traj_segment = m.traj_segment;
    traj_rows = m.traj_rows;
  }
  if (root) cut_segments_for_resume(run.run_dir, traj_segment, traj_rows, start_iteration - 1);
  comm.barrier();
  std::unique_ptr<TrajectoryWriter> traj;
  TrajStep ts;
  if (run.traj.every > 0 && start_iteration <= run.iterations) {
    TrajMeta meta;
    meta.spec = spec;
    meta.algo = run.algo;
    meta.config_toml = resolved_config;
    meta.seed = run.seed;
    meta.agents_per_rank = k;
    meta.worlds = e;
    meta.rollout_steps = T;
    meta.segment = traj_segment + 1;
    meta.first_iteration = start_iteration;
    traj = std::make_unique<TrajectoryWriter>(
        comm, run.traj, traj_segment_path(run.run_dir, meta.segment), meta, run.threads);
    traj_segment = meta.segment;
    traj_rows = 0;
  }
  const int d = spec.obs_dim();
  // This rank's rows of a copy's global observations, into `out` at [copy * K + k][d].
  auto local_obs = [&](const GlobalObs& g, int c, std::vector<float>& out) {
    std::memcpy(out.data() + static_cast<std::size_t>(c * k * d), g.row(world.first_agent()),
                static_cast<std::size_t>(k * d) * sizeof(float));
  };
  const auto ek = static_cast<std::size_t>(e * k);
  ts.observations.resize(ek * static_cast<std::size_t>(d));
  ts.next_observations.resize(ts.observations.size());
  ts.rewards.resize(ek);
  ts.reward_components.resize(ek * static_cast<std::size_t>(nc));
  ts.terminations.resize(static_cast<std::size_t>(e));
  ts.truncations.resize(static_cast<std::size_t>(e));
  ts.episode_ids.resize(static_cast<std::size_t>(e));
  ts.episode_steps.resize(static_cast<std::size_t>(e));

  std::ofstream metrics, timing;
  std::unique_ptr<TensorBoardWriter> tb;
  if (root) {
    const bool resuming = !resume_from.empty();
    if (resuming) {
      truncate_rows(run.run_dir + "/metrics.csv", start_iteration - 1);
      truncate_rows(run.run_dir + "/timing.csv", start_iteration - 1);
    }
    const auto mode = resuming ? std::ios::app : std::ios::trunc;
    metrics.open(run.run_dir + "/metrics.csv", std::ios::out | mode);
    timing.open(run.run_dir + "/timing.csv", std::ios::out | mode);
    if (!metrics || !timing)
      MARLSCHED_THROW(InputError, "cannot write into '" << run.run_dir << "'");
    if (!resuming) {
      metrics << "iteration,agent_steps,episodes,system_reward_per_slot,episode_return";
      for (std::size_t i = 0; i < spec.reward_components.size(); ++i)
        metrics << ',' << spec.component_label(i) << "_per_slot";
      for (const auto& st : agent->stat_names()) metrics << ',' << st.column;
      metrics << '\n';
      timing << "iteration,wall_s,env_s,exchange_s,gather_s,act_s,update_s,allreduce_s,log_s,"
                "max_rss_mib\n";
    }
    metrics << std::setprecision(9);
    if (run.tensorboard) {
      tb = std::make_unique<TensorBoardWriter>(run.run_dir + "/tb");
      if (resuming) tb->session_start(env_steps);
    }
    if (resuming)
      std::cout << "resuming from " << resume_from << " at iteration " << start_iteration
                << std::endl;
    std::cout << "marlsched train: env " << spec.name << ", algo " << run.algo << ", " << n
              << " agents on " << comm.size() << (comm.size() == 1 ? " rank (" : " ranks (") << k
              << " per rank), " << e << " env copies per rank, " << T << " steps per rollout, "
              << run.iterations << " iterations, run dir " << run.run_dir << std::endl;
  }

  if (world_state.empty())
    world.reset();
  else
    world.load_state(world_state);
  comm.barrier();
  const double start = now();
  TrainSummary sum;
  double t_act = 0, t_update = 0, t_allreduce = 0, t_log = 0, writer_seconds = 0;
  StepFeedback fb;
  fb.reward.resize(static_cast<std::size_t>(e * k));
  fb.done.resize(static_cast<std::size_t>(e));
  fb.truncated.resize(static_cast<std::size_t>(e));
  fb.terminal.resize(static_cast<std::size_t>(e));
  std::vector<int> actions;
  const std::int64_t steps_at_start = env_steps;
  for (int it = start_iteration; it <= run.iterations; ++it) {
    maybe_inject_fault(comm.rank(), it, -1);
    const double it0 = now();
    const StepTimes before = world.times();
    const double act0 = t_act, update0 = t_update, allreduce0 = t_allreduce, log0 = t_log;
    double sys_reward = 0, finished_returns = 0;
    int episodes = 0;
    std::vector<double> comp(static_cast<std::size_t>(nc), 0.0);
    agent->set_training(true);
    for (int t = 0; t < T; ++t) {
      maybe_inject_fault(comm.rank(), it, t);
      const double a0 = now();
      agent->act(world.policy_input(), actions);
      t_act += now() - a0;
      if (traj) {
        const double l0 = now();
        ts.iteration = it;
        for (int c = 0; c < e; ++c) {
          local_obs(world.obs(c), c, ts.observations);
          ts.episode_ids[static_cast<std::size_t>(c)] =
              static_cast<std::int64_t>(world.episode_index(c)) * e + c;
          ts.episode_steps[static_cast<std::size_t>(c)] = world.episode_step(c);
        }
        ts.actions.assign(actions.begin(), actions.end());
        ts.log_probs = agent->last_log_probs();
        ts.values = agent->last_values();
        t_log += now() - l0;
      }
      world.step(actions);
      check_env_finite(world, spec, it, t);
      for (int c = 0; c < e; ++c) {
        double total = 0;
        for (int a = 0; a < n; ++a) {
          total += world.reward(c, a);
          for (int i = 0; i < nc; ++i)
            comp[static_cast<std::size_t>(i)] += world.component(c, a, i);
        }
        sys_reward += total;
        ep_return[static_cast<std::size_t>(c)] += total;
        for (int kk = 0; kk < k; ++kk)
          fb.reward[static_cast<std::size_t>(c * k + kk)] = static_cast<float>(
              learner_reward(spec, n, world.first_agent() + kk, beta, team_targets, total,
                             [&](int j) { return world.reward(c, j); }));
        fb.done[static_cast<std::size_t>(c)] = world.done(c) ? 1 : 0;
        fb.truncated[static_cast<std::size_t>(c)] = world.truncated(c) ? 1 : 0;
        if (world.done(c)) {
          fb.terminal[static_cast<std::size_t>(c)] = world.terminal_obs(c);
          finished_returns += ep_return[static_cast<std::size_t>(c)];
          ep_return[static_cast<std::size_t>(c)] = 0;
          ++episodes;
        }
      }
      const double a1 = now();
      agent->record(fb);
      t_act += now() - a1;
      if (traj) {
        const double l0 = now();
        for (int c = 0; c < e; ++c) {
          for (int kk = 0; kk < k; ++kk) {
            const auto i = static_cast<std::size_t>(c * k + kk);
            const int a = world.first_agent() + kk;
            ts.rewards[i] = world.reward(c, a);
            for (int j = 0; j < nc; ++j)
              ts.reward_components[i * static_cast<std::size_t>(nc) + static_cast<std::size_t>(j)] =
                  world.component(c, a, j);
          }
          const bool done = world.done(c), trunc = world.truncated(c);
          ts.terminations[static_cast<std::size_t>(c)] = done && !trunc ? 1 : 0;
          ts.truncations[static_cast<std::size_t>(c)] = trunc ? 1 : 0;
          local_obs(done ? world.terminal_obs(c) : world.obs(c), c, ts.next_observations);
        }
        traj->append(ts);
        t_log += now() - l0;
      }
    }
    const double u0 = now();
    dist::heartbeat("update");
    UpdateStats us = agent->update(world.policy_input());
    maybe_poison_stats(it, us);
    if (root) check_update_finite(us, agent->stat_names(), run.algo, it);
    t_update += now() - u0 - us.time_allreduce;
    t_allreduce += us.time_allreduce;
    // A stop request (Slurm's warning signal, SIGTERM, SIGINT) on any rank stops every rank
    // after this same update; the same tiny max-allreduce brings the largest resident set.
    double agreed[2] = {it < run.iterations ? static_cast<double>(stop_requested()) : 0.0,
                        rss_mib()};
    comm.allreduce_max(agreed, 2);
    const int stop_signal = static_cast<int>(agreed[0]);
    const double max_rss = agreed[1];
    const bool last = it == run.iterations || stop_signal != 0;
    const bool checkpoint_now =
        (run.checkpoint_every > 0 && it % run.checkpoint_every == 0) || stop_signal != 0;
    if (traj && (it % run.traj.every == 0 || checkpoint_now || last)) {
      const double l0 = now();
      if (last)
        traj->close(it);
      else
        traj->flush(it, checkpoint_now);
      traj_rows = traj->rows_written();
      writer_seconds = traj->writer_seconds();
      t_log += now() - l0;
    }
    env_steps += static_cast<std::int64_t>(T) * e * comm.size() * k;
    const double slots = static_cast<double>(T) * e;
    // A component per slot: its sum over agents, or its mean for a mean component.
    const auto per_slot = [&](int i) {
      return comp[static_cast<std::size_t>(i)] / slots /
             (spec.component_is_mean(static_cast<std::size_t>(i)) ? n : 1);
    };
    if (it % run.check_every == 0 || it == run.iterations) {
      const bool same = agent->shared_parameters_identical();
      sum.parameters_identical = sum.parameters_identical && same;
      if (!same)
        MARLSCHED_THROW(Error, "shared parameters diverged across ranks at iteration " << it);
    }
    if (root) {
      const double elapsed = now() - start;
      const double sps = static_cast<double>(env_steps - steps_at_start) / std::max(1e-9, elapsed);
      const double eta = elapsed / (it - start_iteration + 1) * (run.iterations - it);
      metrics << it << ',' << env_steps << ',' << episodes << ',' << sys_reward / slots << ','
              << (episodes > 0 ? finished_returns / episodes : std::nan(""));
      for (int i = 0; i < nc; ++i) metrics << ',' << per_slot(i);
      for (double v : us.values) metrics << ',' << v;
      metrics << '\n';
      if (!metrics.flush())
        MARLSCHED_THROW(InputError, "cannot write '" << run.run_dir
                                                     << "/metrics.csv': " << std::strerror(errno));
      if (tb) {
        std::vector<std::pair<std::string, float>> sc = {
            {"reward/system_per_slot", static_cast<float>(sys_reward / slots)}};
        if (episodes > 0)
          sc.emplace_back("reward/episode_return", static_cast<float>(finished_returns / episodes));
        for (int i = 0; i < nc; ++i)
          sc.emplace_back(
              "reward/" + spec.component_label(static_cast<std::size_t>(i)) + "_per_slot",
              static_cast<float>(per_slot(i)));
        const auto& names = agent->stat_names();
        for (std::size_t i = 0; i < names.size(); ++i)
          sc.emplace_back(names[i].tag, static_cast<float>(us.values[i]));
        sc.insert(sc.end(), {{"perf/agent_steps_per_s", static_cast<float>(sps)},
                             {"perf/iteration_s", static_cast<float>(now() - it0)}});
        tb->scalars(env_steps, sc);
      }
      const StepTimes& w = world.times();
      timing << it << ',' << now() - it0 << ',' << w.env - before.env << ','
             << w.exchange - before.exchange << ',' << w.gather - before.gather << ','
             << t_act - act0 << ',' << t_update - update0 << ',' << t_allreduce - allreduce0 << ','
             << t_log - log0 << ',' << max_rss << '\n';
      if (!timing.flush())
        MARLSCHED_THROW(InputError, "cannot write '" << run.run_dir
                                                     << "/timing.csv': " << std::strerror(errno));
      if (!run.quiet) {
        std::ostringstream os;
        // Steps count agent-steps (rollout steps x env copies x agents); the reward and its
        // components are per slot, summed over agents (mean_* averaged over them).
        os << std::fixed << "iter " << std::setw(4) << it << "/" << run.iterations
           << " | agent-steps " << std::setw(8) << env_steps << " | " << std::setprecision(0)
           << std::setw(6) << sps << " agent-steps/s | per slot, all agents: reward "
           << std::setprecision(3) << std::setw(8) << sys_reward / slots;
        for (int i = 0; i < nc; ++i)
          os << " " << spec.component_label(static_cast<std::size_t>(i)) << " "
             << std::setprecision(2) << per_slot(i);
        os << " |" << std::setprecision(4);
        const auto& names = agent->stat_names();
        for (std::size_t i = 0; i < names.size() && i < 4; ++i) {
          os << " " << names[i].column << " ";
          // A statistic without a value yet (no gradient step: a replay buffer warming up)
          // shows as "-"; a NaN after a step stopped the run above.
          if (std::isnan(us.values[i]) && !us.stepped)
            os << "-";
          else
            os << us.values[i];
        }
        os << " | ETA " << fmt_eta(eta);
        std::cout << os.str() << std::endl;
      }
    }
    if (checkpoint_now) {
      Manifest header;
      header.traj_segment = traj_segment;
      header.traj_rows = traj_rows;
      header.agents_per_rank = k;
      header.envs_per_rank = e;
      header.config_fingerprint = config_fingerprint(resolved_config);
      dist::heartbeat("checkpoint");
      write_checkpoint(
          comm, run.run_dir, it, run.keep_checkpoints, header, [&](const std::string& dir) {
            agent->save(dir + "/" + ckpt_model_file(comm.rank()));
            ByteWriter w;
            w.put(kTrainerStateMagic);
            w.put<std::int32_t>(it);
            w.put<std::int64_t>(env_steps);
            w.put_vector(ep_return);
            w.put_vector(world.save_state());
            write_file(dir + "/" + ckpt_state_file(comm.rank()),
                       std::string_view(reinterpret_cast<const char*>(w.bytes().data()),
                                        w.bytes().size()));
          });
    }
    if (stop_signal != 0) {
      sum.stop_signal = stop_signal;
      sum.iterations = it;
      if (root)
        std::cout << "stopping after iteration " << it << " on " << stop_signal_text(stop_signal)
                  << ": checkpoint written; continue with "
                  << "`marlsched train --resume " << run.run_dir << "`" << std::endl;
      break;
    }
  }
  comm.barrier();
  sum.wall_seconds = now() - start;
  if (sum.stop_signal == 0) sum.iterations = run.iterations;
  sum.env_steps = env_steps;
  agent->save(model_path(run.run_dir, comm.rank()));

  // The time split of the busiest rank: the one with the most time outside communication (the
  // others wait for it inside the collectives). Its own shares of the wall time, with "other"
  // (bookkeeping, metrics, checkpoints), add up to 100 %; a second line gives the spread of
  // that busy time over the ranks (load imbalance).
  const StepTimes& w = world.times();
  constexpr int kParts = 7, kRow = kParts + 2;
  const double mine[kRow] = {w.env,       w.exchange, w.gather,       t_act,         t_update,
                             t_allreduce, t_log,      peak_rss_mib(), writer_seconds};
  std::vector<double> all(static_cast<std::size_t>(kRow * comm.size()));
  comm.allgather(mine, kRow, all.data());
  const auto at = [&](int r, int j) { return all[static_cast<std::size_t>(r * kRow + j)]; };
  const auto busy = [&](int r) { return at(r, 0) + at(r, 3) + at(r, 4) + at(r, 6); };
  int busiest = 0;
  double busy_sum = 0, busy_min = busy(0), peak_rss = 0;
  for (int r = 0; r < comm.size(); ++r) {
    if (busy(r) > busy(busiest)) busiest = r;
    busy_sum += busy(r);
    busy_min = std::min(busy_min, busy(r));
    peak_rss = std::max(peak_rss, at(r, kParts));
  }
  if (root && start_iteration > run.iterations) {
    std::cout << "nothing to do: the run already has " << run.iterations << " iterations"
              << std::endl;
  } else if (root) {
    const double wall = std::max(1e-9, sum.wall_seconds);
    const char* names[kParts] = {"env step",          "work exchange (alltoallv)", "obs allgather",
                                 "policy forward",    "update fwd/bwd+optim",      "grad allreduce",
                                 "trajectory logging"};
    std::cout << "time split of rank " << busiest << (comm.size() > 1 ? ", the busiest" : "")
              << " (" << std::fixed << std::setprecision(2) << wall << " s wall, "
              << std::setprecision(0) << static_cast<double>(env_steps - steps_at_start) / wall
              << " agent-steps/s):";
    double accounted = 0;
    for (int i = 0; i < kParts; ++i) {
      accounted += at(busiest, i);
      std::cout << (i ? ", " : " ") << names[i] << " " << std::setprecision(1)
                << 100.0 * at(busiest, i) / wall << "%";
    }
    std::cout << ", other " << 100.0 * std::max(0.0, wall - accounted) / wall << "%";
    if (at(busiest, kParts + 1) > 0)
      std::cout << "\ntrajectory writer thread (beside the training thread, not in the split): "
                << std::setprecision(2) << at(busiest, kParts + 1) << " s";
    if (comm.size() > 1)
      std::cout << "\nbusy time (env step, policy forward, update, logging) over " << comm.size()
                << " ranks: max " << std::setprecision(2) << busy(busiest) << " s, min " << busy_min
                << " s, max/mean " << busy(busiest) / std::max(1e-9, busy_sum / comm.size());
    std::cout << "\npeak resident memory (largest rank): " << std::setprecision(0) << peak_rss
              << " MiB\nparameters identical on all ranks: "
              << (sum.parameters_identical ? "yes" : "NO") << std::endl;
  }
  return sum;
}

}  // namespace marlsched
