#include "agents/mappo/mappo.hpp"

#include "agents/mappo/mappo_impl.hpp"

namespace marlsched {

Mappo::Mappo(const MappoConfig& cfg, const LearnerLayout& l)
    : impl_(std::make_unique<Impl>(cfg, *l.spec, *l.comm, l.num_agents, l.first_agent,
                                   l.local_agents, l.copies, l.seed, l.baselines)) {}

Mappo::~Mappo() = default;

std::string Mappo::name() const {
  return impl_->local ? "ippo" : "mappo";
}

int Mappo::common_episodes() const {
  return impl_->cfg.common_episodes;
}

bool Mappo::wants_privileged() const {
  return impl_->cfg.critic_privileged;
}

bool Mappo::needs_every_agent() const {
  const auto& m = *impl_;
  return (m.base && m.base->needs_every_agent()) || (m.teacher && m.teacher->needs_every_agent());
}

void Mappo::set_training(bool t) {
  if (t) require_copy_groups(name(), impl_->cfg.common_episodes, impl_->e);
  impl_->training = t;
}
void Mappo::set_deterministic(bool d) {
  impl_->deterministic = d;
}

Decisions Mappo::act(const PolicyInput& in) {
  auto& m = *impl_;
  Decisions out;
  std::vector<int>& actions = out.actions;
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
  torch::Tensor logp_all, base;
  if (m.base) {
    m.base->act(in, m.last_base);
    std::vector<std::int64_t> b(m.last_base.begin(), m.last_base.end());
    base = torch::tensor(b, torch::kInt64).to(m.dev);
  }
  // Training acts through the update's own forward pass; evaluation keeps torch's, which the
  // exported policy computes too.
  if (m.fused && m.training) {
    logp_all = m.act_actor_tape.forward(m.actors[0], X);
    ppo::log_softmax_rows(logp_all.data_ptr<float>(), rows, m.na);
  } else {
    logp_all = nn::host(torch::log_softmax(m.policy_logits(X, m.local_agent_index(rows), base), 1));
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
  out.log_probs = m.last_logp;
  out.values = m.last_value;
  return out;
}

double Mappo::imitation_weight() const {
  return impl_->imitation_weight();
}

void Mappo::record(const StepFeedback& fb) {
  auto& m = *impl_;
  MARLSCHED_CHECK(m.training, "record() outside training mode");
  const int rows = m.e * m.k;
  MARLSCHED_CHECK(static_cast<int>(fb.reward.size()) == rows, "feedback has wrong size");
  if (m.imitation_weight() > 0) {
    MARLSCHED_CHECK(static_cast<int>(m.last_teacher.size()) == rows, "no teacher actions");
    m.teacher_act.insert(m.teacher_act.end(), m.last_teacher.begin(), m.last_teacher.end());
  }
  if (m.base) {
    MARLSCHED_CHECK(static_cast<int>(m.last_base.size()) == rows, "no baseline actions");
    m.base_act.insert(m.base_act.end(), m.last_base.begin(), m.last_base.end());
  }
  // V(terminal state) of the copies whose episode was truncated (bootstrapped), else 0.
  std::vector<float> tv(static_cast<std::size_t>(rows), 0.f);
  bool any_trunc = false;
  for (int c = 0; c < m.e; ++c)
    any_trunc = any_trunc ||
                (fb.done[static_cast<std::size_t>(c)] && fb.truncated[static_cast<std::size_t>(c)]);
  if (any_trunc) {
    const auto v = m.values_of(fb.terminal);
    for (int c = 0; c < m.e; ++c)
      if (fb.done[static_cast<std::size_t>(c)] && fb.truncated[static_cast<std::size_t>(c)])
        for (int kk = 0; kk < m.k; ++kk)
          tv[static_cast<std::size_t>(c * m.k + kk)] = v[static_cast<std::size_t>(c * m.k + kk)];
  }
  m.buf.append(m.last_x, m.last_c, m.last_act, m.last_logp, m.last_value, fb.reward, fb.done, tv);
}

namespace {
/// --common-episodes G: each advantage (step-major [t][copy * k + agent]) minus the mean of the
/// other G − 1 copies of its group at the same step and agent.
void center_on_group(std::vector<float>& adv, int steps, int copies, int k, int group) {
  const auto rows = static_cast<std::size_t>(copies) * static_cast<std::size_t>(k);
  std::vector<float> sum(static_cast<std::size_t>(k));
  for (int t = 0; t < steps; ++t) {
    float* a = adv.data() + static_cast<std::size_t>(t) * rows;
    for (int g = 0; g < copies / group; ++g) {
      float* first = a + static_cast<std::size_t>(g * group) * static_cast<std::size_t>(k);
      std::fill(sum.begin(), sum.end(), 0.f);
      for (int c = 0; c < group; ++c)
        for (int kk = 0; kk < k; ++kk) sum[static_cast<std::size_t>(kk)] += first[c * k + kk];
      for (int c = 0; c < group; ++c)
        for (int kk = 0; kk < k; ++kk) {
          float& v = first[c * k + kk];
          v -= (sum[static_cast<std::size_t>(kk)] - v) / static_cast<float>(group - 1);
        }
    }
  }
}
}  // namespace

UpdateStats Mappo::update(const PolicyInput& last) {
  auto& m = *impl_;
  UpdateStats st;
  // policy_loss, value_loss, entropy, approx_kl, clip_frac, grad_norm_actor, grad_norm_critic
  double s[7] = {0, 0, 0, 0, 0, 0, 0};
  const int rows = m.e * m.k, T = m.buf.steps;
  MARLSCHED_CHECK(T > 0, "update() with an empty rollout");
  const int M = rows * T;
  // Bootstrap values of the state after the last step.
  const auto boot = m.values_of(last.global);

  // GAE per (copy, agent) sequence.
  std::vector<float> adv, ret;
  compute_rollout_gae(m.buf.sequences(rows, m.k), boot, static_cast<float>(m.cfg.gamma),
                      static_cast<float>(m.cfg.gae_lambda), adv, ret);
  if (m.cfg.common_episodes > 1) center_on_group(adv, T, m.e, m.k, m.cfg.common_episodes);
  // Global moments of returns and advantages (identical on all ranks): value targets, and the
  // advantages standardised.
  std::vector<float> tgt;
  const auto [amean, astd] = m.value_targets(ret, adv, tgt);
  for (auto& a : adv) a = static_cast<float>((a - amean) / (astd + 1e-8));

  // One copy of the rollout to the device (none on the CPU); minibatches index it there.
  auto X = torch::from_blob(m.buf.x.data(), {M, m.ain}, torch::kFloat32).to(m.dev);
  auto C = torch::from_blob(m.buf.c.data(), {M, m.cin}, torch::kFloat32).to(m.dev);
  auto A = torch::from_blob(m.buf.act.data(), {M}, torch::kInt64).to(m.dev);
  auto OLD = torch::from_blob(m.buf.logp.data(), {M}, torch::kFloat32).to(m.dev);
  auto ADV = torch::from_blob(adv.data(), {M}, torch::kFloat32).to(m.dev);
  auto TGT = torch::from_blob(tgt.data(), {M}, torch::kFloat32).to(m.dev);
  auto AG = m.local_agent_index(M);  // row index within a step is copy*K + k
  const double imitation = m.imitation_weight();
  torch::Tensor TEACH;
  if (imitation > 0) {
    MARLSCHED_CHECK(static_cast<int>(m.teacher_act.size()) == M, "teacher actions missing");
    TEACH = torch::from_blob(m.teacher_act.data(), {M}, torch::kInt64).to(m.dev);
  }
  torch::Tensor BASE;
  if (m.base) {
    MARLSCHED_CHECK(static_cast<int>(m.base_act.size()) == M, "baseline actions missing");
    BASE = torch::from_blob(m.base_act.data(), {M}, torch::kInt64).to(m.dev);
  }
  const Impl::Batch u{X, C, A, OLD, ADV, TGT, AG, TEACH, BASE, &adv, &tgt, imitation};

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
      if (m.cfg.overlap_grads) {  // the critic's allreduce started before the actor's backward
        if (m.cfg.share_actor) m.actor_grads.start(m.comm);
        m.critic_grads.finish();
        m.actor_grads.finish();
      } else {  // nothing to overlap: blocking allreduces
        if (m.cfg.share_actor) m.actor_grads.average(m.comm);
        m.critic_grads.average(m.comm);
      }
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
  m.buf.clear();
  m.teacher_act.clear();
  m.base_act.clear();
  m.updates_done += 1;
  m.critic_trained = true;
  return st;
}

}  // namespace marlsched
