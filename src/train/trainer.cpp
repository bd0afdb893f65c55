#include "train/trainer.hpp"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <limits>
#include <memory>
#include <sstream>
#include <thread>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/file.hpp"
#include "dist/watchdog.hpp"
#include "train/checkpoint.hpp"
#include "train/metrics_sink.hpp"
#include "train/time_split.hpp"
#include "train/trajectory_recorder.hpp"
#include "train/world.hpp"

namespace marlsched {

void RunConfig::bind(OptionBinder& b, const std::vector<std::string>& learners) {
  b.group("Run");
  b.add("env", env, "environment name (`marlsched list` shows them)");
  std::string algos;
  for (const auto& a : learners) algos += (algos.empty() ? "" : ", ") + a;
  b.add("algo", algo, "learning algorithm (" + algos + ")");
  b.add("seed", seed, "root seed: env copies, agents, ranks derive theirs from it");
  b.add("iterations", iterations, "training iterations (rollout + update)")
      .at_least(0)
      .may_change_on_resume();
  b.add("agents-per-rank", agents_per_rank, "agents hosted by each MPI rank")
      .in(1, kMaxAgentsPerRank);
  b.add("envs-per-rank", envs_per_rank, "environment copies per rank").in(1, kMaxEnvsPerRank);
  b.add("run-dir", run_dir, "output directory of the run").may_change_on_resume();
  b.add("eval-episodes", eval_episodes, "episodes per policy in evaluation")
      .in(1, kMaxEvalEpisodes)
      .may_change_on_resume();
  b.add("eval-seed", eval_seed, "seed of evaluation episodes (held out from training)")
      .may_change_on_resume();
  b.add("eval-after", eval_after, "evaluate against the baselines after training")
      .may_change_on_resume();
  b.add("eval-greedy", eval_greedy,
        "evaluate learned policies greedily (most probable action); false: sample as in training")
      .may_change_on_resume();
  b.add("eval-bound", eval_bound,
        "also bracket each evaluation episode's optimum where the env can: a hindsight upper "
        "bound (geodc: an LP relaxation) and a feasible hindsight schedule (geodc: MPC that "
        "knows the arrivals), with every policy's gap to both")
      .may_change_on_resume();
  b.add("check-every", check_every, "iterations between cross-rank parameter identity checks")
      .at_least(1)
      .may_change_on_resume();
  b.add("threads", threads, "torch intra-op threads per rank").in(1, 1024);
  b.add("quiet", quiet, "no per-iteration progress lines").may_change_on_resume();
  b.add("tensorboard", tensorboard,
        "write training curves as TensorBoard event files into RUN_DIR/tb")
      .may_change_on_resume();
  b.choice(
      "team-scope", team_scope, {{"all", TeamScope::kAll}, {"targets", TeamScope::kTargets}},
      "which agents the team part of the reward (--team-reward) averages: all, or targets (the "
      "agent and its neighbours in the env's targeted action space, e.g. geodc "
      "--site-neighbours)");
  b.add("init-from", init_from,
        "warm start: a trained run or checkpoint directory (same layout and rank count) whose "
        "parameters this run starts from, e.g. an offline-trained bc or awr run for MAPPO");
  b.add("checkpoint-every", checkpoint_every, "iterations between checkpoints (0: none)")
      .at_least(0)
      .may_change_on_resume();
  b.add("keep-checkpoints", keep_checkpoints, "how many recent checkpoints to keep")
      .at_least(1)
      .may_change_on_resume();
  b.add("watchdog-s", watchdog_s,
        "abort the whole job when a rank makes no progress for this many seconds (0: never)")
      .at_least(0)
      .may_change_on_resume();
  traj.bind(b);
}

std::vector<std::string> RunConfig::resumable_options() const {
  RunConfig copy(*this);
  OptionBinder declared;
  copy.bind(declared, {});
  return declared.resumable();
}

void RunConfig::validate() const {
  check_declared(*this, std::vector<std::string>{});
  MARLSCHED_REQUIRE(!run_dir.empty(), "--run-dir must not be empty");
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
  if (g_stop_signal != 0) {
    // A second stop while the first waits for the step to end (a step that takes long): the
    // user means now. The last complete checkpoint stays; the one being written, if any, is a
    // .tmp directory that a resume ignores.
    static const char msg[] =
        "marlsched: a second stop signal before the run reached a safe point: exiting now, "
        "without a checkpoint (the last complete one stays)\n";
    const ssize_t n = ::write(2, msg, sizeof msg - 1);
    (void)n;
    ::_exit(128 + sig);
  }
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
  MARLSCHED_REQUIRE(run.team_scope != RunConfig::TeamScope::kTargets || spec.num_targets() > 0,
                    "--team-scope targets needs an env with a targeted action space (geodc); '"
                        << spec.name << "' has none");
}

void check_traj_chunks(const RunConfig& run, const EnvSpec& spec) {
  // HDF5 refuses chunks of 4 GiB or more only when the file is created, after the start; the
  // largest chunk is a rank's observations: [chunk steps, env copies, agents, obs_dim] floats.
  const double chunk_bytes = static_cast<double>(run.traj.chunk_steps) * run.envs_per_rank *
                             run.agents_per_rank * spec.obs_dim() * sizeof(float);
  constexpr double kMaxChunk = 4294967295.0;  // HDF5 1.10's limit on one chunk
  MARLSCHED_REQUIRE(chunk_bytes <= kMaxChunk,
                    "--traj-chunk-steps "
                        << run.traj.chunk_steps << " makes a chunk of " << chunk_bytes / (1 << 20)
                        << " MiB (" << run.envs_per_rank << " env copies x " << run.agents_per_rank
                        << " agents x " << spec.obs_dim()
                        << " floats a step); HDF5 allows at most 4 GiB: give "
                           "at most "
                        << static_cast<long long>(kMaxChunk / (chunk_bytes / run.traj.chunk_steps))
                        << ", or 0 for the rollout length");
}

namespace {

/// One iteration's rollout summed up for the metrics (identical on every rank).
struct RolloutTotals {
  double system_reward = 0, finished_returns = 0;
  int episodes = 0;
  std::vector<double> components;  ///< summed over agents, steps and copies
};

/// The rollout half of an iteration: the learner acts, the world steps, the learner records its
/// feedback (each agent's reward mixed with the team's), the trajectory recorder keeps the step.
class Rollout {
 public:
  Rollout(World& world, Learner& agent, TrajectoryRecorder& traj, double beta, bool team_targets,
          std::vector<double>& episode_returns)
      : world_(world),
        agent_(agent),
        traj_(traj),
        spec_(world.spec()),
        beta_(beta),
        team_targets_(team_targets),
        returns_(episode_returns) {
    const auto e = static_cast<std::size_t>(world.copies());
    fb_.reward.resize(e * static_cast<std::size_t>(world.local_agents()));
    fb_.done.resize(e);
    fb_.truncated.resize(e);
    fb_.terminal.resize(e);
  }

