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
static int g_iallreduce_calls = 0;
extern "C" int MPI_Iallreduce(const void* s, void* r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c,
                              MPI_Request* req) {
  ++g_iallreduce_calls;
  return PMPI_Iallreduce(s, r, n, t, op, c, req);
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

TEST(Grad, BucketKeepsGradientsInOneBufferThroughBackwardAndZero) {
  auto comm = dist::Comm::world();
  torch::manual_seed(7);  // same init on every rank
  torch::nn::Sequential net(torch::nn::Linear(4, 6), torch::nn::Tanh(), torch::nn::Linear(6, 2));
  auto params = net->parameters();
  dist::GradBucket bucket(params);
  torch::optim::Adam opt(params, torch::optim::AdamOptions(1e-3));
  auto x = torch::ones({3, 4}) * static_cast<float>(comm.rank() + 1);
  std::vector<void*> slots;
  for (auto& p : params) slots.push_back(p.grad().data_ptr());
  for (int rep = 0; rep < 2; ++rep) {
    bucket.zero();
    opt.zero_grad();  // libtorch's zeroes in place too: the binding must survive either
    net->forward(x).pow(2).sum().backward();
    for (std::size_t i = 0; i < params.size(); ++i)
      EXPECT_EQ(params[i].grad().data_ptr(), slots[i]) << "autograd replaced gradient " << i;
  }
  // The bucket's average equals the mean of every rank's gradient (computed here from scratch).
  std::vector<torch::Tensor> local;
  for (auto& p : params) local.push_back(p.grad().clone());
  std::vector<torch::Tensor> expect;
  for (auto& g : local) {
    auto sum = g.clone();
    comm.allreduce_sum(sum.data_ptr<float>(), static_cast<int>(sum.numel()));
    expect.push_back(sum / static_cast<float>(comm.size()));
  }
  g_allreduce_calls = g_iallreduce_calls = 0;
  bucket.start(comm);  // nonblocking form
  EXPECT_EQ(g_iallreduce_calls, comm.size() > 1 ? 1 : 0);
  bucket.finish();
  EXPECT_EQ(g_allreduce_calls, 0);
  for (std::size_t i = 0; i < params.size(); ++i)
    EXPECT_TRUE(torch::allclose(params[i].grad(), expect[i], 1e-6, 1e-6));
  // A gradient replaced behind the bucket's back (set to none, then recreated) is rebound.
  params[0].mutable_grad() = torch::Tensor();
  bucket.zero();
  EXPECT_EQ(params[0].grad().data_ptr(), slots[0]);
  EXPECT_EQ(params[0].grad().abs().sum().item<float>(), 0.f);
}

TEST(Grad, ScaledBackwardGivesTheSameMeanWithoutAPassOverTheBuffer) {
  auto comm = dist::Comm::world();
  torch::manual_seed(11);
  torch::nn::Sequential net(torch::nn::Linear(5, 8), torch::nn::Tanh(), torch::nn::Linear(8, 3));
  auto params = net->parameters();
  dist::GradBucket bucket(params);
  auto x = torch::randn({6, 5}) * static_cast<float>(comm.rank() + 1);
  auto loss = [&] {
    return torch::log_softmax(net->forward(x), 1).mean() + net->forward(x).pow(2).sum();
  };
  bucket.zero();
  loss().backward();
  bucket.average(comm);
  std::vector<torch::Tensor> plain;
  for (auto& p : params) plain.push_back(p.grad().clone());
  bucket.zero();
  bucket.backward(loss(), comm);
  bucket.average(comm);
  const int n = comm.size();
  const bool power_of_two = (n & (n - 1)) == 0;
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (power_of_two)
      EXPECT_TRUE(torch::equal(params[i].grad(), plain[i])) << "tensor " << i;
    else
      EXPECT_TRUE(torch::allclose(params[i].grad(), plain[i], 1e-6, 1e-6)) << "tensor " << i;
  }
}
