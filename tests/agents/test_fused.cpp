// The update without autograd (agents/fused.hpp, agents/mappo/ppo_loss.hpp) against what it
// replaces: torch's tanh, autograd's gradients, clip_grad_norm_ and torch::optim::Adam.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

#include "agents/fused.hpp"
#include "agents/mappo/ppo_loss.hpp"
#include "agents/nn.hpp"
#include "core/error.hpp"

using namespace marlsched;

namespace {
/// Largest difference relative to the tensor's scale (its largest magnitude).
double max_rel_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a - b).abs().max().item<double>() / std::max(1e-12, b.abs().max().item<double>());
}
}  // namespace

TEST(Fused, TanhAgreesWithStdTanhToAFewUlps) {
  std::vector<float> x;
  for (int i = -200000; i <= 200000; ++i) x.push_back(static_cast<float>(i) * 6e-5f);  // ±12
  for (float v : {1e-30f, -1e-20f, 1e-8f, 3e-4f, 0.0f, -0.0f, 50.f, -1e30f, 1e30f}) x.push_back(v);
  x.push_back(std::numeric_limits<float>::infinity());
  x.push_back(-std::numeric_limits<float>::infinity());
  std::vector<float> y = x;
  nn::tanh_inplace(y.data(), static_cast<std::int64_t>(y.size()));  // odd length: a tail
  double worst_abs = 0, worst_rel = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double want = std::tanh(static_cast<double>(x[i]));
    const double err = std::abs(y[i] - want);
    worst_abs = std::max(worst_abs, err);
    if (want != 0) worst_rel = std::max(worst_rel, err / std::abs(want));
    ASSERT_LE(std::abs(y[i]), 1.0f) << x[i];
  }
  EXPECT_LT(worst_abs, 2e-7);
  EXPECT_LT(worst_rel, 5e-7);
  float nan = std::numeric_limits<float>::quiet_NaN();
  nn::tanh_inplace(&nan, 1);
  EXPECT_TRUE(std::isnan(nan)) << "a NaN must stay visible";
}

TEST(Fused, MlpTapeMatchesAutograd) {
  torch::manual_seed(5);
  nn::Mlp net(7, std::vector<int>{16, 12}, 3, 0.5);
  nn::MlpTape tape;
  for (int rows : {33, 5}) {  // a second, smaller pass reuses the buffers
    auto X = torch::randn({rows, 7});
    auto R = torch::randn({rows, 3});  // L = sum(out * R): dL/dout = R
    auto ref = net->forward(X);
    for (auto& p : net->parameters()) p.mutable_grad() = torch::Tensor();
    (ref * R).sum().backward();
    std::vector<torch::Tensor> want;
    for (auto& p : net->parameters()) want.push_back(p.grad().clone());
    for (auto& p : net->parameters()) p.grad().fill_(123.f);  // backward writes, not adds
    const auto& out = tape.forward(net, X);
    EXPECT_LT(max_rel_diff(out, ref.detach()), 1e-5) << rows;
    tape.backward(R);
    const auto params = net->parameters();
    for (std::size_t i = 0; i < params.size(); ++i)
      EXPECT_LT(max_rel_diff(params[i].grad(), want[i]), 1e-4) << "parameter " << i;
  }
}

TEST(Fused, ClipGradNormMatchesTorch) {
  torch::manual_seed(6);
  for (double max_norm : {0.5, 1e3}) {  // clipped and not
    std::vector<torch::Tensor> a, b;
    for (auto shape : {std::vector<std::int64_t>{4, 3}, {5}, {2, 2, 2}}) {
      auto p = torch::zeros(shape, torch::requires_grad());
      p.mutable_grad() = torch::randn(shape);
      a.push_back(p);
      auto q = torch::zeros(shape, torch::requires_grad());
      q.mutable_grad() = p.grad().clone();
      b.push_back(q);
    }
    const double got = nn::clip_grad_norm(a, max_norm);
    const double want = torch::nn::utils::clip_grad_norm_(b, max_norm);
    EXPECT_NEAR(got, want, 1e-5 * want);
    for (std::size_t i = 0; i < a.size(); ++i)
      EXPECT_LT(max_rel_diff(a[i].grad(), b[i].grad()), 1e-5);
  }
}

