#include <gtest/gtest.h>
#include <torch/torch.h>

#include "dist/grad.hpp"

using namespace marlsched;

// PMPI interposition: count MPI_Allreduce calls made by the library.
static int g_allreduce_calls = 0;
extern "C" int MPI_Allreduce(const void* s, void* r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c) {
  ++g_allreduce_calls;
  return PMPI_Allreduce(s, r, n, t, op, c);
}

TEST(Grad, OneFlattenedAllreduceAveragesEveryTensor) {
  torch::set_num_threads(1);
  auto comm = dist::Comm::world();
  const int r = comm.rank(), n = comm.size();
  torch::nn::Sequential net(torch::nn::Linear(5, 7), torch::nn::Tanh(), torch::nn::Linear(7, 3));
  auto params = net->parameters();
  ASSERT_EQ(params.size(), 4u);
  // Rank-dependent gradients: g = (rank + 1) * (index + 1) elementwise.
  for (auto& p : params) {
    p.mutable_grad() = torch::empty_like(p);
    auto flat = torch::arange(p.numel(), torch::kFloat32).reshape(p.sizes()) + 1;
    p.mutable_grad().copy_(flat * static_cast<float>(r + 1));
  }
  g_allreduce_calls = 0;
  const auto floats = dist::average_gradients(params, comm);
  EXPECT_EQ(g_allreduce_calls, n > 1 ? 1 : 0) << "gradients must travel in ONE allreduce";
  std::int64_t total = 0;
  for (auto& p : params) total += p.numel();
  EXPECT_EQ(floats, total);
  const float mean_factor = (n + 1) / 2.0f;  // mean of 1..n
  for (auto& p : params) {
    auto expect = (torch::arange(p.numel(), torch::kFloat32).reshape(p.sizes()) + 1) * mean_factor;
    EXPECT_TRUE(torch::allclose(p.grad(), expect, 1e-5, 1e-5));
  }
}

TEST(Grad, MissingGradientsCountAsZeroAndBroadcastSynchronises) {
  auto comm = dist::Comm::world();
  torch::manual_seed(100 + comm.rank());  // different init per rank
  torch::nn::Linear a(3, 2), b(2, 2);
  std::vector<torch::Tensor> params = a->parameters();
  for (auto& p : b->parameters()) params.push_back(p);
  dist::broadcast_parameters(params, comm);
  EXPECT_TRUE(dist::parameters_identical(params, comm));
  // Only the first module has gradients; layout stays identical.
  for (auto& p : a->parameters()) p.mutable_grad() = torch::ones_like(p);
  dist::average_gradients(params, comm);
  for (auto& p : b->parameters()) EXPECT_EQ(p.grad().abs().sum().item<float>(), 0.f);
  if (comm.size() > 1) {
    torch::NoGradGuard g;
    if (comm.rank() == 1) params[0].add_(1e-3);
    EXPECT_FALSE(dist::parameters_identical(params, comm));
  }
}
