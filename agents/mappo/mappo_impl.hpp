#pragma once
/// \file mappo_impl.hpp
/// Mappo's state (private to agents/mappo): the networks, optimisers, gradient buckets, rollout
/// storage and the forward passes that acting, the update and export share. mappo.cpp acts and
/// updates, mappo_io.cpp saves, loads and exports, mappo_config.cpp holds the options.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>
#include <utility>

#include "agents/fused.hpp"
#include "agents/mappo/embedding_pool.hpp"
#include "agents/mappo/mappo.hpp"
#include "agents/mappo/ppo_loss.hpp"
#include "agents/model_archive.hpp"
#include "agents/nn.hpp"
#include "core/blas.hpp"
#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/file.hpp"
#include "core/rng.hpp"
#include "dist/grad.hpp"
#include "rollout/gae.hpp"
#include "rollout/minibatch.hpp"
#include "rollout/on_policy.hpp"

namespace marlsched {

using nn::Mlp;
using nn::params_of;
using nn::script_mlp;

struct Mappo::Impl : nn::LearnerDims {
  MappoConfig cfg;
  EnvSpec spec;
  const dist::Comm& comm;
  bool pooled;  // --critic pooled: critic_enc embeds each agent's observation, critic is the head
  bool local;   // IPPO (--critic local): the critic reads the actor's input
  bool per_target;       // --actor targets: each actor scores (own observation, target row) pairs
  int pd;                // privileged fields per agent in the critic's input (--critic-privileged)
  int ain, cin;          // the actor's and the critic's input widths (from the kinds above)
  EmbeddingPool pooler;  // the pooled critic's collective
  Mlp critic_enc{nullptr};
  std::vector<Mlp> actors;
  std::vector<std::int64_t> group_of;  // --actor-groups: the actor of each local agent
  torch::Tensor group_idx;             // the same on the device, for logits()
  Mlp critic{nullptr};
  std::unique_ptr<torch::optim::Adam> actor_opt, critic_opt;
  // Gradients as slices of flat buffers (dist::GradBucket): the critic's (averaged over ranks),
  // the actors' (averaged over ranks when the actor is shared, else local).
  dist::GradBucket critic_grads, actor_grads;
  RunningMoments vnorm;
  Rng sample_rng, shuffle_rng;
  bool training = true, deterministic = false;

  rollout::OnPolicyBuffer buf;  // the rollout since the last update (E*K rows per step)
  // Imitation warm start (--imitate): the teacher, its actions for the rollout's rows (while
  // imitating), and the updates done so far (saved with the model, so a resume anneals on).
  std::unique_ptr<Policy> teacher;
  std::vector<int> last_teacher;
  std::vector<std::int64_t> teacher_act;
  std::int64_t updates_done = 0;
  // --base-policy: the baseline, its actions at the last act() and for the rollout's rows.
  std::unique_ptr<Policy> base;
  std::vector<int> last_base;
  std::vector<std::int64_t> base_act;
  // Whether the critic was trained (PPO updates, awr; not bc): saved, and read by init_from.
  bool critic_trained = false;
  double imitation_weight() const {
    if (!teacher || updates_done >= cfg.imitate_iterations) return 0.0;
    return cfg.imitate_coef *
           (1.0 - static_cast<double>(updates_done) / static_cast<double>(cfg.imitate_iterations));
  }
  // The update without autograd (nn::MlpTape, ppo::*_grad) where it applies: one MLP actor
  // shared by every agent and a critic that is one MLP (concat or local), on the CPU. Other
  // layouts take the autograd path; both end in the same clipping and Adam step.
  bool fused = false;
  nn::MlpTape actor_tape, critic_tape;
  mutable nn::MlpTape act_actor_tape, act_critic_tape;  // act()'s and values()' forward passes
  torch::Tensor xb, cb, dz, dv;                         // the fused update's minibatch buffers
  /// The moments over every rank (a collective) of an update's returns and advantages: updates
  /// the value normaliser with the returns', fills `tgt` with the value targets (the returns,
  /// normalised with --value-norm) and returns the advantages' mean and standard deviation.
  std::pair<double, double> value_targets(const std::vector<float>& ret,
                                          const std::vector<float>& adv, std::vector<float>& tgt) {
    double mom[5] = {static_cast<double>(ret.size()), 0, 0, 0, 0};
    for (std::size_t i = 0; i < ret.size(); ++i) {
      mom[1] += ret[i];
      mom[2] += static_cast<double>(ret[i]) * ret[i];
      mom[3] += adv[i];
      mom[4] += static_cast<double>(adv[i]) * adv[i];
    }
    comm.allreduce_sum(mom, 5);
    if (cfg.value_norm) vnorm.update(mom[0], mom[1], mom[2]);
    const double mean = mom[3] / mom[0];
    const double sd = std::sqrt(std::max(1e-8, mom[4] / mom[0] - mean * mean));
    tgt.resize(ret.size());
    for (std::size_t i = 0; i < ret.size(); ++i)
      tgt[i] = cfg.value_norm ? static_cast<float>((ret[i] - vnorm.mean) / vnorm.std()) : ret[i];
    return {mean, sd};
  }
  // Last act() inputs (so that record() can pair them).
  std::vector<float> last_x, last_c, last_logp, last_value;
  std::vector<std::int64_t> last_act;