TEST(Fused, AdamStepMatchesTorchAdamAndKeepsItsStateFormat) {
  torch::manual_seed(7);
  nn::Mlp mine(5, std::vector<int>{8}, 2, 1.0), theirs(5, std::vector<int>{8}, 2, 1.0);
  {
    torch::NoGradGuard g;
    auto pm = mine->parameters(), pt = theirs->parameters();
    for (std::size_t i = 0; i < pm.size(); ++i) pt[i].copy_(pm[i]);
  }
  auto opts = torch::optim::AdamOptions(1e-2).eps(1e-5);
  torch::optim::Adam om(mine->parameters(), opts), ot(theirs->parameters(), opts);
  // The same gradients on both sides (drawn, not computed from the parameters, so that rounding
  // differences do not feed back): what differs is the step alone.
  auto step = [](nn::Mlp& net, torch::optim::Adam& opt, int it, bool fused) {
    torch::manual_seed(100 + it);
    for (auto& p : net->parameters()) p.mutable_grad() = torch::randn_like(p);
    if (fused)
      nn::adam_step(opt);
    else
      opt.step();
  };
  for (int it = 0; it < 5; ++it) {
    step(mine, om, it, true);
    step(theirs, ot, it, false);
  }
  auto pm = mine->parameters(), pt = theirs->parameters();
  for (std::size_t i = 0; i < pm.size(); ++i) EXPECT_LT(max_rel_diff(pm[i], pt[i]), 1e-5) << i;
  // The moments live in torch's own state: saved after fused steps, a torch Adam goes on alike.
  std::ostringstream saved;
  {
    torch::serialize::OutputArchive ar;
    om.save(ar);
    ar.save_to(saved);
  }
  torch::optim::Adam reloaded(mine->parameters(), opts);
  {
    std::istringstream in(saved.str());
    torch::serialize::InputArchive ar;
    ar.load_from(in);
    reloaded.load(ar);
  }
  step(mine, reloaded, 5, false);
  step(theirs, ot, 5, false);
  pm = mine->parameters();
  for (std::size_t i = 0; i < pm.size(); ++i) EXPECT_LT(max_rel_diff(pm[i], pt[i]), 1e-5) << i;
}

// Intra-op threads (--threads > 1) split the tanh, its derivative, the bias gradients' columns
// and Adam's elements over torch's OpenMP threads: each element is computed as at one thread, so
// the results are bit-identical. The sizes exceed the blocks' minimum (16 Ki floats), so the
// loops run in parallel at 2 threads; the products are kept out (the BLAS's own threading may
// round differently): the head's bias gradient is the column sums of dy, no product involved.
TEST(Fused, IntraOpThreadsGiveBitIdenticalResults) {
  const int before = torch::get_num_threads();
  struct Out {
    torch::Tensor tanh, dy, head_bias_grad, weights;
  };
  auto run = [](int threads) {
    // Inputs and initial weights at one thread (the orthogonal init's QR may round otherwise).
    torch::set_num_threads(1);
    torch::manual_seed(11);
    Out o;
    o.tanh = torch::randn({100003}) * 3;
    nn::Mlp net(16, std::vector<int>{64}, 512, 1.0);  // head: 64 x 512 weights, 512 biases
    const auto X = torch::randn({96, 16});
    o.dy = torch::randn({96, 512});
    torch::set_num_threads(threads);
    nn::tanh_inplace(o.tanh.data_ptr<float>(), o.tanh.numel());
    nn::MlpTape tape;
    tape.forward(net, X);
    tape.backward(o.dy);
    o.head_bias_grad = net->head->bias.grad().clone();
    torch::optim::Adam opt(net->parameters(), torch::optim::AdamOptions(1e-2));
    for (int it = 0; it < 3; ++it) {
      torch::set_num_threads(1);  // the same draws whatever the thread count
      for (auto& p : net->parameters()) p.mutable_grad() = torch::randn_like(p);
      torch::set_num_threads(threads);
      nn::adam_step(opt);  // the head's 32 Ki weights in parallel blocks
    }
    o.weights = net->head->weight.detach().clone();
    return o;
  };
  const Out one = run(1), two = run(2);
  torch::set_num_threads(before);
  EXPECT_TRUE(torch::equal(one.tanh, two.tanh));
  EXPECT_TRUE(torch::equal(one.head_bias_grad, two.head_bias_grad));
  EXPECT_TRUE(torch::equal(one.weights, two.weights));
  // And the head's bias gradient is the column sums of dy, summed over the rows in order.
  const float* d = one.dy.data_ptr<float>();
  const float* g = one.head_bias_grad.data_ptr<float>();
  for (int j = 0; j < 512; ++j) {
    float sum = 0;
    for (int r = 0; r < 96; ++r) sum += d[r * 512 + j];
    ASSERT_EQ(g[j], sum) << j;
  }
}

