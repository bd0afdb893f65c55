#pragma once
/// \file masac_impl.hpp
/// Masac's state (private to agents/masac): actors, critics, target networks, the replay ring
/// and the losses that acting and the update share. masac.cpp acts and updates, masac_io.cpp
/// saves and loads, masac_config.cpp holds the options.

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "agents/masac/masac.hpp"
#include "agents/model_archive.hpp"
#include "agents/nn.hpp"
#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/file.hpp"
#include "core/rng.hpp"
#include "dist/grad.hpp"
#include "rollout/replay.hpp"

namespace marlsched {

struct Masac::Impl : nn::LearnerDims {
  MasacConfig cfg;
  const dist::Comm& comm;
  int in, gw, cin;  // gw: global obs width n·d; cin: critic input
  bool ddpg;        // the MADDPG variant: target actor, Gumbel-softmax actor gradient, no entropy
  nn::Mlp actor{nullptr}, q1{nullptr}, q2{nullptr}, t1{nullptr}, t2{nullptr}, ta{nullptr};
  torch::Tensor log_alpha;
  std::unique_ptr<torch::optim::Adam> opt_actor, opt_critic, opt_alpha;
  dist::GradBucket g_actor, g_critic, g_alpha;
  double target_h;
  rollout::Replay replay;  ///< entries: global state, joint action, local rewards
  Rng explore_rng, sample_rng;
  bool training = true, deterministic = false;
  std::int64_t grad_steps = 0;
  // The last act(): global observations [copy][n·d], joint actions [copy][n]; transitions
  // waiting for their next state.
  std::vector<float> last_g;
  std::vector<std::int64_t> last_joint;
  std::vector<float> pend_g, pend_r;
  std::vector<std::int64_t> pend_a;
  std::vector<char> pending;  // [copy]

  Impl(const MasacConfig& c, bool maddpg, const EnvSpec& sp, const dist::Comm& cm, int num_agents,
       int first_agent, int local_agents, int copies, std::uint64_t seed)
      : nn::LearnerDims(sp, cm, c.device, num_agents, first_agent, local_agents, copies),
        cfg(c),
        comm(cm),
        in(nn::agent_input_dim(sp, num_agents)),
        gw(num_agents * sp.obs_dim()),
        cin(num_agents * sp.obs_dim() + num_agents * sp.num_actions() + num_agents),
        ddpg(maddpg),
        target_h(c.target_entropy * std::log(static_cast<double>(sp.num_actions()))),
        explore_rng(derive_seed(seed, {0x5AC1, static_cast<std::uint64_t>(cm.rank())})),
        sample_rng(derive_seed(seed, {0x5AC2, static_cast<std::uint64_t>(cm.rank())})) {
    torch::manual_seed(derive_seed(seed, {0x5AC0}) & 0x7FFFFFFFFFFFULL);
    actor = nn::Mlp(in, cfg.actor_hidden, na, 0.01);
    q1 = nn::Mlp(cin, cfg.critic_hidden, na, 1.0);
    q2 = nn::Mlp(cin, cfg.critic_hidden, na, 1.0);
    t1 = nn::Mlp(cin, cfg.critic_hidden, na, 1.0);
    t2 = nn::Mlp(cin, cfg.critic_hidden, na, 1.0);
    log_alpha = torch::full({1}, std::log(cfg.init_alpha), torch::kFloat32);
    dist::broadcast_parameters(shared(), comm);  // every rank starts from rank 0's parameters
    ta = nn::Mlp(in, cfg.actor_hidden, na, 0.01);
    for (auto* net : {&actor, &q1, &q2, &t1, &t2, &ta}) (*net)->to(dev);
    log_alpha = log_alpha.to(dev).set_requires_grad(true);
    sync_targets(1.0);
    opt_actor = std::make_unique<torch::optim::Adam>(actor->parameters(),
                                                     torch::optim::AdamOptions(cfg.lr_actor));
    auto critic_params = critics();
    opt_critic = std::make_unique<torch::optim::Adam>(critic_params,
                                                      torch::optim::AdamOptions(cfg.lr_critic));
    opt_alpha = std::make_unique<torch::optim::Adam>(std::vector<torch::Tensor>{log_alpha},
                                                     torch::optim::AdamOptions(cfg.lr_alpha));
    g_actor = dist::GradBucket(actor->parameters());
    g_critic = dist::GradBucket(critic_params);
    g_alpha = dist::GradBucket({log_alpha});
    replay.init(cfg.buffer, gw, n, k);
    pend_g.assign(static_cast<std::size_t>(e * gw), 0.f);
    pend_r.assign(static_cast<std::size_t>(e * k), 0.f);
    pend_a.assign(static_cast<std::size_t>(e * n), 0);
    pending.assign(static_cast<std::size_t>(e), 0);
  }