  Impl(const MappoConfig& cf, const EnvSpec& sp, const dist::Comm& cm, int num_agents,
       int first_agent, int local_agents, int copies, std::uint64_t seed,
       const BaselineMaker& baselines)
      : nn::LearnerDims(sp, cm, cf.device, num_agents, first_agent, local_agents, copies),
        cfg(cf),
        spec(sp),
        comm(cm),
        pooled(cf.critic == CriticKind::kPooled),
        local(cf.critic == CriticKind::kLocal),
        per_target(cf.actor == ActorKind::kTargets),
        pd(cf.critic_privileged ? sp.privileged_dim() : 0),
        ain(per_target ? nn::target_input_dim(sp) : nn::agent_input_dim(sp, num_agents)),
        cin(local    ? ain
            : pooled ? (per_target ? ain : d)
                     : (d + pd) * num_agents + num_agents),
        pooler(cm, local_agents, num_agents, dev),
        sample_rng(derive_seed(seed, {0xAC7, static_cast<std::uint64_t>(cm.rank())})),
        // The pooled critic's minibatches are whole (step, copy) groups, the same on every rank
        // (update()), so its shuffle does not depend on the rank.
        shuffle_rng(
            derive_seed(seed, {0x5F1, pooled ? ~0ULL : static_cast<std::uint64_t>(cm.rank())})) {
    cfg.check_env(sp);
    MARLSCHED_CHECK((cfg.imitate.empty() && cfg.base_policy.empty()) || baselines,
                    "mappo: no env baselines handed in for --imitate or --base-policy");
    if (!cfg.imitate.empty()) teacher = baselines(cfg.imitate, derive_seed(seed, {0x7EAC}));
    if (!cfg.base_policy.empty()) base = baselines(cfg.base_policy, derive_seed(seed, {0xBA5E}));
    // Same torch seed on every rank: shared networks start identical (and are broadcast anyway).
    torch::manual_seed(derive_seed(seed, {0x1417}) & 0x7FFFFFFFFFFFULL);
    int n_actors = cfg.share_actor ? 1 : k;
    if (!cfg.actor_groups.empty()) {
      const auto& g = cfg.actor_groups;
      MARLSCHED_REQUIRE(static_cast<int>(g.size()) == n,
                        "--actor-groups names " << g.size() << " groups for " << n << " agents");
      MARLSCHED_REQUIRE(cfg.share_actor,
                        "--actor-groups shares one actor per group: drop --no-share-actor");
      n_actors = *std::max_element(g.begin(), g.end()) + 1;
      for (int v = 0; v < n_actors; ++v)
        MARLSCHED_REQUIRE(std::find(g.begin(), g.end(), v) != g.end(),
                          "--actor-groups: groups are numbered 0, 1, ... with none left out; "
                          "group "
                              << v << " has no agent");
      MARLSCHED_REQUIRE(*std::min_element(g.begin(), g.end()) >= 0,
                        "--actor-groups: group numbers must be >= 0");
      for (int kk = 0; kk < k; ++kk) group_of.push_back(g[static_cast<std::size_t>(first + kk)]);
      group_idx = torch::tensor(group_of, torch::kInt64).to(dev);
    }
    for (int i = 0; i < n_actors; ++i) {
      if (!cfg.share_actor || !group_of.empty())  // distinct initialisation per agent or group
        torch::manual_seed(
            derive_seed(seed, {group_of.empty() ? 0xAC70ULL : 0xAC71ULL,
                               static_cast<std::uint64_t>(group_of.empty() ? first + i : i)}) &
            0x7FFFFFFFFFFFULL);
      if (per_target)  // scores (own observation, target row) -> one logit per mode
        actors.emplace_back(d + nn::target_row_dim(sp), cfg.actor_hidden, sp.num_modes(), 0.01);
      else
        actors.emplace_back(ain, cfg.actor_hidden, na, 0.01);
    }
    torch::manual_seed(derive_seed(seed, {0xC217}) & 0x7FFFFFFFFFFFULL);
    critic = Mlp(pooled ? cin + cfg.critic_embed : cin, cfg.critic_hidden, 1, 1.0);
    if (pooled)
      critic_enc = Mlp(d, std::vector<int>{cfg.critic_hidden.front()}, cfg.critic_embed, 1.0);
    dist::broadcast_parameters(shared_params(), comm);
    for (auto& a : actors) a->to(dev);
    critic->to(dev);
    if (pooled) critic_enc->to(dev);
    actor_opt = std::make_unique<torch::optim::Adam>(
        params_of(actors), torch::optim::AdamOptions(cfg.lr_actor).eps(1e-5));
    critic_opt = std::make_unique<torch::optim::Adam>(
        critic_params(), torch::optim::AdamOptions(cfg.lr_critic).eps(1e-5));
    critic_grads = dist::GradBucket(critic_params());
    actor_grads = dist::GradBucket(params_of(actors));
    fused = dev.is_cpu() && !per_target && !pooled && cfg.share_actor && group_of.empty() && !base;
  }

