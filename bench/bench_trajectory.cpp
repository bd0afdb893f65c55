// Trajectory logging cost against a raw sequential write of the same bytes, in the same run.
// One benchmark iteration = one training iteration's worth of the default run's data on every
// rank (96 steps x 4 worlds x agents-per-rank agents, geodc's 14 observation floats and 6 reward
// components): buffered, then flushed collectively into one parallel HDF5 file.
//   Writer/deflate         TrajectoryWriter, deflate 1 without shuffle (--traj-compression deflate)
//   Writer/none            TrajectoryWriter, no compression (the default)
//   Raw/write              each rank write()s the same bytes to its own file
//   Raw/write+writeback    the same plus sync_file_range(SYNC_FILE_RANGE_WRITE) on each node's
//                          first rank, as an unsynced flush does (the default between checkpoints)
//   Raw/write+fsync        the same plus fsync, as a synced flush does (checkpoints, the last one;
//                          every flush with --traj-sync flush)
// The writer's flushes here are unsynced (`flush(it)`), as between checkpoints in training.
// Time per iteration is the slowest rank's (manual timing; fixed iteration counts so that all
// ranks run the same collectives). Only rank 0 prints. Files go to $MARLSCHED_BENCH_DIR (/tmp).
// Run: mpirun -n 4 build/bench/bench_trajectory   (launch/env.sh sourced)
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <mpi.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "dist/comm.hpp"
#include "io/trajectory.hpp"
#include "mpi_bench.hpp"

using namespace marlsched;

namespace {
dist::Comm* g_comm = nullptr;
constexpr int kT = 96, kW = 4, kD = 14, kC = 6;

std::string bench_dir() {
  const char* d = std::getenv("MARLSCHED_BENCH_DIR");
  return std::string(d ? d : "/tmp") + "/marlsched-bench-traj";
}

int agents_per_rank(const benchmark::State& s) {
  return static_cast<int>(s.range(0));
}

TrajStep make_step(int k, int t) {
  const auto wk = static_cast<std::size_t>(kW * k);
  TrajStep s;
  s.iteration = 1;
  // Smoothly varying values, compressible about as much as real observations.
  s.observations.resize(wk * kD);
  for (std::size_t i = 0; i < s.observations.size(); ++i)
    s.observations[i] =
        0.5f + 0.01f * static_cast<float>((i * 7 + static_cast<std::size_t>(t)) % 97);
  s.next_observations = s.observations;
  s.actions.assign(wk, t % 8);
  s.rewards.assign(wk, 0.1f * static_cast<float>(t));
  s.log_probs.assign(wk, -2.0f);
  s.values.assign(wk, 1.5f);
  s.reward_components.assign(wk * kC, 0.25f);
  s.terminations.assign(kW, 0);
  s.truncations.assign(kW, t == kT - 1);
  s.episode_ids.assign(kW, 0);
  s.episode_steps.assign(kW, t);
  return s;
}

std::size_t step_bytes(const TrajStep& s) {
  return (s.observations.size() + s.next_observations.size() + s.rewards.size() +
          s.log_probs.size() + s.values.size() + s.reward_components.size()) *
             4 +
         s.actions.size() * 4 + s.terminations.size() + s.truncations.size() +
         s.episode_ids.size() * 8 + s.episode_steps.size() * 4 + 4;
}

template <class F>
void timed(benchmark::State& state, F&& f) {
  bench::timed_slowest_rank(state, f);
  const int k = agents_per_rank(state);
  const auto transitions = static_cast<std::int64_t>(kT) * kW * k * g_comm->size();
  state.SetItemsProcessed(state.iterations() * transitions);
  state.SetBytesProcessed(state.iterations() * kT *
                          static_cast<std::int64_t>(step_bytes(make_step(k, 0))) * g_comm->size());
  state.counters["agents"] = k * g_comm->size();
}

void writer(benchmark::State& s, const std::string& compression) {
  const int k = agents_per_rank(s);
  TrajConfig cfg;
  cfg.compression = compression;
  TrajMeta meta;
  meta.spec.name = "bench";
  for (int i = 0; i < kD; ++i) meta.spec.obs_fields.push_back("o" + std::to_string(i));
  meta.spec.action_names.assign(8, "a");
  meta.spec.reward_components.assign(kC, "c");
  meta.agents_per_rank = k;
  meta.worlds = kW;
  meta.rollout_steps = kT;
  std::vector<TrajStep> steps;
  for (int t = 0; t < kT; ++t) steps.push_back(make_step(k, t));
  const std::string path = bench_dir() + "/writer-" + compression + ".h5";
  {
    TrajectoryWriter w(*g_comm, cfg, path, meta);
    int it = 0;
    timed(s, [&] {
      for (const auto& st : steps) w.append(st);
      w.flush(++it);
    });
    w.close(it);
  }
  if (g_comm->is_root()) std::filesystem::remove(path);
}

enum class Sync { None, Writeback, Fsync };

void raw(benchmark::State& s, Sync sync) {
  const int k = agents_per_rank(s);
  const bool writeback = sync == Sync::Writeback && g_comm->node_rank() == 0;
  const std::string path = bench_dir() + "/raw-" + std::to_string(g_comm->rank()) + "-" +
                           std::to_string(static_cast<int>(sync)) + ".bin";
  std::vector<std::byte> buf(static_cast<std::size_t>(kT) * step_bytes(make_step(k, 0)),
                             std::byte{1});
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  timed(s, [&] {
    std::size_t off = 0;
    while (off < buf.size()) {
      const auto n = ::write(fd, buf.data() + off, buf.size() - off);
      if (n <= 0) break;
      off += static_cast<std::size_t>(n);
    }
    if (sync == Sync::Fsync) ::fsync(fd);
    if (writeback) ::sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
  });
  ::close(fd);
  std::filesystem::remove(path);
}

void BM_Writer_Deflate(benchmark::State& s) {
  writer(s, "deflate");
}
void BM_Writer_None(benchmark::State& s) {
  writer(s, "none");
}
void BM_Raw_Write(benchmark::State& s) {
  raw(s, Sync::None);
}
void BM_Raw_WriteWriteback(benchmark::State& s) {
  raw(s, Sync::Writeback);
}
void BM_Raw_WriteFsync(benchmark::State& s) {
  raw(s, Sync::Fsync);
}
}  // namespace

// Agents per rank: 1 (the default run) and 16.
#define MARLSCHED_CASES \
  ->Arg(1)->Arg(16)->UseManualTime()->Iterations(40)->Unit(benchmark::kMillisecond)
BENCHMARK(BM_Writer_Deflate) MARLSCHED_CASES;
BENCHMARK(BM_Writer_None) MARLSCHED_CASES;
BENCHMARK(BM_Raw_Write) MARLSCHED_CASES;
BENCHMARK(BM_Raw_WriteWriteback) MARLSCHED_CASES;
BENCHMARK(BM_Raw_WriteFsync) MARLSCHED_CASES;

int main(int argc, char** argv) {
  return bench::mpi_benchmark_main(argc, argv, g_comm, [](const dist::Comm& comm) {
    if (comm.is_root()) std::filesystem::create_directories(bench_dir());
    comm.barrier();
  });
}
