#pragma once
/// \file mpi_bench.hpp
/// Google Benchmark under MPI: every rank runs the same benchmarks (they are collective), each
/// iteration is timed on every rank and the slowest rank's time is reported (manual timing),
/// and only rank 0 prints.
#include <benchmark/benchmark.h>
#include <mpi.h>

#include <chrono>
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

}  // namespace marlsched::bench