  /// What one update reads, on the device (rows [step][copy][k]); adv and tgt also on the host.
  struct Batch {
    torch::Tensor X, C, A, OLD, ADV, TGT, AG, TEACH, BASE;
    const std::vector<float>* adv;
    const std::vector<float>* tgt;
    double imitation;
  };

  /// Gradients of one minibatch (rows idx[0 .. mb)) through autograd, into the buckets (the
  /// critic's allreduce started when overlapping); adds the loss terms to s[0..4] and the time
  /// spent in collectives to t_comm.
  void autograd_gradients(const Batch& u, const std::int64_t* rows_idx, int mb, double* s,
                          double& t_comm) {
    auto idx = torch::from_blob(const_cast<std::int64_t*>(rows_idx), {mb}, torch::kInt64).to(dev);
    auto logp_all = torch::log_softmax(
        policy_logits(u.X.index_select(0, idx), u.AG.index_select(0, idx),
                      u.BASE.defined() ? u.BASE.index_select(0, idx) : torch::Tensor()),
        1);
    auto a = u.A.index_select(0, idx);
    auto new_logp = logp_all.gather(1, a.unsqueeze(1)).squeeze(1);
    auto entropy = -(logp_all.exp() * logp_all).sum(1).mean();
    auto old = u.OLD.index_select(0, idx);
    auto ratio = torch::exp(new_logp - old);
    auto adv_b = u.ADV.index_select(0, idx);
    auto surr =
        torch::min(ratio * adv_b, torch::clamp(ratio, 1.0 - cfg.clip, 1.0 + cfg.clip) * adv_b);
    auto policy_loss = -surr.mean();
    const auto cb_ = u.C.index_select(0, idx);
    torch::Tensor v, S, P;
    if (pooled) {  // rows are whole groups: [group][k]
      S = local_embedding_sum(cb_);
      P = pool(S, &t_comm).requires_grad_(true);
      v = pooled_head(cb_, P);
    } else {
      v = critic.ptr()->forward(cb_).squeeze(1);
    }
    auto value_loss = torch::nn::functional::huber_loss(
        v, u.TGT.index_select(0, idx),
        torch::nn::functional::HuberLossFuncOptions().delta(cfg.huber_delta));
    // The actor and critic graphs are disjoint, so two backward passes give the same gradients
    // as one on the summed loss; the critic's go first so that their allreduce can run while
    // the actor's backward pass does.
    critic_grads.zero();
    actor_grads.zero();
    critic_grads.backward(cfg.value_coef * value_loss, comm);
    if (pooled) {
      // P's gradient on each rank is its share of the gradient of the ranks' mean loss (the
      // bucket seeds backward with 1/size); pool() sums the shares and divides by n, which is
      // d(loss)/d(each agent's embedding), and each rank carries that into the encoder through
      // its own agents. The bucket then sums those encoder gradients over the ranks (already
      // scaled by the seed, so not averaged again): the full gradient, with only embeddings
      // and their gradients crossing the network.
      S.backward(pool(P.grad(), &t_comm));
    }
    start_critic_early(t_comm);
    auto actor_loss = policy_loss - cfg.entropy_coef * entropy;
    if (u.imitation > 0)  // cross-entropy of the teacher's actions in the visited states
      actor_loss =
          actor_loss -
          u.imitation * logp_all.gather(1, u.TEACH.index_select(0, idx).unsqueeze(1)).mean();
    if (cfg.share_actor)
      actor_grads.backward(actor_loss, comm);
    else
      actor_loss.backward();
    torch::NoGradGuard g;
    s[0] += policy_loss.item<double>();
    s[1] += value_loss.item<double>();
    s[2] += entropy.item<double>();
    s[3] += (old - new_logp).mean().item<double>();
    s[4] += ((ratio - 1.0).abs() > cfg.clip).to(torch::kFloat32).mean().item<double>();
  }

