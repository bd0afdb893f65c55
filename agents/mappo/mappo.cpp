#include "agents/mappo/mappo.hpp"
#include "agents/archive_check.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>

#include "agents/fused.hpp"
#include "agents/mappo/embedding_pool.hpp"
#include "agents/mappo/ppo_loss.hpp"
#include "agents/nn.hpp"
#include "core/blas.hpp"
#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/file.hpp"
#include "core/rng.hpp"
#include "dist/grad.hpp"
#include "envs/baselines.hpp"
#include "rollout/gae.hpp"
#include "rollout/minibatch.hpp"

namespace marlsched {

void set_torch_threads(int n) {
  set_blas_threads(n);  // libtorch's matrix products run on the BLAS's own threads
  torch::set_num_threads(n);
  torch::set_num_interop_threads(1);
}

void MappoConfig::bind(OptionBinder& b) {
  b.group("Agent: MAPPO");
  b.add("lr-actor", lr_actor, "actor learning rate (Adam)");
  b.add("lr-critic", lr_critic, "critic learning rate (Adam)");
  b.add("gamma", gamma, "discount factor");
  b.add("gae-lambda", gae_lambda, "GAE λ");
  b.add("clip", clip, "PPO clipping ε");
  b.add("epochs", epochs, "PPO epochs per update");
  b.add("minibatches", minibatches, "minibatches per epoch (per rank)");
  b.add("entropy-coef", entropy_coef, "entropy bonus coefficient");
  b.add("value-coef", value_coef, "value loss coefficient");
  b.add("huber-delta", huber_delta, "Huber loss δ for the value loss");
  b.add("max-grad-norm", max_grad_norm, "global gradient norm clip (actor and critic separately)");
  b.add("actor-hidden", actor_hidden, "actor hidden layer sizes");
  b.add("actor", actor,
        "actor: mlp (own observation, every site's public fields and the agent id; grows with the "
        "agent count) or targets (one network scores each (mode, target) of the env's targeted "
        "actions, e.g. geodc, from the own observation and the target's features; size "
        "independent of the agent count)");
  b.add("critic-hidden", critic_hidden, "critic hidden layer sizes");
  b.add("critic", critic,
        "critic input: concat (every agent's observation and the agent id; grows with the agent "
        "count) or pooled (own observation and the mean of a shared per-agent embedding, which the "
        "ranks exchange as one fixed-size sum per step; size "
        "independent of the agent count)");
  b.add("critic-embed", critic_embed, "embedding width of the pooled critic");
  b.add("share-actor", share_actor, "one actor shared by all agents (with agent-id input)");
  b.add("actor-groups", actor_groups,
        "group of each agent, in agent order (0, 1, ...): one actor per group, shared by its "
        "agents across ranks (heterogeneous agents); empty: --share-actor decides");
  b.add("value-norm", value_norm, "normalise value targets with running moments");
  b.add("overlap-grads", overlap_grads,
        "start the critic's gradient allreduce (MPI_Iallreduce) before the actor's backward pass, "
        "so the two overlap; off: one blocking allreduce after both");
  b.add("team-reward", team_reward, "β in reward = (1-β)·own + β·mean over agents");
  b.add("rollout-steps", rollout_steps, "environment steps per update");
  b.add("imitate", imitate,
        "warm start: a heuristic baseline (e.g. least-loaded) whose action in every state the "
        "policy visits the actor also learns, by cross-entropy, for the first "
        "--imitate-iterations updates (DAgger-style; empty: none)");
  b.add("imitate-iterations", imitate_iterations,
        "updates over which the imitation weight falls linearly from --imitate-coef to 0");
  b.add("imitate-coef", imitate_coef, "initial weight of the imitation loss");
}

ActorKind MappoConfig::actor_kind() const {
  if (actor == "mlp") return ActorKind::kMlp;
  if (actor == "targets") return ActorKind::kTargets;
  MARLSCHED_THROW(ConfigError, "--actor must be mlp or targets, got '" << actor << "'");
}

CriticKind MappoConfig::critic_kind() const {
  if (critic == "concat") return CriticKind::kConcat;
  if (critic == "pooled") return CriticKind::kPooled;
  if (critic == "local") return CriticKind::kLocal;  // IPPO's (agents/registry.cpp sets it)
  MARLSCHED_THROW(ConfigError, "--critic must be concat or pooled, got '" << critic << "'");
}

void MappoConfig::validate() const {
  require_learning_rate(lr_actor, "lr-actor");
  require_learning_rate(lr_critic, "lr-critic");
  MARLSCHED_REQUIRE(gamma > 0 && gamma <= 1, "--gamma must be in (0, 1], got " << gamma);
  MARLSCHED_REQUIRE(gae_lambda >= 0 && gae_lambda <= 1, "--gae-lambda must be in [0, 1]");
  require_positive(clip, "clip");
  MARLSCHED_REQUIRE(epochs >= 1, "--epochs must be >= 1, got " << epochs);
  MARLSCHED_REQUIRE(minibatches >= 1, "--minibatches must be >= 1, got " << minibatches);
  MARLSCHED_REQUIRE(entropy_coef >= 0 && std::isfinite(entropy_coef),
                    "--entropy-coef must be >= 0");
  require_positive(value_coef, "value-coef");
  require_positive(huber_delta, "huber-delta");
  require_positive(max_grad_norm, "max-grad-norm");
  MARLSCHED_REQUIRE(!actor_hidden.empty() && !critic_hidden.empty(),
                    "--actor-hidden and --critic-hidden need at least one layer");
  for (int h : actor_hidden) MARLSCHED_REQUIRE(h > 0, "--actor-hidden sizes must be positive");
  for (int h : critic_hidden) MARLSCHED_REQUIRE(h > 0, "--critic-hidden sizes must be positive");
  actor_kind();
  critic_kind();
  MARLSCHED_REQUIRE(critic_embed >= 1, "--critic-embed must be >= 1, got " << critic_embed);
  MARLSCHED_REQUIRE(team_reward >= 0 && team_reward <= 1, "--team-reward must be in [0, 1]");
  MARLSCHED_REQUIRE(rollout_steps >= 1, "--rollout-steps must be >= 1");
  MARLSCHED_REQUIRE(imitate_iterations >= 0,
                    "--imitate-iterations must be >= 0, got " << imitate_iterations);
  MARLSCHED_REQUIRE(imitate_coef >= 0 && std::isfinite(imitate_coef),
                    "--imitate-coef must be >= 0, got " << imitate_coef);
  MARLSCHED_REQUIRE(imitate.empty() || imitate_iterations > 0,
                    "--imitate " << imitate << " needs --imitate-iterations > 0");
}

void MappoConfig::check_env(const EnvSpec& spec) const {
  MARLSCHED_REQUIRE(actor_kind() != ActorKind::kTargets || spec.num_targets() > 0,
                    "--actor targets needs an env with a targeted action space (geodc); '"
                        << spec.name << "' has none: use --actor mlp");
  if (!imitate.empty()) make_heuristic(imitate, spec, 0);  // a baseline of this env
}

using nn::Mlp;
using nn::params_of;
using nn::script_mlp;

struct Mappo::Impl {
  MappoConfig cfg;
  EnvSpec spec;
  const dist::Comm& comm;
  torch::Device dev;
  int n, first, k, e, d, pub, na;
  bool pooled;  // --critic pooled: critic_enc embeds each agent's observation, critic is the head
  bool local;   // IPPO (--critic local): the critic reads the actor's input
  bool per_target;       // --actor targets: each actor scores (own observation, target row) pairs
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