  std::vector<torch::Tensor> critics() const {
    auto p = q1->parameters();
    auto p2 = q2->parameters();
    p.insert(p.end(), p2.begin(), p2.end());
    return p;
  }

  /// What every rank holds identically: actor, critics, log α (targets follow from them).
  std::vector<torch::Tensor> shared() const {
    auto p = actor->parameters();
    for (const auto& t : critics()) p.push_back(t);
    p.push_back(log_alpha);
    return p;
  }

  double alpha() const { return std::exp(nn::host(log_alpha.detach()).item<double>()); }

  /// Polyak step of the targets toward the online networks (the target actor: MADDPG only).
  void sync_targets(double rate) {
    torch::NoGradGuard g;
    for (auto [src, dst] : {std::pair{&q1, &t1}, std::pair{&q2, &t2}, std::pair{&actor, &ta}}) {
      if (dst == &ta && !ddpg) continue;  // SAC samples next actions from the online actor
      auto s = (*src)->parameters();
      auto t = (*dst)->parameters();
      for (std::size_t j = 0; j < s.size(); ++j) t[j].mul_(1.0 - rate).add_(s[j], rate);
    }
  }

  /// Actor inputs [rows·n, in] of every agent for `rows` global observations (rows of gw).
  std::vector<float> all_agent_inputs(const float* g, int rows) const {
    std::vector<float> x(static_cast<std::size_t>(rows * n * in));
    for (int r = 0; r < rows; ++r)
      for (int i = 0; i < n; ++i)
        nn::agent_input(GlobalObs{g + static_cast<std::ptrdiff_t>(r) * gw, n, d}, pub, i,
                        x.data() + static_cast<std::ptrdiff_t>(r * n + i) * in);
    return x;
  }

  /// Critic input [B, cin]: global obs, others' one-hot actions (own slot zero), own one-hot id.
  torch::Tensor critic_input(const torch::Tensor& g, const torch::Tensor& joint,
                             const torch::Tensor& agent) const {
    auto onehot = torch::one_hot(joint, na).to(torch::kFloat32);  // [B, n, na]
    auto own = torch::one_hot(agent, n).to(torch::kFloat32);      // [B, n]
    onehot = onehot * (1.0f - own).unsqueeze(2);                  // zero own slot
    return torch::cat({g, onehot.reshape({g.size(0), n * na}), own}, 1);
  }

  /// Samples an action from each row of probabilities [rows, na] (host) with `rng`.
  std::vector<std::int64_t> sample(const torch::Tensor& probs, Rng& rng) const {
    const auto p = nn::host(probs);
    const float* q = p.data_ptr<float>();
    const auto rows = p.size(0);
    std::vector<std::int64_t> out(static_cast<std::size_t>(rows));
    for (std::int64_t r = 0; r < rows; ++r)
      out[static_cast<std::size_t>(r)] = sample_index(q + r * na, na, rng.uniform(), false);
    return out;
  }

  void finish_pending(const std::vector<float>& next_g) {
    for (int c = 0; c < e; ++c) {
      const auto cu = static_cast<std::size_t>(c);
      if (!pending[cu]) continue;
      replay.push(pend_g.data() + cu * static_cast<std::size_t>(gw), pend_a.data() + cu * n,
                  pend_r.data() + cu * k, false, next_g.data() + cu * static_cast<std::size_t>(gw));
      pending[cu] = 0;
    }
  }

  void globals_of(const std::vector<GlobalObs>& global, std::vector<float>& g) const {
    g.resize(static_cast<std::size_t>(e * gw));
    for (int c = 0; c < e; ++c) {
      const auto& go = global[static_cast<std::size_t>(c)];
      MARLSCHED_CHECK(go.num_agents == n && go.obs_dim == d, "masac: unexpected observation shape");
      std::copy(go.data, go.data + gw, g.begin() + static_cast<std::ptrdiff_t>(c) * gw);
    }
  }
  /// One minibatch drawn from the replay ring: B transitions, each for one of this rank's agents.
  struct Batch {
    std::vector<float> s, s2, r, t;      ///< globals [B, gw] at s and s', reward, termination
    std::vector<std::int64_t> a, agent;  ///< every agent's action [B, n]; the agent of each row
  };