  /// The same without autograd (`fused`): the minibatch's rows gathered into reused buffers,
  /// both networks through nn::MlpTape, the losses' gradients from ppo::*_grad.
  void fused_gradients(const Batch& u, const std::int64_t* rows_idx, int mb, double* s,
                       double& t_comm) {
    torch::NoGradGuard g;
    auto idx = torch::from_blob(const_cast<std::int64_t*>(rows_idx), {mb}, torch::kInt64);
    nn::ensure_shape(xb, mb, ain);
    nn::ensure_shape(cb, mb, cin);
    nn::ensure_shape(dz, mb, na);
    nn::ensure_shape(dv, mb, 1);
    at::index_select_out(xb, u.X, 0, idx);
    at::index_select_out(cb, u.C, 0, idx);
    critic_grads.zero();
    actor_grads.zero();
    const auto& v = critic_tape.forward(critic, cb);
    s[1] += ppo::value_loss_grad(v.data_ptr<float>(), mb, rows_idx, u.tgt->data(), cfg.huber_delta,
                                 cfg.value_coef, critic_grads.seed(comm), dv.data_ptr<float>());
    critic_tape.backward(dv);
    start_critic_early(t_comm);
    const auto& z = actor_tape.forward(actors[0], xb);
    const auto terms = ppo::policy_loss_grad(
        z.data_ptr<float>(), mb, na, rows_idx, u.A.data_ptr<std::int64_t>(),
        u.OLD.data_ptr<float>(), u.adv->data(),
        u.imitation > 0 ? u.TEACH.data_ptr<std::int64_t>() : nullptr, cfg.clip, cfg.entropy_coef,
        u.imitation, actor_grads.seed(comm), dz.data_ptr<float>());
    actor_tape.backward(dz);
    s[0] += terms.policy_loss;
    s[2] += terms.entropy;
    s[3] += terms.approx_kl;
    s[4] += terms.clip_frac;
  }

  /// --overlap-grads: the critic's allreduce starts before the actor's backward pass.
  void start_critic_early(double& t_comm) {
    if (!cfg.overlap_grads) return;
    const double c0 = now();
    critic_grads.start(comm);
    t_comm += now() - c0;
  }

  std::vector<torch::Tensor> critic_params() const {
    std::vector<torch::Tensor> p = critic->parameters();
    if (pooled)
      for (auto& t : critic_enc->parameters()) p.push_back(t);
    return p;
  }

  std::vector<torch::Tensor> shared_params() const {
    std::vector<torch::Tensor> p = critic_params();
    if (cfg.share_actor)  // one actor, or one per group: every rank holds them all
      for (auto& t : params_of(actors)) p.push_back(t);
    return p;
  }

