// Environment step cost, in process, no MPI. Run: build/bench/bench_env
//   BM_GeoDcStep: ns per agent-step of the geodc env (act + advance + delivery of forwarded work)
//   BM_AsetEvents: discrete events per second of the aset edge simulation (arrivals, admissions,
//     completions, results), with the windowed exchange done in process; the load is scaled by
//     multiplying every cluster's GPUs and query rate (same utilisation, more events per step)
//   BM_LstcbEvents: events per second of the lstcb batching simulation (arrivals, deliveries,
//     batch completions, timeouts) under timeout batching, rates multiplied by `scale` (with
//     a proportionally faster GPU profile, so that utilisation stays the same)
#include <benchmark/benchmark.h>

#include <fstream>

#include "envs/aset/aset.hpp"
#include "envs/baselines.hpp"
#include "envs/geodc/geodc.hpp"
#include "envs/lstcb/lstcb.hpp"
#include "envs/registry.hpp"

using namespace marlsched;

namespace {
/// Steps `copies` independent worlds of n geodc sites (the default zones replicated, `neighbours`
/// ring neighbours per site, 0: every site) in process with least-loaded: observe, act, advance,
/// the forwarded work delivered; a world resets at its episode's end.
void step_geodc_worlds(benchmark::State& state, int n, int copies, int neighbours) {
  geodc::Config cfg;
  cfg.replicate_sites = true;
  cfg.keep_sites(static_cast<std::size_t>(n));
  cfg.neighbours = neighbours;
  auto factory = find_env("geodc").make_factory(cfg, n);
  const EnvSpec& spec = factory->spec();
  std::vector<std::unique_ptr<Shard>> shards;
  for (int c = 0; c < copies; ++c)
    for (int a = 0; a < n; ++a) {
      shards.push_back(factory->make_shard(a));
      shards.back()->reset(static_cast<std::uint64_t>(c) + 1,
                           static_cast<std::uint64_t>(c * n + a) + 2);
    }
  auto policy = make_heuristic("least-loaded", spec, 1);
  const int d = spec.obs_dim();
  std::vector<float> g(static_cast<std::size_t>(copies * n * d));
  std::vector<int> actions;
  std::vector<WorkRecord> out, all;
  std::vector<std::uint64_t> episode(static_cast<std::size_t>(copies), 0);
  for (auto _ : state) {
    for (int c = 0; c < copies; ++c) {
      float* gc = g.data() + static_cast<std::size_t>(c * n * d);
      const auto at = [&](int a) -> Shard& { return *shards[static_cast<std::size_t>(c * n + a)]; };
      for (int a = 0; a < n; ++a) at(a).observe(gc + a * d);
      GlobalObs view{gc, n, d};
      PolicyInput in{&spec, 1, n, 0, n, {view}, {0}, {0}, {}, {}};
      policy->act(in, actions);
      all.clear();
      bool done = false;
      for (int a = 0; a < n; ++a) {
        out.clear();
        at(a).act(actions[static_cast<std::size_t>(a)], view, out);
        done = at(a).advance().truncated;
        all.insert(all.end(), out.begin(), out.end());
      }
      for (const auto& r : all) at(r.dest).receive(r);
      if (done) {
        const std::uint64_t ep = ++episode[static_cast<std::size_t>(c)];
        for (int a = 0; a < n; ++a)
          at(a).reset(ep + 977 * static_cast<std::uint64_t>(c),
                      ep * 131 + static_cast<std::uint64_t>(c * n + a));
      }
    }
  }
  state.SetItemsProcessed(state.iterations() * n * copies);
  state.counters["ns_per_agent_step"] =
      benchmark::Counter(static_cast<double>(state.iterations() * n * copies),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
}  // namespace

static void BM_GeoDcStep(benchmark::State& state) {
  step_geodc_worlds(state, static_cast<int>(state.range(0)), 1, 0);
}
BENCHMARK(BM_GeoDcStep)->Arg(4)->Arg(16)->Arg(64);

// The layout of a training rank: `copies` independent worlds of n sites each (the ladder's
// replicated zones, 3 ring neighbours above 4 sites). This is the env's own rate at the scale ES
// trains it, cache effects of copies x sites included: bench/es_rate.sh prints ES's training
// rate beside it.
static void BM_GeoDcCopies(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  step_geodc_worlds(state, n, static_cast<int>(state.range(1)), n > 4 ? 3 : 0);
}
BENCHMARK(BM_GeoDcCopies)->Args({4, 32})->Args({32, 32})->Args({128, 32});

namespace {
/// One decision step of an event-driven env's shards in one process: observe, act, every
/// exchange window with the work delivered in process, advance; resets at episode ends.
struct InProcess {
  const EnvSpec& spec;
  std::vector<std::unique_ptr<Shard>> shards;
  std::unique_ptr<Policy> policy;
  std::vector<float> g;
  std::vector<int> actions;
  std::vector<std::vector<WorkRecord>> out;
  std::uint64_t episode = 0;

  InProcess(const EnvFactory& f, int n, const std::string& baseline)
      : spec(f.spec()), policy(make_heuristic(baseline, f.spec(), 1)) {
    for (int a = 0; a < n; ++a) {
      shards.push_back(f.make_shard(a));
      shards.back()->reset(1, static_cast<std::uint64_t>(a) + 2);
    }
    g.resize(static_cast<std::size_t>(n * spec.obs_dim()));
    out.resize(static_cast<std::size_t>(n));
  }
  void step() {
    const int n = static_cast<int>(shards.size()), d = spec.obs_dim();
    for (int a = 0; a < n; ++a) shards[static_cast<std::size_t>(a)]->observe(g.data() + a * d);
    GlobalObs view{g.data(), n, d};
    PolicyInput in{&spec, 1, n, 0, n, {view}, {0}, {0}, {}, {}};
    policy->act(in, actions);
    for (int a = 0; a < n; ++a)
      shards[static_cast<std::size_t>(a)]->act(actions[static_cast<std::size_t>(a)], view,
                                               out[static_cast<std::size_t>(a)]);
    for (int w = 0; w < spec.windows; ++w) {
      for (int a = 0; a < n; ++a)
        shards[static_cast<std::size_t>(a)]->window(w, out[static_cast<std::size_t>(a)]);
      for (auto& box : out) {
        for (const auto& r : box) shards[static_cast<std::size_t>(r.dest)]->receive(r);
        box.clear();
      }
    }
    bool done = false;
    for (int a = 0; a < n; ++a) done = shards[static_cast<std::size_t>(a)]->advance().truncated;
    if (done) {
      ++episode;
      for (int a = 0; a < n; ++a)
        shards[static_cast<std::size_t>(a)]->reset(episode, episode * 131 + a);
    }
  }
  template <class ShardT>
  std::uint64_t events() const {
    std::uint64_t e = 0;
    for (const auto& sh : shards) e += dynamic_cast<const ShardT&>(*sh).events();
    return e;
  }
};

void report_events(benchmark::State& state, double ev) {
  state.counters["events_per_s"] = benchmark::Counter(ev, benchmark::Counter::kIsRate);
  state.counters["events_per_step"] = ev / static_cast<double>(state.iterations());
  state.counters["ns_per_event"] =
      benchmark::Counter(ev, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
}  // namespace

static void BM_AsetEvents(benchmark::State& state) {
  const int scale = static_cast<int>(state.range(0));
  const bool forward = state.range(1) != 0;
  aset::Config cfg;
  for (auto& g : cfg.gpus) g *= scale;
  for (auto& r : cfg.rates) r *= scale;
  auto factory = find_env("aset").make_factory(cfg, 4);
  InProcess run(*factory, 4, forward ? "least-loaded" : "local-only");
  const std::uint64_t events0 = run.events<aset::Shard>();
  for (auto _ : state) run.step();
  report_events(state, static_cast<double>(run.events<aset::Shard>() - events0));
}
BENCHMARK(BM_AsetEvents)
    ->ArgNames({"scale", "forward"})
    ->Args({1, 0})
    ->Args({1, 1})
    ->Args({100, 0})
    ->Args({100, 1})
    ->Args({1000, 1});

static void BM_LstcbEvents(benchmark::State& state) {
  const double scale = static_cast<double>(state.range(0));
  lstcb::Config cfg;
  for (auto& r : cfg.rates) r *= scale;
  // A GPU `scale` times faster: the same profile with times divided by `scale`.
  auto p = lstcb::builtin_profiles().front();
  p.a_ms /= scale;
  p.c_ms /= scale;
  p.model = "scaled";
  const std::string file = "/tmp/marlsched-bench-profile.csv";
  std::ofstream(file) << lstcb::profiles_csv({p});
  cfg.profile_file = file;
  cfg.profile = "scaled/" + p.gpu;
  auto factory = find_env("lstcb").make_factory(cfg, 4);
  InProcess run(*factory, 4, "timeout-batching");
  const std::uint64_t events0 = run.events<lstcb::Shard>();
  for (auto _ : state) run.step();
  report_events(state, static_cast<double>(run.events<lstcb::Shard>() - events0));
}
BENCHMARK(BM_LstcbEvents)->ArgName("scale")->Arg(1)->Arg(100)->Arg(1000);

BENCHMARK_MAIN();