  void draw_batch(Batch& bt) {
    const int B = cfg.batch;
    bt.s.resize(static_cast<std::size_t>(B * gw));
    bt.s2.resize(bt.s.size());
    bt.r.resize(static_cast<std::size_t>(B));
    bt.t.resize(bt.r.size());
    bt.a.resize(static_cast<std::size_t>(B * n));
    bt.agent.resize(static_cast<std::size_t>(B));
    for (int b = 0; b < B; ++b) {
      const auto j =
          static_cast<std::size_t>(sample_rng.below(static_cast<std::uint64_t>(replay.size)));
      const auto kk = static_cast<std::size_t>(sample_rng.below(static_cast<std::uint64_t>(k)));
      const auto bu = static_cast<std::size_t>(b);
      std::copy_n(replay.obs.begin() + static_cast<std::ptrdiff_t>(j * gw), gw,
                  bt.s.begin() + static_cast<std::ptrdiff_t>(bu * gw));
      std::copy_n(replay.next_obs.begin() + static_cast<std::ptrdiff_t>(j * gw), gw,
                  bt.s2.begin() + static_cast<std::ptrdiff_t>(bu * gw));
      std::copy_n(replay.actions.begin() + static_cast<std::ptrdiff_t>(j * n), n,
                  bt.a.begin() + static_cast<std::ptrdiff_t>(bu * n));
      bt.r[bu] = replay.rewards[j * static_cast<std::size_t>(k) + kk];
      bt.t[bu] = replay.term[j];
      bt.agent[bu] = first + static_cast<std::int64_t>(kk);
    }
  }

  /// The critics' target y = r + γ (1 − term) V(s'). SAC: the other agents' next actions
  /// sampled from the current actor at s', the agent's own next action in expectation (discrete
  /// soft value). MADDPG: every agent's next action sampled from the target actor (a hard
  /// Gumbel-softmax sample).
  torch::Tensor critic_target(const Batch& bt, const torch::Tensor& S2, const torch::Tensor& I,
                              const torch::Tensor& R, const torch::Tensor& T,
                              const torch::Tensor& rows, float alpha) {
    torch::NoGradGuard g;
    const int B = cfg.batch;
    auto x2 = all_agent_inputs(bt.s2.data(), B);
    auto& next_actor = ddpg ? ta : actor;
    auto p2 = torch::softmax(next_actor->forward(nn::blob(x2, B * n, in, dev)), 1);
    auto next = sample(p2, sample_rng);  // [B·n]
    auto J2 = torch::from_blob(next.data(), {B, n}, torch::kInt64).clone().to(dev);
    auto cx2 = critic_input(S2, J2, I);
    auto qt = torch::min(t1->forward(cx2), t2->forward(cx2));
    torch::Tensor v2;
    if (ddpg) {
      v2 = qt.gather(1, J2.index({rows, I}).unsqueeze(1)).squeeze(1);
    } else {
      auto own2 = p2.reshape({B, n, na}).index({rows, I});  // [B, na]
      v2 = (own2 * (qt - alpha * torch::log(own2.clamp_min(1e-30)))).sum(1);
    }
    return R + static_cast<float>(cfg.gamma) * (1.0f - T) * v2;
  }

  /// The actor's loss with the other agents' stored actions, from its logits at s and the
  /// critics' min Q(s, a_-i, ·). SAC: E_{a~π}[α log π(a) − min Q]. MADDPG, discrete: the critic's
  /// value of a straight-through Gumbel-softmax sample of the agent's own action (hard one-hot
  /// forward, softmax gradient), plus MADDPG's small penalty on the logits.
  torch::Tensor actor_loss(const torch::Tensor& logits, const torch::Tensor& logp,
                           const torch::Tensor& p, const torch::Tensor& qmin, float alpha) {
    if (!ddpg) return (p * (alpha * logp - qmin)).sum(1).mean();
    const int B = cfg.batch;
    std::vector<float> gumbel(static_cast<std::size_t>(B * na));
    for (auto& v : gumbel)
      v = static_cast<float>(-std::log(-std::log(sample_rng.uniform(1e-20, 1.0))));
    auto soft = torch::softmax(logits + nn::blob(gumbel, B, na, dev), 1);
    auto hard = torch::one_hot(soft.argmax(1), na).to(torch::kFloat32);
    auto onehot = hard - soft.detach() + soft;
    return -(onehot * qmin).sum(1).mean() + 1e-3 * logits.pow(2).mean();
  }
};

}  // namespace marlsched
