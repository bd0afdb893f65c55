#pragma once
/// \file dqn_impl.hpp
/// Dqn's state (private to agents/dqn): the online and target networks, optimisers, gradient
/// buckets, replay buffers and RNGs, and the one gradient step that online learning
/// (dqn.cpp) and offline learning from a dataset (dqn_offline.cpp) share.

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "agents/dqn/dqn.hpp"
#include "agents/nn.hpp"
#include "core/clock.hpp"
#include "core/rng.hpp"
#include "dist/grad.hpp"
#include "rollout/replay.hpp"

namespace marlsched {

struct Dqn::Impl : nn::LearnerDims {
  DqnConfig cfg;
  EnvSpec spec;
  const dist::Comm& comm;
  int in;
  std::vector<nn::Mlp> online, target;
  std::vector<std::unique_ptr<torch::optim::Adam>> opt;
  std::vector<dist::GradBucket> grads;  // per network; averaged over ranks when shared
  std::vector<rollout::Replay> replay;  // one per network
  Rng explore_rng, sample_rng;
  bool training = true, deterministic = false;
  std::int64_t env_steps = 0, grad_steps = 0;
  // The last act(): inputs, actions, diagnostics; and transitions waiting for their next state.
  std::vector<float> last_x;
  std::vector<std::int64_t> last_act;
  std::vector<float> pend_x, pend_r;
  std::vector<std::int64_t> pend_a;
  std::vector<char> pending;  // [row]

  Impl(const DqnConfig& c, const EnvSpec& sp, const dist::Comm& cm, int num_agents, int first_agent,
       int local_agents, int copies, std::uint64_t seed)
      : nn::LearnerDims(sp, cm, c.device, num_agents, first_agent, local_agents, copies),
        cfg(c),
        spec(sp),
        comm(cm),
        in(nn::agent_input_dim(sp, num_agents)),
        explore_rng(derive_seed(seed, {0xE95, static_cast<std::uint64_t>(cm.rank())})),
        sample_rng(derive_seed(seed, {0x5A3, static_cast<std::uint64_t>(cm.rank())})) {
    const int nets = cfg.share ? 1 : k;
    torch::manual_seed(derive_seed(seed, {0xD07}) & 0x7FFFFFFFFFFFULL);
    for (int i = 0; i < nets; ++i) {
      if (!cfg.share)
        torch::manual_seed(derive_seed(seed, {0xD070, static_cast<std::uint64_t>(first + i)}) &
                           0x7FFFFFFFFFFFULL);
      online.emplace_back(in, cfg.hidden, na, 1.0);
      target.emplace_back(in, cfg.hidden, na, 1.0);
      replay.emplace_back();
      replay.back().init(cfg.offline ? 0 : cfg.buffer, in);  // offline: QFit::use_dataset sizes it
    }
    if (cfg.share) dist::broadcast_parameters(online[0]->parameters(), comm);
    for (int i = 0; i < nets; ++i) {
      online[static_cast<std::size_t>(i)]->to(dev);
      target[static_cast<std::size_t>(i)]->to(dev);
      sync_target(i);
      opt.push_back(std::make_unique<torch::optim::Adam>(
          online[static_cast<std::size_t>(i)]->parameters(), torch::optim::AdamOptions(cfg.lr)));
      grads.emplace_back(online[static_cast<std::size_t>(i)]->parameters());
    }
    const auto rows = static_cast<std::size_t>(e * k);
    pend_x.assign(rows * static_cast<std::size_t>(in), 0.f);
    pend_r.assign(rows, 0.f);
    pend_a.assign(rows, 0);
    pending.assign(rows, 0);
  }

  int net_of(int row) const { return cfg.share ? 0 : row % k; }

  void sync_target(int i) {
    torch::NoGradGuard g;
    auto src = online[static_cast<std::size_t>(i)]->parameters();
    auto dst = target[static_cast<std::size_t>(i)]->parameters();
    for (std::size_t j = 0; j < src.size(); ++j) dst[j].copy_(src[j]);
  }

  double epsilon() const {
    const double f = std::min(1.0, static_cast<double>(env_steps) / cfg.eps_decay);
    return cfg.eps_start + (cfg.eps_end - cfg.eps_start) * f;
  }

  /// Q-values [rows, na] of input rows `x` ([copy][k] order) with the online networks.
  std::vector<float> q_of(std::vector<float>& x, int rows) const {
    torch::NoGradGuard g;
    std::vector<float> out(static_cast<std::size_t>(rows * na));
    if (cfg.share) {
      auto q = nn::host(online[0].ptr()->forward(nn::blob(x, rows, in, dev)));
      std::copy(q.data_ptr<float>(), q.data_ptr<float>() + rows * na, out.begin());
      return out;
    }
    for (int kk = 0; kk < k; ++kk) {
      std::vector<float> sub;
      for (int r = kk; r < rows; r += k)
        sub.insert(sub.end(), x.begin() + static_cast<std::ptrdiff_t>(r) * in,
                   x.begin() + static_cast<std::ptrdiff_t>(r + 1) * in);
      const int m = static_cast<int>(sub.size()) / in;
      if (m == 0) continue;
      auto q =
          nn::host(online[static_cast<std::size_t>(kk)].ptr()->forward(nn::blob(sub, m, in, dev)));
      const float* p = q.data_ptr<float>();
      for (int j = 0; j < m; ++j)
        std::copy(p + j * na, p + (j + 1) * na,
                  out.begin() + static_cast<std::ptrdiff_t>((kk + j * k) * na));
    }
    return out;
  }