TEST(Fused, PpoPolicyGradientMatchesAutograd) {
  torch::manual_seed(8);
  const int rows = 40, na = 5, M = 60;
  const double clip = 0.2, ent = 0.03, imit = 0.4;
  const float seed = 0.5f;
  std::vector<std::int64_t> idx(rows), action(M), teacher(M);
  std::vector<float> old(M), adv(M);
  for (int i = 0; i < rows; ++i) idx[static_cast<std::size_t>(i)] = (i * 7 + 3) % M;
  auto z = torch::randn({rows, na}) * 2;
  for (int i = 0; i < M; ++i) {
    action[static_cast<std::size_t>(i)] = (i * 3) % na;
    teacher[static_cast<std::size_t>(i)] = (i * 2 + 1) % na;
    adv[static_cast<std::size_t>(i)] = static_cast<float>((i % 7) - 3) * 0.7f;
  }
  // Old log-probabilities spread so that the ratios fall inside, below and above the clip.
  auto lp0 = torch::log_softmax(z, 1);
  for (int r = 0; r < rows; ++r) {
    const auto i = static_cast<std::size_t>(idx[static_cast<std::size_t>(r)]);
    old[i] = lp0[r][action[i]].item<float>() + static_cast<float>((r % 5) - 2) * 0.15f;
  }
  for (bool with_teacher : {false, true}) {
    std::vector<float> dz(static_cast<std::size_t>(rows * na));
    const auto t = ppo::policy_loss_grad(
        z.data_ptr<float>(), rows, na, idx.data(), action.data(), old.data(), adv.data(),
        with_teacher ? teacher.data() : nullptr, clip, ent, imit, seed, dz.data());
    // The same loss through autograd, as Mappo's autograd path writes it.
    auto zz = z.clone().requires_grad_(true);
    auto I = torch::from_blob(idx.data(), {rows}, torch::kInt64);
    auto A = torch::from_blob(action.data(), {M}, torch::kInt64).index_select(0, I);
    auto OLD = torch::from_blob(old.data(), {M}).index_select(0, I);
    auto ADV = torch::from_blob(adv.data(), {M}).index_select(0, I);
    auto logp = torch::log_softmax(zz, 1);
    auto nl = logp.gather(1, A.unsqueeze(1)).squeeze(1);
    auto ratio = torch::exp(nl - OLD);
    auto surr = torch::min(ratio * ADV, torch::clamp(ratio, 1 - clip, 1 + clip) * ADV);
    auto entropy = -(logp.exp() * logp).sum(1).mean();
    auto loss = -surr.mean() - ent * entropy;
    if (with_teacher) {
      auto T = torch::from_blob(teacher.data(), {M}, torch::kInt64).index_select(0, I);
      loss = loss - imit * logp.gather(1, T.unsqueeze(1)).mean();
    }
    (seed * loss).backward();
    auto got = torch::from_blob(dz.data(), {rows, na});
    EXPECT_LT((got - zz.grad()).abs().max().item<double>(), 1e-6) << with_teacher;
    EXPECT_NEAR(t.policy_loss, (-surr.mean()).item<double>(), 1e-5);
    EXPECT_NEAR(t.entropy, entropy.item<double>(), 1e-5);
    EXPECT_NEAR(t.approx_kl, (OLD - nl).mean().item<double>(), 1e-5);
    EXPECT_NEAR(t.clip_frac, ((ratio - 1).abs() > clip).to(torch::kFloat32).mean().item<double>(),
                1e-7);
    EXPECT_GT(t.clip_frac, 0.1) << "the test must reach the clip";
    EXPECT_LT(t.clip_frac, 0.9);
  }
}

TEST(Fused, HuberValueGradientMatchesAutograd) {
  const int rows = 30, M = 30;
  std::vector<std::int64_t> idx(rows);
  std::vector<float> v(rows), target(M);
  for (int i = 0; i < rows; ++i) {
    idx[static_cast<std::size_t>(i)] = (i * 11) % M;
    v[static_cast<std::size_t>(i)] = static_cast<float>(i - 15) * 1.3f;
    target[static_cast<std::size_t>(i)] = static_cast<float>((i * 7) % 13) - 6.f;
  }
  std::vector<float> dv(rows);
  const double delta = 5, coef = 0.7;
  const float seed = 0.25f;
  const double loss =
      ppo::value_loss_grad(v.data(), rows, idx.data(), target.data(), delta, coef, seed, dv.data());
  auto V = torch::from_blob(v.data(), {rows}).clone().requires_grad_(true);
  auto T = torch::from_blob(target.data(), {M})
               .index_select(0, torch::from_blob(idx.data(), {rows}, torch::kInt64));
  auto ref = torch::nn::functional::huber_loss(
      V, T, torch::nn::functional::HuberLossFuncOptions().delta(delta));
  (seed * coef * ref).backward();
  EXPECT_NEAR(loss, ref.item<double>(), 1e-5 * ref.item<double>());
  EXPECT_LT((torch::from_blob(dv.data(), {rows}) - V.grad()).abs().max().item<double>(), 1e-7);
}

TEST(Nn, ModelsWithNonFiniteParametersAreNotSaved) {
  nn::Mlp net(3, std::vector<int>{4}, 2, 1.0);
  EXPECT_NO_THROW(nn::require_finite(net->parameters(), "model 'm.pt'"));
  {
    torch::NoGradGuard g;
    net->parameters()[1][2] = std::numeric_limits<float>::infinity();
  }
  try {
    nn::require_finite(net->parameters(), "model 'm.pt'");
    FAIL() << "an infinite weight was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("refusing to save model 'm.pt'"), std::string::npos);
  }
}