  // Rollout storage, one entry per step (each with E*K rows).
  std::vector<float> x, c;  // actor / critic inputs
  std::vector<std::int64_t> act;
  std::vector<float> logp, value, reward, trunc_value;
  std::vector<std::uint8_t> done;  // [step][copy]
  int steps = 0;
  // Imitation warm start (--imitate): the teacher, its actions for the rollout's rows (while
  // imitating), and the updates done so far (saved with the model, so a resume anneals on).
  std::unique_ptr<Policy> teacher;
  std::vector<int> last_teacher;
  std::vector<std::int64_t> teacher_act;
  std::int64_t updates_done = 0;
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
  // Last act() inputs (so that record() can pair them).
  std::vector<float> last_x, last_c, last_logp, last_value;
  std::vector<std::int64_t> last_act;

  Impl(const MappoConfig& cf, const EnvSpec& sp, const dist::Comm& cm, int num_agents,
       int first_agent, int local_agents, int copies, std::uint64_t seed)
      : cfg(cf),
        spec(sp),
        comm(cm),
        dev(nn::device_for(cf.device, cm)),
        n(num_agents),
        first(first_agent),
        k(local_agents),
        e(copies),
        d(sp.obs_dim()),
        pub(sp.num_public),
        na(sp.num_actions()),
        pooled(cf.critic_kind() == CriticKind::kPooled),
        local(cf.critic_kind() == CriticKind::kLocal),
        per_target(cf.actor_kind() == ActorKind::kTargets),
        ain(per_target ? nn::target_input_dim(sp) : nn::agent_input_dim(sp, num_agents)),
        cin(local    ? ain
            : pooled ? (per_target ? ain : d)
                     : d * num_agents + num_agents),
        pooler(cm, local_agents, num_agents, dev),
        sample_rng(derive_seed(seed, {0xAC7, static_cast<std::uint64_t>(cm.rank())})),
        // The pooled critic's minibatches are whole (step, copy) groups, the same on every rank
        // (update()), so its shuffle does not depend on the rank.
        shuffle_rng(
            derive_seed(seed, {0x5F1, pooled ? ~0ULL : static_cast<std::uint64_t>(cm.rank())})) {
    cfg.check_env(sp);
    if (!cfg.imitate.empty())
      teacher = make_heuristic(cfg.imitate, sp, derive_seed(seed, {0x7EAC}));
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
    fused = dev.is_cpu() && !per_target && !pooled && cfg.share_actor && group_of.empty();
  }

