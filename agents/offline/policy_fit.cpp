#include "agents/offline/policy_fit.hpp"

#include "agents/mappo/mappo_impl.hpp"

namespace marlsched {

/// The dataset's actor inputs, logged actions and local agent indices, and (awr) the critic
/// inputs of every state and next state, [world-step][k] rows.
struct PolicyFit::Rows {
  std::int64_t rows = 0;
  torch::Tensor X, A, AG, C, C2;
};

PolicyFit::PolicyFit(Mappo& nets) : m_(nets.parts()), rows_(std::make_unique<Rows>()) {
  MARLSCHED_REQUIRE(!m_.base,
                    "--base-policy: the offline learners fit the actor alone; leave it "
                    "empty");
  MARLSCHED_REQUIRE(m_.pd == 0,
                    "--critic-privileged: a dataset holds no privileged fields; leave it off");
}

PolicyFit::~PolicyFit() = default;

void PolicyFit::prepare(const LocalDataset& data, bool with_critic, int minibatch) {
  auto& m = m_;
  auto& f = *rows_;
  MARLSCHED_CHECK(data.num_agents == m.n && data.first_agent == m.first &&
                      data.local_agents == m.k && data.obs_dim == m.d,
                  "the dataset was read for another layout");
  const std::int64_t rows = data.transitions();
  MARLSCHED_REQUIRE_INPUT(rows >= minibatch, "the dataset holds "
                                                 << rows
                                                 << " transitions per rank, fewer than one "
                                                    "minibatch ("
                                                 << minibatch << ")");
  // One pass over the rows builds what is still missing: the actor inputs and actions, and
  // (awr) the critic inputs of each state and next state.
  const bool need_x = f.rows == 0, need_c = with_critic && f.C.numel() == 0;
  if (!need_x && !need_c) return;
  std::vector<float> x(need_x ? static_cast<std::size_t>(rows * m.ain) : 0);
  std::vector<float> c(need_c ? static_cast<std::size_t>(rows * m.cin) : 0), c2(c.size());
  std::vector<std::int64_t> a(need_x ? static_cast<std::size_t>(rows) : 0);
  std::vector<float> xa(static_cast<std::size_t>(m.ain)), xc(static_cast<std::size_t>(m.cin));
  for (std::int64_t r = 0; r < data.rows; ++r)
    for (int kk = 0; kk < m.k; ++kk) {
      const std::int64_t i = r * m.k + kk;
      m.build_inputs(data.global(r), kk, need_x ? x.data() + i * m.ain : xa.data(),
                     need_c ? c.data() + i * m.cin : xc.data());
      if (need_c) m.build_inputs(data.global(r, true), kk, xa.data(), c2.data() + i * m.cin);
      if (need_x) a[static_cast<std::size_t>(i)] = data.actions[static_cast<std::size_t>(i)];
    }
  if (need_x) {
    f.X = torch::from_blob(x.data(), {rows, m.ain}, torch::kFloat32).clone().to(m.dev);
    f.A = torch::from_blob(a.data(), {rows}, torch::kInt64).clone().to(m.dev);
    f.AG = m.local_agent_index(static_cast<int>(rows));
    f.rows = rows;
  }
  if (need_c) {
    f.C = torch::from_blob(c.data(), {rows, m.cin}, torch::kFloat32).clone().to(m.dev);
    f.C2 = torch::from_blob(c2.data(), {rows, m.cin}, torch::kFloat32).clone().to(m.dev);
  }
}

namespace {

/// One pass of actor steps over the rows (X, A, AG) minimising −mean(w · log π(a|o)) (w = 1 when
/// `weights` is undefined); adds loss, argmax accuracy and gradient norm to s[0..2].
int actor_epoch(Mappo::Impl& m, const torch::Tensor& X, const torch::Tensor& A,
                const torch::Tensor& AG, std::int64_t rows, int minibatch,
                const torch::Tensor& weights, double* s, UpdateStats& st) {
  const auto actor_params = params_of(m.actors);
  const int batches = static_cast<int>(rows / minibatch);
  std::vector<std::int64_t> perm;
  shuffle_units(static_cast<int>(rows), 1, m.shuffle_rng, perm);
  for (int b = 0; b < batches; ++b) {
    const double t0 = now();
    auto idx = torch::from_blob(perm.data() + static_cast<std::ptrdiff_t>(b) * minibatch,
                                {minibatch}, torch::kInt64)
                   .to(m.dev);
    auto logp = torch::log_softmax(m.logits(X.index_select(0, idx), AG.index_select(0, idx)), 1);
    auto act = A.index_select(0, idx);
    auto nll = -logp.gather(1, act.unsqueeze(1)).squeeze(1);
    auto loss = weights.defined() ? (weights.index_select(0, idx) * nll).mean() : nll.mean();
    m.actor_grads.zero();
    if (m.cfg.share_actor)
      m.actor_grads.backward(loss, m.comm);
    else
      loss.backward();
    const double t1 = now();
    if (m.cfg.share_actor) m.actor_grads.average(m.comm);
    const double t2 = now();
    s[2] += nn::clip_grad_norm(actor_params, m.cfg.max_grad_norm);
    nn::adam_step(*m.actor_opt);
    torch::NoGradGuard g;
    s[0] += loss.item<double>();
    s[1] += logp.argmax(1).eq(act).to(torch::kFloat32).mean().item<double>();
    st.time_forward_backward += (t1 - t0) + (now() - t2);
    st.time_allreduce += t2 - t1;
  }
  return batches;
}

}  // namespace

UpdateStats PolicyFit::clone(const LocalDataset& data, int epochs, int minibatch) {
  auto& m = m_;
  prepare(data, false, minibatch);
  const auto& f = *rows_;
  UpdateStats st;
  double s[3] = {0, 0, 0};  // bc_loss, bc_accuracy, grad_norm_actor
  int updates = 0;
  for (int ep = 0; ep < epochs; ++ep)
    updates += actor_epoch(m, f.X, f.A, f.AG, f.rows, minibatch, {}, s, st);
  m.comm.allreduce_sum(s, 3);
  const double div = static_cast<double>(std::max(1, updates)) * m.comm.size();
  for (double v : s) st.values.push_back(v / div);
  return st;
}

UpdateStats PolicyFit::awr(const LocalDataset& data, const AwrOptions& opt) {
  auto& m = m_;
  MARLSCHED_REQUIRE(
      !m.pooled, "awr fits the concat or local critic; --critic pooled is not supported offline");
  prepare(data, true, opt.minibatch);
  const auto& f = *rows_;
  const std::int64_t rows = f.rows;
  const int K = m.k;
  UpdateStats st;
  const double t_start = now();

  // Values of every state and next state (denormalised), on the host.
  auto value_rows = [&](const torch::Tensor& C) {
    torch::NoGradGuard g;
    auto v = nn::host(m.critic.ptr()->forward(C).squeeze(1)).contiguous();
    std::vector<float> out(static_cast<std::size_t>(rows));
    for (std::int64_t i = 0; i < rows; ++i)
      out[static_cast<std::size_t>(i)] = m.denorm(v.data_ptr<float>()[i]);
    return out;
  };
  const auto v = value_rows(f.C), v2 = value_rows(f.C2);

  // λ-returns of the learner's reward (1-β)·own + β·mean over agents, per block and agent,
  // backwards: at an episode end (or a block's last row) the episode's value is bootstrapped
  // from the next state unless it terminated.
  std::vector<float> ret(static_cast<std::size_t>(rows)), adv(ret.size());
  const double gamma = m.cfg.gamma, lambda = m.cfg.gae_lambda, beta = opt.team_reward;
  for (std::size_t b = 0; b + 1 < data.block_offsets.size(); ++b)
    for (int kk = 0; kk < K; ++kk) {
      double next_ret = 0;
      for (std::int64_t r = data.block_offsets[b + 1] - 1; r >= data.block_offsets[b]; --r) {
        const auto i = static_cast<std::size_t>(r * K + kk);
        const auto ru = static_cast<std::size_t>(r);
        const double reward = data.reward(r, kk, beta, opt.team_targets ? &m.spec : nullptr);
        const bool last = r == data.block_offsets[b + 1] - 1 || data.terminations[ru] != 0 ||
                          data.truncations[ru] != 0;
        const double boot = data.terminations[ru] != 0 ? 0.0 : v2[i];
        const double g =
            reward + gamma * (last ? boot : (1.0 - lambda) * v2[i] + lambda * next_ret);
        ret[i] = static_cast<float>(g);
        adv[i] = static_cast<float>(g - v[i]);
        next_ret = g;
      }
    }
  // Moments over every rank (identical there): value targets and the advantages' scale.
  std::vector<float> tgt;
  const auto [amean, astd] = m.value_targets(ret, adv, tgt);
  // Advantage weights exp(Â / temperature), Â standardised, capped (AWR; Peng et al. 2019).
  std::vector<float> w(static_cast<std::size_t>(rows));
  double wsum = 0;
  for (std::size_t u = 0; u < w.size(); ++u) {
    const double a = (adv[u] - amean) / astd;
    w[u] = static_cast<float>(std::min(opt.max_weight, std::exp(a / opt.temperature)));
    wsum += w[u];
  }
  const auto W = torch::from_blob(w.data(), {rows}, torch::kFloat32).clone().to(m.dev);
  const auto TGT = torch::from_blob(tgt.data(), {rows}, torch::kFloat32).clone().to(m.dev);
  st.time_forward_backward += now() - t_start;

  // The critic: Huber regression of the (normalised) λ-returns, the same steps as MAPPO's.
  double c[2] = {0, 0};  // value_loss, grad_norm_critic
  const auto critic_params = m.critic_params();
  const int batches = static_cast<int>(rows / opt.minibatch);
  std::vector<std::int64_t> perm;
  for (int ep = 0; ep < opt.epochs; ++ep) {
    shuffle_units(static_cast<int>(rows), 1, m.shuffle_rng, perm);
    for (int b = 0; b < batches; ++b) {
      const double t0 = now();
      auto idx = torch::from_blob(perm.data() + static_cast<std::ptrdiff_t>(b) * opt.minibatch,
                                  {opt.minibatch}, torch::kInt64)
                     .to(m.dev);
      auto pred = m.critic.ptr()->forward(f.C.index_select(0, idx)).squeeze(1);
      auto loss = torch::nn::functional::huber_loss(
          pred, TGT.index_select(0, idx),
          torch::nn::functional::HuberLossFuncOptions().delta(m.cfg.huber_delta));
      m.critic_grads.zero();
      m.critic_grads.backward(loss, m.comm);
      const double t1 = now();
      m.critic_grads.average(m.comm);
      const double t2 = now();
      c[1] += nn::clip_grad_norm(critic_params, m.cfg.max_grad_norm);
      nn::adam_step(*m.critic_opt);
      c[0] += loss.item<double>();
      st.time_forward_backward += (t1 - t0) + (now() - t2);
      st.time_allreduce += t2 - t1;
    }
  }
  m.critic_trained = true;
  // The actor: advantage-weighted cross-entropy of the logged actions.
  double s[3] = {0, 0, 0};  // awr_loss, accuracy, grad_norm_actor
  int updates = 0;
  for (int ep = 0; ep < opt.epochs; ++ep)
    updates += actor_epoch(m, f.X, f.A, f.AG, f.rows, opt.minibatch, W, s, st);
  double all[6] = {s[0], s[1], s[2], c[0], c[1], wsum / static_cast<double>(rows)};
  m.comm.allreduce_sum(all, 6);
  const double div = static_cast<double>(std::max(1, updates)) * m.comm.size();
  // awr_loss, accuracy, value_loss, mean_weight, grad_norm_actor, grad_norm_critic
  st.values = {all[0] / div,           all[1] / div, all[3] / div,
               all[5] / m.comm.size(), all[2] / div, all[4] / div};
  return st;
}

}  // namespace marlsched
