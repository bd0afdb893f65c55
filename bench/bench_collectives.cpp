// Framework collectives against raw MPI on the same bytes, in the same run:
//   obs allgather      Comm::allgather        vs MPI_Allgather
//   work alltoallv     Comm::alltoallv (Exchange) vs MPI_Alltoall + MPI_Alltoallv on packed buffers
//   grad allreduce     dist::GradBucket::average (in place, after the 1/size-seeded backward)
//                      vs MPI_Allreduce
//   grad iallreduce    GradBucket::start + finish (MPI_Iallreduce) vs GradBucket::average
// Each iteration times both forms once, alternating which goes first (bench::timed_pair); the
// slowest rank's time counts, and the counters give both medians and their ratio.
// Only rank 0 prints. Run: mpirun -n 2 build/bench/bench_collectives
#include <benchmark/benchmark.h>
#include <mpi.h>
#include <torch/torch.h>

#include "dist/comm.hpp"
#include "dist/grad.hpp"
#include "mpi_bench.hpp"

using namespace marlsched;

namespace {
dist::Comm* g_comm = nullptr;

template <class F, class R>
void timed(benchmark::State& state, F&& framework, R&& raw) {
  bench::timed_pair(state, framework, raw);
  state.SetBytesProcessed(state.iterations() * state.range(0) * 4);
}

void BM_Allgather(benchmark::State& s) {
  std::vector<float> send(static_cast<std::size_t>(s.range(0)), 1.f);
  std::vector<float> recv(send.size() * static_cast<std::size_t>(g_comm->size()));
  timed(
      s, [&] { g_comm->allgather(send.data(), static_cast<int>(send.size()), recv.data()); },
      [&] {
        MPI_Allgather(send.data(), static_cast<int>(send.size()), MPI_FLOAT, recv.data(),
                      static_cast<int>(send.size()), MPI_FLOAT, MPI_COMM_WORLD);
      });
}
void BM_Alltoallv(benchmark::State& s) {
  const int n = g_comm->size();
  const int per = static_cast<int>(s.range(0)) * 4 / n;
  dist::Exchange x;
  const std::vector<std::size_t> bytes(static_cast<std::size_t>(n), static_cast<std::size_t>(per));
  std::vector<std::byte> sbuf(static_cast<std::size_t>(per * n)), rbuf(sbuf.size());
  std::vector<int> cnt(static_cast<std::size_t>(n), per), rc(static_cast<std::size_t>(n)),
      disp(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) disp[static_cast<std::size_t>(r)] = r * per;
  timed(
      s,
      [&] {
        x.layout(bytes);  // what World::exchange does per call (the bytes are written in place)
        g_comm->alltoallv(x);
        benchmark::DoNotOptimize(x.recv.data());
      },
      [&] {
        MPI_Alltoall(cnt.data(), 1, MPI_INT, rc.data(), 1, MPI_INT, MPI_COMM_WORLD);
        MPI_Alltoallv(sbuf.data(), cnt.data(), disp.data(), MPI_BYTE, rbuf.data(), rc.data(),
                      disp.data(), MPI_BYTE, MPI_COMM_WORLD);
      });
}
/// `n` floats of gradients spread over 8 tensors, as in a small actor-critic.
std::vector<torch::Tensor> grad_params(std::int64_t n) {
  std::vector<torch::Tensor> params;
  for (int i = 0; i < 8; ++i) {
    params.push_back(torch::zeros({n / 8}));
    params.back().mutable_grad() = torch::ones({n / 8});
  }
  return params;
}

void BM_GradAllreduce(benchmark::State& s) {
  auto params = grad_params(s.range(0));
  dist::GradBucket bucket(params);  // as the learners hold them: built once
  // ... and fill it as they do, through the 1/size-seeded backward (so averaging is the allreduce
  // alone; the gradients' values do not matter to the timing).
  for (auto& p : params) p.set_requires_grad(true);
  auto loss = params[0].sum();
  for (std::size_t i = 1; i < params.size(); ++i) loss = loss + params[i].sum();
  bucket.backward(loss, *g_comm);
  std::vector<float> buf(static_cast<std::size_t>(s.range(0) / 8 * 8), 1.f);
  timed(
      s, [&] { bucket.average(*g_comm); },
      [&] {
        MPI_Allreduce(MPI_IN_PLACE, buf.data(), static_cast<int>(buf.size()), MPI_FLOAT, MPI_SUM,
                      MPI_COMM_WORLD);
      });
}
// The nonblocking form of the same reduction (GradBucket::start + finish: MPI_Iallreduce, which
// Open MPI runs in its libnbc component) against the blocking one (average: MPI_Allreduce) on
// one bucket: what MAPPO's --overlap-grads costs where nothing overlaps it.
void BM_GradIallreduce(benchmark::State& s) {
  dist::GradBucket bucket(grad_params(s.range(0)));
  timed(
      s,
      [&] {
        bucket.start(*g_comm);
        bucket.finish();
      },
      [&] { bucket.average(*g_comm); });
}
}  // namespace

// Fixed iteration counts: every rank must run the same number of collectives.
#define MARLSCHED_SIZES \
  ->Arg(1 << 10)->Arg(1 << 14)->Arg(1 << 18)->UseManualTime()->Iterations(1000)
BENCHMARK(BM_Allgather) MARLSCHED_SIZES;
BENCHMARK(BM_Alltoallv) MARLSCHED_SIZES;
BENCHMARK(BM_GradAllreduce) MARLSCHED_SIZES;
// 1 << 15 floats: about MAPPO's default actor and critic together (6,920 + 24,449).
BENCHMARK(BM_GradIallreduce) MARLSCHED_SIZES->Arg(1 << 15);

int main(int argc, char** argv) {
  return bench::mpi_benchmark_main(argc, argv, g_comm,
                                   [](const dist::Comm&) { torch::set_num_threads(1); });
}