  RolloutTotals run(int it, int steps, LoopTimes& times) {
    const int n = world_.num_agents(), e = world_.copies(), k = world_.local_agents();
    const int nc = static_cast<int>(spec_.reward_components.size());
    RolloutTotals sum;
    sum.components.assign(static_cast<std::size_t>(nc), 0.0);
    agent_.set_training(true);
    for (int t = 0; t < steps; ++t) {
      maybe_inject_fault(world_.comm().rank(), it, t);
      const double a0 = now();
      const Decisions d = agent_.act(world_.policy_input());
      times.act += now() - a0;
      traj_.before_step(world_, it, d);
      world_.step(d.actions);
      check_env_finite(world_, spec_, it, t);
      for (int c = 0; c < e; ++c) {
        double total = 0;
        for (int a = 0; a < n; ++a) {
          total += world_.reward(c, a);
          for (int i = 0; i < nc; ++i)
            sum.components[static_cast<std::size_t>(i)] += world_.component(c, a, i);
        }
        sum.system_reward += total;
        returns_[static_cast<std::size_t>(c)] += total;
        for (int kk = 0; kk < k; ++kk)
          fb_.reward[static_cast<std::size_t>(c * k + kk)] = static_cast<float>(
              learner_reward(spec_, n, world_.first_agent() + kk, beta_, team_targets_, total,
                             [&](int j) { return world_.reward(c, j); }));
        fb_.done[static_cast<std::size_t>(c)] = world_.done(c) ? 1 : 0;
        fb_.truncated[static_cast<std::size_t>(c)] = world_.truncated(c) ? 1 : 0;
        if (world_.done(c)) {
          fb_.terminal[static_cast<std::size_t>(c)] = world_.terminal_obs(c);
          sum.finished_returns += returns_[static_cast<std::size_t>(c)];
          returns_[static_cast<std::size_t>(c)] = 0;
          ++sum.episodes;
        }
      }
      const double a1 = now();
      agent_.record(fb_);
      times.act += now() - a1;
      traj_.after_step(world_);
    }
    return sum;
  }

