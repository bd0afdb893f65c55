// Environment step cost: ns per agent-step of the geodc env (act + advance + delivery of
// forwarded work), in process, no MPI. Run: build/bench/bench_env
#include <benchmark/benchmark.h>

#include "agents/baselines/heuristics.hpp"
#include "envs/registry.hpp"
#include "geodc/geodc.hpp"

using namespace marlsched;

static void BM_GeoDcStep(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  geodc::Config cfg;
  cfg.replicate_sites = true;
  auto factory = find_env("geodc").make_factory(cfg, n);
  std::vector<std::unique_ptr<Shard>> shards;
  for (int a = 0; a < n; ++a) {
    shards.push_back(factory->make_shard(a));
    shards.back()->reset(1, static_cast<std::uint64_t>(a) + 2);
  }
  auto policy = make_heuristic("least-loaded", factory->spec(), 1, 0);
  const int d = factory->spec().obs_dim();
  std::vector<float> g(static_cast<std::size_t>(n * d));
  std::vector<int> actions;
  std::vector<WorkRecord> out, all;
  std::uint64_t episode = 0;
  for (auto _ : state) {
    for (int a = 0; a < n; ++a) shards[static_cast<std::size_t>(a)]->observe(g.data() + a * d);
    GlobalObs view{g.data(), n, d};
    PolicyInput in{&factory->spec(), 1, n, 0, n, {view}, {0}};
    policy->act(in, actions);
    all.clear();
    bool done = false;
    for (int a = 0; a < n; ++a) {
      out.clear();
      shards[static_cast<std::size_t>(a)]->act(actions[static_cast<std::size_t>(a)], view, out);
      done = shards[static_cast<std::size_t>(a)]->advance().truncated;
      all.insert(all.end(), out.begin(), out.end());
    }
    for (const auto& r : all) shards[static_cast<std::size_t>(r.dest)]->receive(r);
    if (done) {
      ++episode;
      for (int a = 0; a < n; ++a)
        shards[static_cast<std::size_t>(a)]->reset(episode, episode * 131 + a);
    }
  }
  state.SetItemsProcessed(state.iterations() * n);
  state.counters["ns_per_agent_step"] =
      benchmark::Counter(static_cast<double>(state.iterations() * n),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_GeoDcStep)->Arg(4)->Arg(16)->Arg(64);

BENCHMARK_MAIN();