  /// Fills actor and critic inputs for local agent kk of one copy.
  void build_inputs(const GlobalObs& g, int kk, float* xa, float* xc) const {
    const int self = first + kk;
    if (per_target)
      nn::target_input(spec, g, self, xa);
    else
      nn::agent_input(g, pub, self, xa);
    if (local) {  // IPPO: the critic sees what the actor sees
      std::copy(xa, xa + ain, xc);
      return;
    }
    if (pooled) {      // what is the agent's own (the other agents reach it through pool())
      if (per_target)  // the actor's input: the own observation first, then its targets' rows
        std::copy(xa, xa + ain, xc);
      else
        std::copy(g.row(self), g.row(self) + d, xc);
      return;
    }
    std::copy(g.data, g.data + static_cast<std::ptrdiff_t>(n) * d, xc);
    std::fill(xc + n * d, xc + cin, 0.f);
    xc[n * d + self] = 1.f;
    // The privileged fields, where the world gathered them (training); zeros elsewhere, where
    // no value is read (evaluation acts without the critic).
    if (pd > 0 && g.privileged != nullptr) {
      MARLSCHED_CHECK(g.privileged_dim == pd, "privileged fields: " << g.privileged_dim
                                                                    << " gathered, " << pd
                                                                    << " expected");
      std::copy(g.privileged, g.privileged + static_cast<std::ptrdiff_t>(n) * pd, xc + n * d + n);
    }
  }

  /// Logits for rows of X whose local agent index is `agent_idx` (one actor, one per agent, or
  /// one per --actor-groups group).
  torch::Tensor logits(const torch::Tensor& X, const torch::Tensor& agent_idx) const {
    if (cfg.share_actor && group_of.empty()) return actor_forward(0, X);
    // One actor per agent, or per group: the rows of each go through theirs.
    const auto net_idx = group_of.empty() ? agent_idx : group_idx.index_select(0, agent_idx);
    auto out = torch::zeros({X.size(0), na}, X.options());
    for (int i = 0; i < static_cast<int>(actors.size()); ++i) {
      auto mask = net_idx.eq(i).nonzero().squeeze(1);
      if (mask.numel() == 0) continue;
      out = out.index_copy(0, mask, actor_forward(i, X.index_select(0, mask)));
    }
    return out;
  }

  /// The policy's logits: logits() plus --base-margin on the baseline's action `base_actions`
  /// of each row (undefined without --base-policy).
  torch::Tensor policy_logits(const torch::Tensor& X, const torch::Tensor& agent_idx,
                              const torch::Tensor& base_actions) const {
    auto out = logits(X, agent_idx);
    if (!base_actions.defined()) return out;
    return out + static_cast<float>(cfg.base_margin) *
                     torch::one_hot(base_actions, na).to(out.scalar_type());
  }

  /// What a model file must match: agents, agents per rank, actor and critic input widths,
  /// actions, the number of shared actors (1, or the --actor-groups count; 0 for one per agent),
  /// and for --actor targets a seventh entry (files of the MLP actor keep six).
  std::vector<std::int64_t> layout() const {
    std::vector<std::int64_t> l = {
        n, k, ain, cin, na, cfg.share_actor ? static_cast<std::int64_t>(actors.size()) : 0};
    if (per_target || pooled) l.push_back(per_target ? 1 : 0);
    // The pooled critic's embedding exchange (minibatches of whole groups shared by all ranks):
    // files of the earlier pooled critic, which recomputed every embedding on every rank and
    // shuffled per rank, are refused rather than resumed with shuffles that differ per rank.
    if (pooled) l.push_back(1);
    MARLSCHED_CHECK(l == Mappo::layout_of(cfg, spec, n, k), "Mappo::layout_of disagrees");
    return l;
  }

  /// Logits of actor i for actor inputs X.
  torch::Tensor actor_forward(int i, const torch::Tensor& X) const {
    const auto& net = actors[static_cast<std::size_t>(i)];
    return per_target ? nn::target_logits(net, X, spec) : net.ptr()->forward(X);
  }

  float denorm(float v) const {
    return cfg.value_norm ? static_cast<float>(v * vnorm.std() + vnorm.mean) : v;
  }