  /// What one update reads, on the device (rows [step][copy][k]); adv and tgt also on the host.
  struct Batch {
    torch::Tensor X, C, A, OLD, ADV, TGT, AG, TEACH;
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
    auto logp_all =
        torch::log_softmax(logits(u.X.index_select(0, idx), u.AG.index_select(0, idx)), 1);
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

Mappo::Mappo(const MappoConfig& cfg, const EnvSpec& spec, const dist::Comm& comm, int num_agents,
             int first_agent, int local_agents, int copies, std::uint64_t seed)
    : impl_(std::make_unique<Impl>(cfg, spec, comm, num_agents, first_agent, local_agents, copies,
                                   seed)) {}

Mappo::~Mappo() = default;

std::string Mappo::name() const {
  return impl_->local ? "ippo" : "mappo";
}

void Mappo::set_training(bool t) {
  impl_->training = t;
}
void Mappo::set_deterministic(bool d) {
  impl_->deterministic = d;
}

void Mappo::act(const PolicyInput& in, std::vector<int>& actions) {
  auto& m = *impl_;
  const int rows = in.copies * in.local_agents;
  MARLSCHED_CHECK(in.copies == m.e && in.local_agents == m.k && in.num_agents == m.n,
                  "MAPPO was built for a different layout");
  m.last_x.assign(static_cast<std::size_t>(rows * m.ain), 0.f);
  m.last_c.assign(static_cast<std::size_t>(rows * m.cin), 0.f);
  for (int c = 0; c < in.copies; ++c)
    for (int kk = 0; kk < m.k; ++kk) {
      const int r = c * m.k + kk;
      m.build_inputs(in.global[static_cast<std::size_t>(c)], kk,
                     m.last_x.data() + static_cast<std::ptrdiff_t>(r) * m.ain,
                     m.last_c.data() + static_cast<std::ptrdiff_t>(r) * m.cin);
    }
  torch::NoGradGuard g;
  auto X = torch::from_blob(m.last_x.data(), {rows, m.ain}, torch::kFloat32).to(m.dev);
  torch::Tensor logp_all;
  // Training acts through the update's own forward pass; evaluation keeps torch's, which the
  // exported policy computes too.
  if (m.fused && m.training) {
    logp_all = m.act_actor_tape.forward(m.actors[0], X);
    ppo::log_softmax_rows(logp_all.data_ptr<float>(), rows, m.na);
  } else {
    logp_all = nn::host(torch::log_softmax(m.logits(X, m.local_agent_index(rows)), 1));
  }
  const float* lp = logp_all.data_ptr<float>();
  actions.resize(static_cast<std::size_t>(rows));
  m.last_act.resize(static_cast<std::size_t>(rows));
  m.last_logp.resize(static_cast<std::size_t>(rows));
  for (int r = 0; r < rows; ++r) {
    const float* row = lp + static_cast<std::ptrdiff_t>(r) * m.na;
    int a = 0;
    if (m.deterministic && !m.training) {
      for (int j = 1; j < m.na; ++j)
        if (row[j] > row[a]) a = j;
    } else {
      // Training samples from the learner's own stream (saved in checkpoints); evaluation from
      // the episode's draws, the same at every rank count.
      const double u = m.training ? m.sample_rng.uniform()
                                  : in.draw(r / m.k, in.first_agent + r % m.k, kActionStream);
      a = sample_index(row, m.na, u, true);
    }
    actions[static_cast<std::size_t>(r)] = a;
    m.last_act[static_cast<std::size_t>(r)] = a;
    m.last_logp[static_cast<std::size_t>(r)] = row[a];
  }
  if (m.training) m.last_value = m.values(m.last_c, rows);
  if (m.training && m.imitation_weight() > 0) m.teacher->act(in, m.last_teacher);
}

double Mappo::imitation_weight() const {
  return impl_->imitation_weight();
}

const std::vector<float>& Mappo::last_log_probs() const {
  return impl_->last_logp;
}
const std::vector<float>& Mappo::last_values() const {
  return impl_->last_value;
}

void Mappo::record(const StepFeedback& fb) {
  auto& m = *impl_;
  MARLSCHED_CHECK(m.training, "record() outside training mode");
  const int rows = m.e * m.k;
  MARLSCHED_CHECK(static_cast<int>(fb.reward.size()) == rows, "feedback has wrong size");
  m.x.insert(m.x.end(), m.last_x.begin(), m.last_x.end());
  m.c.insert(m.c.end(), m.last_c.begin(), m.last_c.end());
  m.act.insert(m.act.end(), m.last_act.begin(), m.last_act.end());
  m.logp.insert(m.logp.end(), m.last_logp.begin(), m.last_logp.end());
  m.value.insert(m.value.end(), m.last_value.begin(), m.last_value.end());
  m.reward.insert(m.reward.end(), fb.reward.begin(), fb.reward.end());
  if (m.imitation_weight() > 0) {
    MARLSCHED_CHECK(static_cast<int>(m.last_teacher.size()) == rows, "no teacher actions");
    m.teacher_act.insert(m.teacher_act.end(), m.last_teacher.begin(), m.last_teacher.end());
  }
  std::vector<float> tv(static_cast<std::size_t>(rows), 0.f);
  bool any_trunc = false;
  for (int c = 0; c < m.e; ++c) {
    m.done.push_back(fb.done[static_cast<std::size_t>(c)] ? 1 : 0);
    any_trunc = any_trunc ||
                (fb.done[static_cast<std::size_t>(c)] && fb.truncated[static_cast<std::size_t>(c)]);
  }
  if (any_trunc) {
    const auto v = m.values_of(fb.terminal);
    for (int c = 0; c < m.e; ++c)
      if (fb.done[static_cast<std::size_t>(c)] && fb.truncated[static_cast<std::size_t>(c)])
        for (int kk = 0; kk < m.k; ++kk)
          tv[static_cast<std::size_t>(c * m.k + kk)] = v[static_cast<std::size_t>(c * m.k + kk)];
  }
  m.trunc_value.insert(m.trunc_value.end(), tv.begin(), tv.end());
  m.steps += 1;
}

UpdateStats Mappo::update(const PolicyInput& last) {
  auto& m = *impl_;
  UpdateStats st;
  // policy_loss, value_loss, entropy, approx_kl, clip_frac, grad_norm_actor, grad_norm_critic
  double s[7] = {0, 0, 0, 0, 0, 0, 0};
  const int rows = m.e * m.k, T = m.steps;
  MARLSCHED_CHECK(T > 0, "update() with an empty rollout");
  const int M = rows * T;
  // Bootstrap values of the state after the last step.
  const auto boot = m.values_of(last.global);

  // GAE per (copy, agent) sequence.
  std::vector<float> adv, ret;
  compute_rollout_gae({&m.reward, &m.value, &m.trunc_value, &m.done, T, rows, m.k}, boot,
                      static_cast<float>(m.cfg.gamma), static_cast<float>(m.cfg.gae_lambda), adv,
                      ret);
  // Global moments of returns and advantages (identical on all ranks).
  double mom[5] = {static_cast<double>(M), 0, 0, 0, 0};
  for (int i = 0; i < M; ++i) {
    mom[1] += ret[static_cast<std::size_t>(i)];
    mom[2] +=
        static_cast<double>(ret[static_cast<std::size_t>(i)]) * ret[static_cast<std::size_t>(i)];
    mom[3] += adv[static_cast<std::size_t>(i)];
    mom[4] +=
        static_cast<double>(adv[static_cast<std::size_t>(i)]) * adv[static_cast<std::size_t>(i)];
  }
  m.comm.allreduce_sum(mom, 5);
  if (m.cfg.value_norm) m.vnorm.update(mom[0], mom[1], mom[2]);
  const double amean = mom[3] / mom[0];
  const double astd = std::sqrt(std::max(1e-8, mom[4] / mom[0] - amean * amean));
  std::vector<float> tgt(static_cast<std::size_t>(M));
  for (int i = 0; i < M; ++i) {
    adv[static_cast<std::size_t>(i)] =
        static_cast<float>((adv[static_cast<std::size_t>(i)] - amean) / (astd + 1e-8));
    tgt[static_cast<std::size_t>(i)] =
        m.cfg.value_norm
            ? static_cast<float>((ret[static_cast<std::size_t>(i)] - m.vnorm.mean) / m.vnorm.std())
            : ret[static_cast<std::size_t>(i)];
  }

  // One copy of the rollout to the device (none on the CPU); minibatches index it there.
  auto X = torch::from_blob(m.x.data(), {M, m.ain}, torch::kFloat32).to(m.dev);
  auto C = torch::from_blob(m.c.data(), {M, m.cin}, torch::kFloat32).to(m.dev);
  auto A = torch::from_blob(m.act.data(), {M}, torch::kInt64).to(m.dev);
  auto OLD = torch::from_blob(m.logp.data(), {M}, torch::kFloat32).to(m.dev);
  auto ADV = torch::from_blob(adv.data(), {M}, torch::kFloat32).to(m.dev);
  auto TGT = torch::from_blob(tgt.data(), {M}, torch::kFloat32).to(m.dev);
  auto AG = m.local_agent_index(M);  // row index within a step is copy*K + k
  const double imitation = m.imitation_weight();
  torch::Tensor TEACH;
  if (imitation > 0) {
    MARLSCHED_CHECK(static_cast<int>(m.teacher_act.size()) == M, "teacher actions missing");
    TEACH = torch::from_blob(m.teacher_act.data(), {M}, torch::kInt64).to(m.dev);
  }
  const Impl::Batch u{X, C, A, OLD, ADV, TGT, AG, TEACH, &adv, &tgt, imitation};

  const auto actor_params = params_of(m.actors);
  const auto critic_params = m.critic_params();
  // Minibatches shuffle units of `unit` consecutive rows: single rows, or for the pooled critic
  // whole (step, copy) groups (k rows), in the same order on every rank (its shuffle seed does
  // not depend on the rank), because a group's pooled embedding, and its gradient, are sums over
  // every rank's agents.
  const int unit = m.pooled ? m.k : 1, units = M / unit;
  const int batches = std::min(m.cfg.minibatches, units);
  const int mb = units / batches * unit;
  std::vector<std::int64_t> perm;
  int updates = 0;
  for (int ep = 0; ep < m.cfg.epochs; ++ep) {
    shuffle_units(units, unit, m.shuffle_rng, perm);
    for (int b = 0; b < batches; ++b) {
      const double t0 = now();
      double t_comm = 0;
      const std::int64_t* rows_idx = perm.data() + static_cast<std::ptrdiff_t>(b) * mb;
      if (m.fused)
        m.fused_gradients(u, rows_idx, mb, s, t_comm);
      else
        m.autograd_gradients(u, rows_idx, mb, s, t_comm);
      const double t1 = now();
      if (m.cfg.share_actor) m.actor_grads.start(m.comm);
      if (!m.cfg.overlap_grads) m.critic_grads.start(m.comm);
      m.critic_grads.finish();
      m.actor_grads.finish();
      const double t2 = now();
      t_comm += t2 - t1;
      s[5] += nn::clip_grad_norm(actor_params, m.cfg.max_grad_norm);
      s[6] += nn::clip_grad_norm(critic_params, m.cfg.max_grad_norm);
      nn::adam_step(*m.actor_opt);
      nn::adam_step(*m.critic_opt);
      const double t3 = now();
      st.time_forward_backward += (t3 - t0) - t_comm;
      st.time_allreduce += t_comm;
      ++updates;
    }
  }
  m.comm.allreduce_sum(s, 7);
  const double div = static_cast<double>(updates) * m.comm.size();
  for (double v : s) st.values.push_back(v / div);
  m.x.clear();
  m.c.clear();
  m.act.clear();
  m.logp.clear();
  m.value.clear();
  m.reward.clear();
  m.trunc_value.clear();
  m.done.clear();
  m.teacher_act.clear();
  m.steps = 0;
  m.updates_done += 1;
  return st;
}

void Mappo::export_torchscript(const std::vector<const Mappo*>& ranks, const std::string& path,
                               const std::string& metadata, bool with_critic) {
  MARLSCHED_CHECK(!ranks.empty(), "no learner to export");
  const Impl& m0 = *ranks.front()->impl_;
  auto mod = nn::policy_module(m0.n, m0.d, m0.pub, m0.na, metadata);

  std::ostringstream src;
  src << (m0.per_target ? nn::script_target_input(mod, m0.spec) : nn::script_agent_input())
      << nn::script_logits_head();
  const bool pt = m0.per_target;
  if (m0.cfg.share_actor && m0.group_of.empty()) {
    src << nn::script_actor(mod, "actor", m0.actors[0], "    ", pt) << "    return out\n";
  } else if (m0.cfg.share_actor) {
    // One actor per group (every rank holds them all): each agent's branch uses its group's.
    std::vector<const Mlp*> nets;
    for (int g : m0.cfg.actor_groups) nets.push_back(&m0.actors[static_cast<std::size_t>(g)]);
    src << nn::script_per_agent(mod, "actor", nets, pt);
  } else {
    // One actor per agent, gathered from the ranks that trained them.
    std::vector<const Mlp*> nets;
    for (const Mappo* r : ranks)
      for (const auto& net : r->impl_->actors) nets.push_back(&net);
    MARLSCHED_CHECK(static_cast<int>(nets.size()) == m0.n,
                    "exported " << nets.size() << " actors for " << m0.n << " agents");
    src << nn::script_per_agent(mod, "actor", nets, pt);
  }
  src << nn::script_softmax_policy();
  if (with_critic) {
    mod.register_attribute("value_mean", c10::FloatType::get(),
                           m0.cfg.value_norm ? m0.vnorm.mean : 0.0);
    mod.register_attribute("value_std", c10::FloatType::get(),
                           m0.cfg.value_norm ? m0.vnorm.std() : 1.0);
    src << R"(
def value(self, obs: Tensor, agent: int) -> Tensor:
    self.check_input(obs, agent)
    single = obs.dim() == 2
    o = obs.unsqueeze(0) if single else obs
    b = o.size(0)
)" << m0.critic_script(mod)
        << script_mlp(mod, "critic", m0.critic, "    ")
        << R"(    v = out.squeeze(-1) * self.value_std + self.value_mean
    return v[0] if single else v
)";
  }
  nn::save_module(mod, src.str(), path);
}

void Mappo::save(const std::string& path) const {
  const auto& m = *impl_;
  auto params = params_of(m.actors);
  for (auto& t : m.critic_params()) params.push_back(t);
  nn::require_finite(params, "model '" + path + "'");
  torch::serialize::OutputArchive ar;
  ar.write("meta", torch::tensor(m.layout()));
  for (std::size_t i = 0; i < m.actors.size(); ++i) {
    torch::serialize::OutputArchive sub;
    m.actors[i]->save(sub);
    ar.write("actor" + std::to_string(i), sub);
  }
  torch::serialize::OutputArchive cs, ao, co;
  m.critic->save(cs);
  ar.write("critic", cs);
  if (m.pooled) {
    torch::serialize::OutputArchive es;
    m.critic_enc->save(es);
    ar.write("critic_enc", es);
  }
  m.actor_opt->save(ao);
  ar.write("actor_opt", ao);
  m.critic_opt->save(co);
  ar.write("critic_opt", co);
  ar.write("vnorm", torch::tensor({m.vnorm.count, m.vnorm.mean, m.vnorm.m2}, torch::kFloat64));
  ar.write("rng", nn::string_tensor(write_states({&m.sample_rng, &m.shuffle_rng})));
  ar.write("updates", torch::tensor({m.updates_done}, torch::kInt64));
  std::ostringstream bytes;
  ar.save_to(bytes);  // in memory: a full disk then fails in write_file, with errno
  write_file(path, bytes.str());
}

void Mappo::load(const std::string& path) {
  verify_archive(path, "model");
  try {
    load_impl(path);
  } catch (const c10::Error&) {
    MARLSCHED_THROW(InputError,
                    "cannot read model '" << path << "': corrupted or not a marlsched model file");
  }
}

void Mappo::load_impl(const std::string& path) {
  auto& m = *impl_;
  torch::serialize::InputArchive ar;
  torch::Tensor meta;
  try {
    ar.load_from(path, m.dev);  // networks and optimiser state straight onto the device
    ar.read("meta", meta);
    meta = nn::host(meta);
  } catch (const c10::Error& e) {
    MARLSCHED_THROW(InputError, "cannot read model '" << path << "': not a marlsched model file");
  }
  const auto want = m.layout();
  MARLSCHED_REQUIRE(
      meta.numel() == static_cast<std::int64_t>(want.size()) &&
          std::equal(want.begin(), want.end(), meta.data_ptr<std::int64_t>()),
      "model '" << path
                << "' was trained with a different layout (agents, agents per "
                   "rank, observation or action space, actor sharing or groups, --actor, or a "
                   "centralized (mappo) vs decentralized (ippo) critic)");
  for (std::size_t i = 0; i < m.actors.size(); ++i) {
    torch::serialize::InputArchive sub;
    ar.read("actor" + std::to_string(i), sub);
    m.actors[i]->load(sub);
  }
  torch::serialize::InputArchive cs, ao, co;
  ar.read("critic", cs);
  m.critic->load(cs);
  if (m.pooled) {
    torch::serialize::InputArchive es;
    ar.read("critic_enc", es);
    m.critic_enc->load(es);
  }
  ar.read("actor_opt", ao);
  m.actor_opt->load(ao);
  ar.read("critic_opt", co);
  m.critic_opt->load(co);
  torch::Tensor vn;
  ar.read("vnorm", vn);
  m.vnorm.count = vn[0].item<double>();
  m.vnorm.mean = vn[1].item<double>();
  m.vnorm.m2 = vn[2].item<double>();
  torch::Tensor rt;
  ar.read("rng", rt);
  MARLSCHED_REQUIRE(read_states(nn::tensor_string(rt), {&m.sample_rng, &m.shuffle_rng}),
                    "model '" << path << "': bad RNG state");
  torch::Tensor updates;  // absent from models written before --imitate existed
  m.updates_done = ar.try_read("updates", updates) ? updates[0].item<std::int64_t>() : 0;
}

const std::vector<StatName>& Mappo::stat_names() const {
  static const std::vector<StatName> names = {
      {"policy_loss", "loss/policy"},          {"value_loss", "loss/value"},
      {"entropy", "policy/entropy"},           {"approx_kl", "policy/approx_kl"},
      {"clip_frac", "policy/clip_frac"},       {"grad_norm_actor", "grad_norm/actor"},
      {"grad_norm_critic", "grad_norm/critic"}};
  return names;
}

bool Mappo::shared_parameters_identical() const {
  return dist::parameters_identical(impl_->shared_params(), impl_->comm);
}

std::uint64_t Mappo::shared_parameter_digest() const {
  return dist::parameter_digest(impl_->shared_params());
}

std::vector<float> Mappo::action_probs(const GlobalObs& g, int local_agent) const {
  const auto& m = *impl_;
  std::vector<float> xa(static_cast<std::size_t>(m.ain)), xc(static_cast<std::size_t>(m.cin));
  m.build_inputs(g, local_agent, xa.data(), xc.data());
  torch::NoGradGuard guard;
  auto X = torch::from_blob(xa.data(), {1, m.ain}, torch::kFloat32).to(m.dev);
  auto idx = torch::full({1}, local_agent, torch::TensorOptions(torch::kInt64).device(m.dev));
  auto p = nn::host(torch::softmax(m.logits(X, idx), 1));
  return std::vector<float>(p.data_ptr<float>(), p.data_ptr<float>() + m.na);
}

std::int64_t Mappo::shared_parameter_count() const {
  std::int64_t n = 0;
  for (const auto& p : impl_->shared_params()) n += p.numel();
  return n;
}

}  // namespace marlsched