 private:
  World& world_;
  Learner& agent_;
  TrajectoryRecorder& traj_;
  const EnvSpec& spec_;
  double beta_;
  bool team_targets_;
  std::vector<double>& returns_;
  StepFeedback fb_;
};

/// An iteration's figures from its rollout and update: per slot, each component summed over
/// agents (or, for a mean component, averaged over them).
IterationRecord figures(const EnvSpec& spec, int n, double slots, const RolloutTotals& roll,
                        const UpdateStats& us) {
  IterationRecord r;
  r.episodes = roll.episodes;
  r.reward_per_slot = roll.system_reward / slots;
  r.episode_return = roll.episodes > 0 ? roll.finished_returns / roll.episodes : std::nan("");
  for (std::size_t i = 0; i < roll.components.size(); ++i)
    r.components_per_slot.push_back(roll.components[i] / slots /
                                    (spec.component_is_mean(i) ? n : 1));
  r.update = &us;
  return r;
}

/// The clocks at the start of an iteration: wall, the world's and the loop's.
struct IterationClock {
  double it0;
  StepTimes before;
  LoopTimes loop_before;
};

/// This rank's seconds in the iteration that began at `clock`, now that the world's and the
/// loop's clocks read `w` and `loop`.
void add_timings(IterationRecord& r, const IterationClock& clock, const StepTimes& w,
                 const LoopTimes& loop, double max_rss) {
  const StepTimes& before = clock.before;
  const LoopTimes& loop_before = clock.loop_before;
  r.wall_s = now() - clock.it0;
  r.env_s = w.env - before.env;
  r.exchange_s = w.exchange - before.exchange;
  r.gather_s = w.gather - before.gather;
  r.act_s = loop.act - loop_before.act;
  r.update_s = loop.update - loop_before.update;
  r.allreduce_s = loop.allreduce - loop_before.allreduce;
  r.log_s = loop.log - loop_before.log;
  r.max_rss_mib = max_rss;
}

/// The update with its guards: a heartbeat for the hang watchdog, the finiteness check of its
/// statistics (rank 0), and its time.
UpdateStats guarded_update(Learner& agent, const World& world, const std::string& algo, int it,
                           bool root, LoopTimes& times) {
  const double u0 = now();
  dist::heartbeat("update");
  UpdateStats us = agent.update(world.policy_input());
  maybe_poison_stats(it, us);
  if (root) check_update_finite(us, agent.stat_names(), algo, it);
  times.update += now() - u0 - us.time_allreduce;
  times.allreduce += us.time_allreduce;
  return us;
}

/// What the ranks agree on after each update, in one tiny max-allreduce: a stop request
/// (Slurm's warning signal, SIGTERM, SIGINT) on any rank stops every rank after this same
/// update (none is taken after the last iteration), and the largest resident set.
struct Agreement {
  int stop_signal = 0;
  double max_rss_mib = 0;
};
Agreement agree(const dist::Comm& comm, bool last_iteration) {
  double v[2] = {last_iteration ? 0.0 : static_cast<double>(stop_requested()), rss_mib()};
  comm.allreduce_max(v, 2);
  return {static_cast<int>(v[0]), v[1]};
}

/// Collective: an error unless every rank holds the same shared parameters.
void require_identical(const Learner& agent, int it, TrainSummary& sum) {
  const bool same = agent.shared_parameters_identical();
  sum.parameters_identical = sum.parameters_identical && same;
  if (!same) MARLSCHED_THROW(Error, "shared parameters diverged across ranks at iteration " << it);
}

/// Ends the loop on a stop signal after iteration `it`'s checkpoint: the summary, and rank 0's
/// line on how to continue.
void stop_after(int it, int signal, const RunConfig& run, bool root, TrainSummary& sum) {
  sum.stop_signal = signal;
  sum.iterations = it;
  if (root)
    std::cout << "stopping after iteration " << it << " on " << stop_signal_text(signal)
              << ": checkpoint written; continue with "
              << "`marlsched train --resume " << run.run_dir << "`" << std::endl;
}

/// Collective: checkpoint `state.iteration`, with the trajectory rows it covers.
void save_checkpoint(const dist::Comm& comm, const RunConfig& run, const std::string& config,
                     const World& world, const Learner& agent, const TrajectoryRecorder& traj,
                     TrainerState state) {
  Manifest header;
  header.traj_segment = traj.segment();
  header.traj_rows = traj.rows();
  header.agents_per_rank = world.local_agents();
  header.envs_per_rank = world.copies();
  header.config_fingerprint = config_fingerprint(config, run.resumable_options());
  dist::heartbeat("checkpoint");
  write_checkpoint(comm, run.run_dir, state.iteration, run.keep_checkpoints, header,
                   [&](const std::string& dir) {
                     agent.save(dir + "/" + ckpt_model_file(comm.rank()));
                     state.world = world.save_state();
                     state.save(dir + "/" + ckpt_state_file(comm.rank()));
                   });
}

/// Where a run starts: a resumed run's state and learner from its checkpoint (and the
/// trajectory rows it keeps, into `traj_from`), a warm start's parameters (--init-from), or
/// iteration 0.
TrainerState start_state(const RunConfig& run, const dist::Comm& comm,
                         const std::string& resume_from, int copies, Learner& agent,
                         TrajectoryRecorder::Resume& traj_from) {
  TrainerState state{0, 0, std::vector<double>(static_cast<std::size_t>(copies), 0.0), {}};
  if (!resume_from.empty()) {
    state = TrainerState::load(resume_from + "/" + ckpt_state_file(comm.rank()), copies);
    agent.load(resume_from + "/" + ckpt_model_file(comm.rank()));
    const Manifest m = read_manifest(resume_from + "/MANIFEST");
    traj_from = {m.traj_segment, m.traj_rows};
  } else if (!run.init_from.empty()) {
    agent.init_from(init_model_path(run.init_from, comm.rank()));
    if (comm.is_root())
      std::cout << "starting from the parameters of " << run.init_from << std::endl;
  }
  return state;
}

/// What the trajectory file records of the run (its root attributes).
TrajMeta traj_meta(const RunConfig& run, const LearnerRecipe& learner, const std::string& config,
                   const World& world, int first_iteration) {
  TrajMeta m;
  m.spec = world.spec();
  m.algo = run.algo;
  m.config_toml = sealed_config(config);  // as config.toml holds it
  m.behaviour_policy = learner.behaviour.empty() ? run.algo : learner.behaviour;
  m.behaviour_epsilon = learner.behaviour_epsilon;
  m.seed = run.seed;
  m.agents_per_rank = world.local_agents();
  m.worlds = world.copies();
  m.rollout_steps = learner.rollout_steps;
  m.first_iteration = first_iteration;
  return m;
}

/// Rank 0's first lines: what runs where (a training, or a collection's behaviour policy).
void print_start(const RunConfig& run, const LearnerRecipe& learner, const Learner& agent,
                 const World& world, const std::string& resume_from, int first) {
  if (!resume_from.empty())
    std::cout << "resuming from " << resume_from << " at iteration " << first << std::endl;
  const bool collect = !learner.behaviour.empty();
  const int ranks = world.comm().size();
  std::cout << "marlsched " << (collect ? "collect" : "train") << ": env " << world.spec().name
            << ", " << (collect ? "behaviour policy " + agent.name() : "algo " + run.algo) << ", "
            << world.num_agents() << " agents on " << ranks << (ranks == 1 ? " rank (" : " ranks (")
            << world.local_agents() << " per rank), " << world.copies() << " env copies per rank, "
            << learner.rollout_steps << " steps per rollout, " << run.iterations
            << " iterations, run dir " << run.run_dir << std::endl;
}

}  // namespace

TrainSummary train(const RunConfig& run, const LearnerRecipe& learner, const EnvFactory& factory,
                   const dist::Comm& comm, const std::string& resolved_config,
                   const std::string& resume_from) {
  // Setup: the run directory, the world, the learner, a resumed run's state, the outputs.
  const bool root = comm.is_root();
  if (root) {
    std::filesystem::create_directories(run.run_dir);
    write_file_atomic(run.run_dir + "/config.toml", sealed_config(resolved_config));
  }
  comm.barrier();
  World world(factory, comm, run.agents_per_rank, run.envs_per_rank, run.seed);
  const EnvSpec& spec = world.spec();
  const int n = world.num_agents(), e = world.copies(), k = world.local_agents(),
            T = learner.rollout_steps;
  const bool team_targets = run.team_scope == RunConfig::TeamScope::kTargets;
  auto agent =
      learner.make({&spec, &comm, n, world.first_agent(), k, e, run.seed, team_targets, {}});
  world.set_common_episodes(agent->common_episodes());
  world.set_privileged(agent->wants_privileged());
  world.set_every_shard(agent->needs_every_agent());
  check_env(run, spec);
  const bool resuming = !resume_from.empty();
  TrajectoryRecorder::Resume traj_from;
  TrainerState state = start_state(run, comm, resume_from, e, *agent, traj_from);
  const int first = state.iteration + 1;
  TrajectoryRecorder traj(comm, world, run.traj, run.run_dir,
                          traj_meta(run, learner, resolved_config, world, first), run.iterations,
                          run.threads, traj_from);
  MetricsSink sink(root, run.run_dir, spec, agent->stat_names(), run.iterations, run.tensorboard,
                   run.quiet, first, state.agent_steps, resuming);
  if (root) print_start(run, learner, *agent, world, resume_from, first);
  if (state.world.empty())
    world.reset();
  else
    world.load_state(state.world);
  Rollout rollout(world, *agent, traj, learner.team_reward, team_targets, state.episode_returns);

  // The timed loop: rollout, update, record, checkpoint.
  comm.barrier();
  const double start = now();
  const std::int64_t steps_at_start = state.agent_steps;
  TrainSummary sum;
  LoopTimes times;
  // The iteration's line: its figures, progress and timings.
  const auto record = [&](int it, const RolloutTotals& roll, const UpdateStats& us,
                          const IterationClock& clock, double max_rss) {
    IterationRecord r = figures(spec, n, static_cast<double>(T) * e, roll, us);
    r.iteration = it;
    r.agent_steps = state.agent_steps;
    const double elapsed = now() - start;
    r.agent_steps_per_s =
        static_cast<double>(state.agent_steps - steps_at_start) / std::max(1e-9, elapsed);
    r.eta_s = elapsed / (it - first + 1) * (run.iterations - it);
    add_timings(r, clock, world.times(), times, max_rss);
    sink.record(r);
  };
  for (int it = first; it <= run.iterations; ++it) {
    maybe_inject_fault(comm.rank(), it, -1);
    const IterationClock clock{now(), world.times(), times};
    const RolloutTotals roll = rollout.run(it, T, times);
    const UpdateStats us = guarded_update(*agent, world, run.algo, it, root, times);
    const Agreement agreed = agree(comm, it == run.iterations);
    const bool stop = agreed.stop_signal != 0;
    const bool checkpoint_now =
        stop || (run.checkpoint_every > 0 && it % run.checkpoint_every == 0);
    traj.end_iteration(it, checkpoint_now, stop || it == run.iterations);
    times.log = traj.seconds();
    times.writer = traj.writer_seconds();
    state.agent_steps += static_cast<std::int64_t>(T) * e * comm.size() * k;
    state.iteration = it;
    if (it % run.check_every == 0 || it == run.iterations) require_identical(*agent, it, sum);
    record(it, roll, us, clock, agreed.max_rss_mib);
    if (checkpoint_now) save_checkpoint(comm, run, resolved_config, world, *agent, traj, state);
    if (stop) {
      stop_after(it, agreed.stop_signal, run, root, sum);
      break;
    }
  }

  // The end: every rank's model, and the slowest rank's report.
  comm.barrier();
  sum.wall_seconds = now() - start;
  if (sum.stop_signal == 0) sum.iterations = run.iterations;
  sum.env_steps = state.agent_steps;
  agent->save(model_path(run.run_dir, comm.rank()));
  report_time_split(comm, world.times(), times, sum.wall_seconds,
                    state.agent_steps - steps_at_start, sum.parameters_identical,
                    first <= run.iterations, run.iterations);
  return sum;
}

std::string init_model_path(const std::string& source, int rank) {
  return std::filesystem::exists(source + "/MANIFEST") ? source + "/" + ckpt_model_file(rank)
                                                       : model_path(source, rank);
}

}  // namespace marlsched
