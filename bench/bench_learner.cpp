// Learner update cost per sample: MAPPO (and DQN for comparison) on the default geodc env with
// the default networks. Each benchmark iteration collects one rollout of the learner's own
// length through a World (untimed) and then times update() alone (slowest rank); the counter
// ns_per_sample divides that by the samples the update learns from (rollout steps x env copies
// x local agents for MAPPO; gradient steps x batch for DQN).
// Run: mpirun -n 1 build/bench/bench_learner   (or -n 2: the gradient allreduce is included)
// MARLSCHED_BENCH_THREADS=N: N threads per rank (torch's and the BLAS's, as --threads N; default
// 1), e.g. MARLSCHED_BENCH_THREADS=2 mpirun --map-by slot:PE=2 -n 1 build/bench/bench_learner
#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

#include "agents/dqn/dqn.hpp"
#include "agents/mappo/mappo.hpp"
#include "agents/registry.hpp"
#include "agents/torch_threads.hpp"
#include "envs/geodc/geodc.hpp"
#include "envs/registry.hpp"
#include "mpi_bench.hpp"
#include "train/world.hpp"

using namespace marlsched;

namespace {
dist::Comm* g_comm = nullptr;

void run_learner(benchmark::State& state, const std::string& algo) {
  const int k = static_cast<int>(state.range(0)), copies = 4;
  const int n = k * g_comm->size();
  geodc::Config env;
  env.replicate_sites = true;
  env.keep_sites(static_cast<std::size_t>(n));
  auto factory = find_env("geodc").make_factory(env, n);
  World world(*factory, *g_comm, k, copies, 1);
  LearnerConfigs cfg;
  cfg.get<DqnConfig>().warmup = cfg.get<DqnConfig>().batch;  // learn from the first rollout on
  auto learner =
      make_learner(algo, cfg, world.spec(), *g_comm, n, world.first_agent(), k, copies, 1);
  const int T = cfg.rollout_steps(algo, world.spec());
  world.reset();
  std::vector<int> actions;
  StepFeedback fb;
  fb.reward.resize(static_cast<std::size_t>(copies * k));
  fb.done.resize(static_cast<std::size_t>(copies));
  fb.truncated.resize(static_cast<std::size_t>(copies));
  fb.terminal.resize(static_cast<std::size_t>(copies));
  auto rollout = [&] {
    for (int t = 0; t < T; ++t) {
      learner->act(world.policy_input(), actions);
      world.step(actions);
      for (int c = 0; c < copies; ++c) {
        for (int kk = 0; kk < k; ++kk)
          fb.reward[static_cast<std::size_t>(c * k + kk)] =
              world.reward(c, world.first_agent() + kk);
        fb.done[static_cast<std::size_t>(c)] = world.done(c) ? 1 : 0;
        fb.truncated[static_cast<std::size_t>(c)] = world.truncated(c) ? 1 : 0;
        if (world.done(c)) fb.terminal[static_cast<std::size_t>(c)] = world.terminal_obs(c);
      }
      learner->record(fb);
    }
  };
  if (algo == "dqn") rollout();  // fill the replay buffer past the warm-up first
  std::int64_t samples = 0;
  double seconds = 0;
  for (auto _ : state) {
    rollout();
    auto update = [&] { learner->update(world.policy_input()); };
    const double t = bench::slowest_rank_seconds(update);
    state.SetIterationTime(t);
    seconds += t;
    samples += algo == "dqn" ? static_cast<std::int64_t>(cfg.get<DqnConfig>().updates) *
                                   cfg.get<DqnConfig>().batch
                             : static_cast<std::int64_t>(T) * copies * k;
  }
  state.counters["ns_per_sample"] = 1e9 * seconds / static_cast<double>(samples);
  state.counters["samples_per_update"] = static_cast<double>(samples) / state.iterations();
}

void BM_MappoUpdate(benchmark::State& s) {
  run_learner(s, "mappo");
}
void BM_DqnUpdate(benchmark::State& s) {
  run_learner(s, "dqn");
}
}  // namespace

// Fixed iteration counts: every rank must run the same number of collectives.
BENCHMARK(BM_MappoUpdate)
    ->ArgName("agents_per_rank")
    ->Arg(1)
    ->Arg(4)
    ->Arg(16)
    ->UseManualTime()
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DqnUpdate)
    ->ArgName("agents_per_rank")
    ->Arg(1)
    ->Arg(4)
    ->UseManualTime()
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond);

int main(int argc, char** argv) {
  const char* threads = std::getenv("MARLSCHED_BENCH_THREADS");
  const int n = threads ? std::max(1, std::atoi(threads)) : 1;
  return bench::mpi_benchmark_main(argc, argv, g_comm,
                                   [n](const dist::Comm&) { set_torch_threads(n); });  // and BLAS
}