  /// Completes the waiting transitions with next-state inputs `x2` ([copy][k] rows).
  void finish_pending(const std::vector<float>& x2) {
    for (std::size_t r = 0; r < pending.size(); ++r) {
      if (!pending[r]) continue;
      replay[static_cast<std::size_t>(net_of(static_cast<int>(r)))].push(
          pend_x.data() + r * static_cast<std::size_t>(in), pend_a[r], pend_r[r], false,
          x2.data() + r * static_cast<std::size_t>(in));
      pending[r] = 0;
    }
  }

  // One gradient step's minibatch (reused).
  std::vector<float> bx, bx2, br, bt;
  std::vector<std::int64_t> ba;

  /// Copies replay entries idx[0..B) of network i into the minibatch.
  void gather(std::size_t i, const std::int64_t* idx, int B) {
    const rollout::Replay& rb = replay[i];
    const auto w = static_cast<std::size_t>(in);
    bx.resize(static_cast<std::size_t>(B) * w);
    bx2.resize(bx.size());
    br.resize(static_cast<std::size_t>(B));
    bt.resize(br.size());
    ba.resize(br.size());
    for (std::size_t b = 0; b < static_cast<std::size_t>(B); ++b) {
      const auto j = static_cast<std::size_t>(idx[b]);
      std::copy_n(rb.obs.begin() + static_cast<std::ptrdiff_t>(j * w), w,
                  bx.begin() + static_cast<std::ptrdiff_t>(b * w));
      std::copy_n(rb.next_obs.begin() + static_cast<std::ptrdiff_t>(j * w), w,
                  bx2.begin() + static_cast<std::ptrdiff_t>(b * w));
      ba[b] = rb.actions[j];
      br[b] = rb.rewards[j];
      bt[b] = rb.term[j];
    }
  }

  /// One gradient step of network i on the gathered minibatch of B transitions: the Huber TD
  /// loss against the target network (double DQN: the online network picks the next action),
  /// plus, when cfg.cql_alpha > 0, discrete CQL's penalty (Kumar et al., NeurIPS 2020, CQL(H))
  /// cql_alpha * mean(logsumexp_a Q(s, a) - Q(s, a_data)), which pushes down the values of
  /// actions the data does not take. Adds the TD loss, mean Q(s, a_data), the gradient norm
  /// before clipping and the penalty's gap to s[0..3].
  void step(std::size_t i, int B, double* s, UpdateStats& st) {
    const double t0 = now();
    auto& net = online[i];
    auto X = nn::blob(bx, B, in, dev), X2 = nn::blob(bx2, B, in, dev);
    auto A = torch::from_blob(ba.data(), {B, 1}, torch::kInt64).to(dev);
    auto R = torch::from_blob(br.data(), {B}, torch::kFloat32).to(dev);
    auto T = torch::from_blob(bt.data(), {B}, torch::kFloat32).to(dev);
    torch::Tensor y;
    {
      torch::NoGradGuard g;
      auto q2t = target[i]->forward(X2);
      torch::Tensor next;
      if (cfg.double_dqn)
        next = q2t.gather(1, net->forward(X2).argmax(1, true)).squeeze(1);
      else
        next = std::get<0>(q2t.max(1));
      y = R + cfg.gamma * (1.0f - T) * next;
    }
    auto q_all = net->forward(X);
    auto q = q_all.gather(1, A).squeeze(1);
    auto td = torch::nn::functional::huber_loss(
        q, y, torch::nn::functional::HuberLossFuncOptions().delta(cfg.huber_delta));
    auto loss = td;
    torch::Tensor gap;
    if (cfg.cql_alpha > 0) {
      gap = (torch::logsumexp(q_all, 1) - q).mean();
      loss = td + cfg.cql_alpha * gap;
    }
    grads[i].zero();
    if (cfg.share)
      grads[i].backward(loss, comm);
    else
      loss.backward();
    const double t1 = now();
    if (cfg.share) grads[i].average(comm);
    const double t2 = now();
    s[2] += torch::nn::utils::clip_grad_norm_(net->parameters(), cfg.max_grad_norm);
    opt[i]->step();
    const double t3 = now();
    st.time_forward_backward += (t1 - t0) + (t3 - t2);
    st.time_allreduce += t2 - t1;
    s[0] += td.item<double>();
    s[1] += q.mean().item<double>();
    if (gap.defined()) s[3] += gap.item<double>();
  }

  /// After each gradient step: the target networks follow every cfg.target_every steps.
  void count_step() {
    grad_steps += 1;
    if (grad_steps % cfg.target_every == 0)
      for (std::size_t i = 0; i < online.size(); ++i) sync_target(static_cast<int>(i));
  }

  void inputs_of(const std::vector<GlobalObs>& global, std::vector<float>& x) const {
    x.assign(static_cast<std::size_t>(e * k * in), 0.f);
    for (int c = 0; c < e; ++c)
      for (int kk = 0; kk < k; ++kk)
        nn::agent_input(global[static_cast<std::size_t>(c)], pub, first + kk,
                        x.data() + static_cast<std::ptrdiff_t>(c * k + kk) * in);
  }
};

}  // namespace marlsched
