#pragma once
/// \file mpi_bench.hpp
/// Google Benchmark under MPI: every rank runs the same benchmarks (they are collective), each
/// iteration is timed on every rank and the slowest rank's time is reported (manual timing),
/// and only rank 0 prints.
#include <benchmark/benchmark.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

#include "dist/comm.hpp"

namespace marlsched::bench {

/// Runs `f` once per benchmark iteration between a barrier and a max-allreduce of its time.
template <class F>
void timed_slowest_rank(benchmark::State& state, F&& f) {
  for (auto _ : state) {
    MPI_Barrier(MPI_COMM_WORLD);
    const auto t0 = std::chrono::steady_clock::now();
    f();
    double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    state.SetIterationTime(dt);
  }
}

/// The slowest rank's time of one call of `f`, started together after a barrier.
template <class F>
double slowest_rank_seconds(F& f) {
  MPI_Barrier(MPI_COMM_WORLD);
  const auto t0 = std::chrono::steady_clock::now();
  f();
  double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return dt;
}

/// Framework against raw MPI in the same run: each iteration times `framework` and `raw` once
/// each (slowest rank), in an order that swaps every iteration so that neither always runs on
/// warm caches. The iteration time is the framework's; the counters are both medians in µs and
/// their ratio framework/raw (medians: robust to the spikes of a shared machine).
template <class F, class R>
void timed_pair(benchmark::State& state, F&& framework, R&& raw) {
  std::vector<double> tf, tr;
  bool raw_first = false;
  for (auto _ : state) {
    double a, b;
    if (raw_first) {
      b = slowest_rank_seconds(raw);
      a = slowest_rank_seconds(framework);
    } else {
      a = slowest_rank_seconds(framework);
      b = slowest_rank_seconds(raw);
    }
    raw_first = !raw_first;
    tf.push_back(a);
    tr.push_back(b);
    state.SetIterationTime(a);
  }
  auto median = [](std::vector<double>& v) {
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  const double mf = median(tf), mr = median(tr);
  state.counters["framework_us"] = mf * 1e6;
  state.counters["raw_us"] = mr * 1e6;
  state.counters["ratio"] = mf / mr;
}

/// Runs every registered benchmark on every rank; only rank 0 reports.
inline void run_benchmarks(int* argc, char** argv, const dist::Comm& comm) {
  benchmark::Initialize(argc, argv);
  if (comm.rank() == 0) {
    benchmark::RunSpecifiedBenchmarks();
  } else {
    struct Null : benchmark::BenchmarkReporter {
      bool ReportContext(const Context&) override { return true; }
      void ReportRuns(const std::vector<Run>&) override {}
    } quiet;
    benchmark::RunSpecifiedBenchmarks(&quiet);
  }
  benchmark::Shutdown();
}

/// main() of an MPI benchmark program: starts MPI, points `global` at the world communicator,
/// runs `setup` (e.g. thread counts, directories) and every benchmark.
inline int mpi_benchmark_main(int argc, char** argv, dist::Comm*& global,
                              const std::function<void(const dist::Comm&)>& setup = {}) {
  dist::Session session(&argc, &argv);
  auto comm = dist::Comm::world();
  global = &comm;
  if (setup) setup(comm);
  run_benchmarks(&argc, argv, comm);
  global = nullptr;
  return 0;
}

}  // namespace marlsched::bench