  /// Pooled critic, this rank's part: the sum over its k agents of the encoder's embedding of
  /// each agent's observation, per (step, copy) group, for critic-input rows C [groups·k, cin]
  /// ([group][k]; a pooled critic's input row starts with the agent's own observation).
  torch::Tensor local_embedding_sum(const torch::Tensor& C) const {
    return critic_enc.ptr()->forward(C.narrow(1, 0, d)).reshape({C.size(0) / k, k, -1}).sum(1);
  }

  /// Pooled critic, the collective (EmbeddingPool::mean): the mean over all n agents, per
  /// group, of the ranks' sums S [groups, E], identical on every rank.
  torch::Tensor pool(const torch::Tensor& S, double* t_comm = nullptr) const {
    return pooler.mean(S, t_comm);
  }

  /// Pooled critic's head on rows C [groups·k, cin] ([group][k]) with each group's pooled
  /// embedding P [groups, E].
  torch::Tensor pooled_head(const torch::Tensor& C, const torch::Tensor& P) const {
    return critic.ptr()->forward(torch::cat({C, P.repeat_interleave(k, 0)}, 1)).squeeze(1);
  }

  /// Critic values (denormalised) for the rows of a critic-input buffer ([copy][k] rows). The
  /// pooled critic's are a collective: every rank calls this together.
  std::vector<float> values(std::vector<float>& xc, int rows) const {
    torch::NoGradGuard g;
    auto t = nn::blob(xc, rows, cin, dev);
    auto v = fused ? act_critic_tape.forward(critic, t)
                   : nn::host(pooled ? pooled_head(t, pool(local_embedding_sum(t)))
                                     : critic.ptr()->forward(t).squeeze(1));
    std::vector<float> out(static_cast<std::size_t>(rows));
    for (int i = 0; i < rows; ++i)
      out[static_cast<std::size_t>(i)] = denorm(v.data_ptr<float>()[i]);
    return out;
  }

  /// Critic values (denormalised) of every (copy, local agent) row for one global observation
  /// per copy (a copy without one, e.g. no terminal observation because it did not end, gets
  /// zero inputs and a value nobody reads).
  std::vector<float> values_of(const std::vector<GlobalObs>& global) const {
    const int rows = e * k;
    std::vector<float> xa(static_cast<std::size_t>(ain)), xc(static_cast<std::size_t>(rows * cin));
    for (int cp = 0; cp < e; ++cp)
      if (global[static_cast<std::size_t>(cp)].data != nullptr)
        for (int kk = 0; kk < k; ++kk)
          build_inputs(global[static_cast<std::size_t>(cp)], kk, xa.data(),
                       xc.data() + static_cast<std::ptrdiff_t>(cp * k + kk) * cin);
    return values(xc, rows);
  }

  /// TorchScript lines computing the critic's input `x` from `o` [b, num_agents, obs_dim] and
  /// `agent`, for each kind of critic (the pooled one registers its encoder's weights here).
  std::string critic_script(torch::jit::Module& mod) const {
    if (local) return "    x = self.actor_input(o, agent)\n";
    if (pooled)
      return "    x = o.reshape(b * self.num_agents, self.obs_dim)\n" +
             nn::script_mlp(mod, "critic_enc", critic_enc, "    ") +
             "    emb = out.reshape(b, self.num_agents, -1).mean(1)\n" +
             std::string(per_target ? "    x = torch.cat([self.actor_input(o, agent), emb], 1)\n"
                                    : "    x = torch.cat([o[:, agent, :], emb], 1)\n");
    return R"(    onehot = torch.zeros(b, self.num_agents, dtype=o.dtype, device=o.device)
    onehot[:, agent] = 1.0
    x = torch.cat([o.reshape(b, self.num_agents * self.obs_dim), onehot], 1)
)";
  }

  torch::Tensor local_agent_index(int rows) const {
    auto idx = torch::empty({rows}, torch::kInt64);
    auto* p = idx.data_ptr<std::int64_t>();
    for (int i = 0; i < rows; ++i) p[i] = i % k;  // rows are [.. copy][k]
    return idx.to(dev);
  }
};

}  // namespace marlsched
