// The dataset reader (io/dataset.hpp) against a raw read of the same bytes, in one run.
// Every rank writes its part of a trajectory file of the default layout (geodc's 14
// observation floats, 4 worlds, agents-per-rank agents per rank, ITERATIONS x 96 steps), then:
//   reader   read_dataset (collective hyperslab reads, world-major reordering), timed on the
//            slowest rank, world-steps and transitions per second
//   raw      each rank pread()s as many bytes of the same file as its reader returned,
//            sequentially (what the reader cannot beat)
// Three rounds each, alternating; the page cache is warm after the first (written just before).
// Run: mpirun -n 2 build/bench/bench_dataset [AGENTS_PER_RANK [ITERATIONS]]   (launch/env.sh
// sourced; files go to $MARLSCHED_BENCH_DIR, default /tmp)
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "dist/comm.hpp"
#include "io/dataset.hpp"
#include "io/trajectory.hpp"

using namespace marlsched;

namespace {
constexpr int kT = 96, kW = 4, kD = 14, kC = 6;

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

EnvSpec bench_spec() {
  EnvSpec s;
  s.name = "bench";
  for (int j = 0; j < kD; ++j) s.obs_fields.push_back("f" + std::to_string(j));
  s.num_public = 4;
  for (int a = 0; a < 8; ++a) s.action_names.push_back("a" + std::to_string(a));
  for (int c = 0; c < kC; ++c) s.reward_components.push_back("c" + std::to_string(c));
  s.episode_length = kT;
  return s;
}

void write_file(const dist::Comm& comm, const std::string& path, int k, int iterations) {
  TrajConfig cfg;
  cfg.writer = "inline";
  TrajMeta m;
  m.spec = bench_spec();
  m.algo = "bench";
  m.agents_per_rank = k;
  m.worlds = kW;
  m.rollout_steps = kT;
  TrajectoryWriter w(comm, cfg, path, m);
  const auto wk = static_cast<std::size_t>(kW * k);
  TrajStep s;
  s.observations.resize(wk * kD);
  s.next_observations.resize(wk * kD);
  s.actions.assign(wk, 1);
  s.rewards.assign(wk, 0.5f);
  s.log_probs.assign(wk, -2.f);
  s.values.assign(wk, 0.f);
  s.reward_components.assign(wk * kC, 0.1f);
  s.terminations.assign(kW, 0);
  s.episode_ids.assign(kW, 0);
  for (int it = 1; it <= iterations; ++it) {
    for (int t = 0; t < kT; ++t) {
      s.iteration = it;
      for (std::size_t i = 0; i < s.observations.size(); ++i)
        s.observations[i] = 0.01f * static_cast<float>((i * 7 + static_cast<std::size_t>(t)) % 97);
      s.next_observations = s.observations;
      s.truncations.assign(kW, t == kT - 1 ? 1 : 0);
      s.episode_steps.assign(kW, t);
      w.append(s);
    }
    if (it % 10 == 0) w.flush(it);
  }
  w.close(iterations);
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  {
    auto comm = dist::Comm::world();
    const int k = argc > 1 ? std::atoi(argv[1]) : 2;
    const int iterations = argc > 2 ? std::atoi(argv[2]) : 100;
    const char* d = std::getenv("MARLSCHED_BENCH_DIR");
    const std::string dir = std::string(d ? d : "/tmp") + "/marlsched-bench-dataset";
    if (comm.is_root()) std::filesystem::create_directories(dir);
    comm.barrier();
    const std::string path = dir + "/data.h5";
    write_file(comm, path, k, iterations);
    const auto spec = bench_spec();
    double bytes = 0;
    std::int64_t world_steps = 0, transitions = 0;
    std::vector<double> reader, raw;
    std::vector<char> buf;
    for (int round = 0; round < 3; ++round) {
      comm.barrier();
      double t0 = now();
      const LocalDataset ds = read_dataset(comm, {path}, spec, comm.rank() * k, k);
      double t = now() - t0;
      comm.allreduce_max(&t, 1);
      reader.push_back(t);
      world_steps = ds.rows;
      transitions = ds.transitions();
      bytes = static_cast<double>((ds.observations.size() + ds.next_observations.size() +
                                   ds.rewards.size() + ds.log_probs.size()) *
                                      sizeof(float) +
                                  ds.actions.size() * sizeof(std::int32_t) +
                                  (ds.terminations.size() + ds.truncations.size()) *
                                      sizeof(std::uint8_t));
      buf.resize(static_cast<std::size_t>(bytes));
      comm.barrier();
      t0 = now();
      const int fd = ::open(path.c_str(), O_RDONLY);
      std::size_t got = 0;
      const auto size = static_cast<std::size_t>(std::filesystem::file_size(path));
      while (got < buf.size()) {
        const std::size_t want = std::min(buf.size() - got, std::size_t{1} << 22);
        const ssize_t r = ::pread(fd, buf.data() + got, want, static_cast<off_t>(got % size));
        if (r <= 0) break;
        got += static_cast<std::size_t>(r);
      }
      ::close(fd);
      t = now() - t0;
      comm.allreduce_max(&t, 1);
      raw.push_back(t);
    }
    if (comm.is_root()) {
      std::printf(
          "bench_dataset: %d ranks x %d agents, %d iterations of %d steps x %d worlds: "
          "%lld world-steps, %lld transitions per rank, %.1f MB read per rank\n",
          comm.size(), k, iterations, kT, kW, static_cast<long long>(world_steps),
          static_cast<long long>(transitions), bytes / 1e6);
      for (int r = 0; r < 3; ++r)
        std::printf(
            "round %d: reader %.4f s (%.3g world-steps/s, %.3g transitions/s, %.0f MB/s), "
            "raw pread %.4f s (%.0f MB/s), reader/raw %.2f\n",
            r + 1, reader[r], world_steps / reader[r], transitions / reader[r],
            bytes / 1e6 / reader[r], raw[r], bytes / 1e6 / raw[r], reader[r] / raw[r]);
    }
    comm.barrier();
    if (comm.is_root()) std::filesystem::remove_all(dir);
  }
  MPI_Finalize();
  return 0;
}
