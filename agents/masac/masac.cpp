#include "agents/masac/masac.hpp"

#include "agents/masac/masac_impl.hpp"

namespace marlsched {

Masac::Masac(const MasacConfig& cfg, const LearnerLayout& l, bool maddpg)
    : impl_(std::make_unique<Impl>(cfg, maddpg, *l.spec, *l.comm, l.num_agents, l.first_agent,
                                   l.local_agents, l.copies, l.seed)) {}

std::string Masac::name() const {
  return impl_->ddpg ? "maddpg" : "masac";
}

Masac::~Masac() = default;

void Masac::set_training(bool t) {
  impl_->training = t;
}
void Masac::set_deterministic(bool d) {
  impl_->deterministic = d;
}
double Masac::alpha() const {
  return impl_->alpha();
}
std::int64_t Masac::replay_size() const {
  return impl_->replay.size;
}

Decisions Masac::act(const PolicyInput& pin) {
  auto& m = *impl_;
  Decisions out;
  std::vector<int>& actions = out.actions;
  MARLSCHED_CHECK(pin.copies == m.e && pin.local_agents == m.k && pin.num_agents == m.n,
                  "MASAC was built for a different layout");
  const int rows = m.e * m.k;
  m.globals_of(pin.global, m.last_g);
  if (m.training) m.finish_pending(m.last_g);
  std::vector<float> x(static_cast<std::size_t>(rows * m.in));
  for (int c = 0; c < m.e; ++c)
    for (int kk = 0; kk < m.k; ++kk)
      nn::agent_input(pin.global[static_cast<std::size_t>(c)], m.pub, m.first + kk,
                      x.data() + static_cast<std::ptrdiff_t>(c * m.k + kk) * m.in);
  torch::NoGradGuard guard;
  const auto probs = torch::softmax(m.actor->forward(nn::blob(x, rows, m.in, m.dev)), 1);
  const auto p = nn::host(probs);
  std::vector<std::int64_t> chosen;
  if (!m.training && m.deterministic) {
    const auto am = nn::host(probs.argmax(1));
    chosen.assign(am.data_ptr<std::int64_t>(), am.data_ptr<std::int64_t>() + rows);
  } else if (m.training) {
    chosen = m.sample(probs, m.explore_rng);
  } else {  // evaluation: the episode's draws, the same at every rank count
    chosen.resize(static_cast<std::size_t>(rows));
    for (int r = 0; r < rows; ++r)
      chosen[static_cast<std::size_t>(r)] =
          sample_index(p.data_ptr<float>() + static_cast<std::ptrdiff_t>(r) * m.na, m.na,
                       pin.draw(r / m.k, pin.first_agent + r % m.k, kActionStream), false);
  }
  actions.resize(static_cast<std::size_t>(rows));
  out.log_probs.resize(static_cast<std::size_t>(rows));
  for (int r = 0; r < rows; ++r) {
    const auto ru = static_cast<std::size_t>(r);
    actions[ru] = static_cast<int>(chosen[ru]);
    out.log_probs[ru] = std::log(std::max(p.data_ptr<float>()[r * m.na + chosen[ru]], 1e-30f));
  }
  if (!m.training) return out;
  // The joint action: every rank's agents' choices, [copy][agent] (one allgather per step).
  // Ranks host equal contiguous agent ranges: rank r has agents r·k ... r·k + k - 1.
  MARLSCHED_CHECK(m.first == m.comm.rank() * m.k && m.comm.size() * m.k == m.n,
                  "masac: agents are not laid out rank by rank");
  std::vector<std::int64_t> all(static_cast<std::size_t>(rows * m.comm.size()));
  m.comm.allgather(chosen.data(), rows, all.data());  // [rank][copy][k]
  m.last_joint.resize(static_cast<std::size_t>(m.e * m.n));
  for (int rk = 0; rk < m.comm.size(); ++rk)
    for (int c = 0; c < m.e; ++c)
      for (int kk = 0; kk < m.k; ++kk)
        m.last_joint[static_cast<std::size_t>(c * m.n + rk * m.k + kk)] =
            all[static_cast<std::size_t>(rk * rows + c * m.k + kk)];
  // Soft values of this rank's agents at these states, for the trajectory logs.
  auto G = nn::blob(m.last_g, m.e, m.gw, m.dev).repeat_interleave(m.k, 0);
  auto J = torch::from_blob(m.last_joint.data(), {m.e, m.n}, torch::kInt64)
               .to(m.dev)
               .repeat_interleave(m.k, 0);
  auto A = (torch::arange(m.k, torch::kInt64) + m.first).repeat({m.e}).to(m.dev);
  auto cx = m.critic_input(G, J, A);
  auto q = torch::min(m.q1->forward(cx), m.q2->forward(cx));
  auto v = (probs * (q - m.alpha() * torch::log(probs.clamp_min(1e-30)))).sum(1);
  const auto vh = nn::host(v);
  out.values.assign(vh.data_ptr<float>(), vh.data_ptr<float>() + rows);
  return out;
}

void Masac::record(const StepFeedback& fb) {
  auto& m = *impl_;
  MARLSCHED_CHECK(m.training, "record() outside training mode");
  MARLSCHED_CHECK(static_cast<int>(fb.reward.size()) == m.e * m.k, "feedback has wrong size");
  for (int c = 0; c < m.e; ++c) {
    const auto cu = static_cast<std::size_t>(c);
    const float* g = m.last_g.data() + cu * static_cast<std::size_t>(m.gw);
    const std::int64_t* joint = m.last_joint.data() + cu * static_cast<std::size_t>(m.n);
    const float* r = fb.reward.data() + cu * static_cast<std::size_t>(m.k);
    if (fb.done[cu]) {  // the next state is the terminal observation, known now
      const GlobalObs& t = fb.terminal[cu];
      MARLSCHED_CHECK(t.num_agents == m.n && t.obs_dim == m.d, "masac: bad terminal observation");
      m.replay.push(g, joint, r, !fb.truncated[cu], t.data);
    } else {
      std::copy(g, g + m.gw, m.pend_g.begin() + static_cast<std::ptrdiff_t>(cu) * m.gw);
      std::copy(joint, joint + m.n, m.pend_a.begin() + static_cast<std::ptrdiff_t>(cu) * m.n);
      std::copy(r, r + m.k, m.pend_r.begin() + static_cast<std::ptrdiff_t>(cu) * m.k);
      m.pending[cu] = 1;
    }
  }
}

UpdateStats Masac::update(const PolicyInput& last) {
  auto& m = *impl_;
  UpdateStats st;
  std::vector<float> g_last;
  m.globals_of(last.global, g_last);
  m.finish_pending(g_last);
  // critic_loss, actor_loss, entropy, q_mean summed over gradient steps
  double s[4] = {0, 0, 0, 0};
  int steps = 0;
  const int B = m.cfg.batch;
  Impl::Batch bt;
  const bool ready = m.replay.size >= m.cfg.warmup;  // same on every rank (lockstep)
  for (int u = 0; ready && u < m.cfg.updates; ++u) {
    m.draw_batch(bt);
    const double t0 = now();
    auto S = nn::blob(bt.s, B, m.gw, m.dev), S2 = nn::blob(bt.s2, B, m.gw, m.dev);
    auto J = torch::from_blob(bt.a.data(), {B, m.n}, torch::kInt64).to(m.dev);
    auto I = torch::from_blob(bt.agent.data(), {B}, torch::kInt64).to(m.dev);
    auto R = torch::from_blob(bt.r.data(), {B}, torch::kFloat32).to(m.dev);
    auto T = torch::from_blob(bt.t.data(), {B}, torch::kFloat32).to(m.dev);
    const float alpha = static_cast<float>(m.alpha());
    const auto rows = torch::arange(B, torch::kInt64).to(m.dev);
    // Critics: regress both Q(s, a) of the agent's own stored action on the target.
    const torch::Tensor y = m.critic_target(bt, S2, I, R, T, rows, alpha);
    auto cx = m.critic_input(S, J, I);
    auto own_a = J.index({rows, I}).unsqueeze(1);
    auto qa1 = m.q1->forward(cx).gather(1, own_a).squeeze(1);
    auto qa2 = m.q2->forward(cx).gather(1, own_a).squeeze(1);
    auto critic_loss = 0.5 * (torch::mse_loss(qa1, y) + torch::mse_loss(qa2, y));
    m.g_critic.zero();
    m.g_critic.backward(critic_loss, m.comm);
    const double tc = now();
    m.g_critic.average(m.comm);
    const double tc2 = now();
    torch::nn::utils::clip_grad_norm_(m.critics(), m.cfg.max_grad_norm);
    m.opt_critic->step();
    // Actor, on the agent's input at s.
    std::vector<float> xa(static_cast<std::size_t>(B * m.in));
    for (int b = 0; b < B; ++b)
      nn::agent_input(GlobalObs{bt.s.data() + static_cast<std::ptrdiff_t>(b) * m.gw, m.n, m.d},
                      m.pub, static_cast<int>(bt.agent[static_cast<std::size_t>(b)]),
                      xa.data() + static_cast<std::ptrdiff_t>(b) * m.in);
    auto logits = m.actor->forward(nn::blob(xa, B, m.in, m.dev));
    auto logp = torch::log_softmax(logits, 1);
    auto p = logp.exp();
    torch::Tensor qmin;
    {
      torch::NoGradGuard g;
      qmin = torch::min(m.q1->forward(cx), m.q2->forward(cx));
    }
    const torch::Tensor actor_loss = m.actor_loss(logits, logp, p, qmin, alpha);
    m.g_actor.zero();
    m.g_actor.backward(actor_loss, m.comm);
    const double ta = now();
    m.g_actor.average(m.comm);
    const double ta2 = now();
    torch::nn::utils::clip_grad_norm_(m.actor->parameters(), m.cfg.max_grad_norm);
    m.opt_actor->step();
    // Temperature: raise α when the entropy is under the target, lower it when above.
    const auto entropy = -(p * logp).sum(1).detach();
    if (!m.ddpg) {
      auto alpha_loss = (m.log_alpha * (entropy - static_cast<float>(m.target_h))).mean();
      m.g_alpha.zero();
      m.g_alpha.backward(alpha_loss, m.comm);
      m.g_alpha.average(m.comm);
      m.opt_alpha->step();
    }
    m.sync_targets(m.cfg.tau);
    const double t3 = now();
    st.time_allreduce += (tc2 - tc) + (ta2 - ta);
    st.time_forward_backward += (t3 - t0) - (tc2 - tc) - (ta2 - ta);
    s[0] += critic_loss.item<double>();
    s[1] += actor_loss.item<double>();
    s[2] += entropy.mean().item<double>();
    s[3] += qa1.mean().item<double>();
    m.grad_steps += 1;
    ++steps;
  }
  m.comm.allreduce_sum(s, 4);
  const double div = static_cast<double>(steps) * m.comm.size();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  st.stepped = steps > 0;
  st.values = {
      steps ? s[0] / div : nan, steps ? s[1] / div : nan, m.alpha(),
      steps ? s[2] / div : nan, steps ? s[3] / div : nan, static_cast<double>(m.replay.size)};
  return st;
}

bool Masac::shared_parameters_identical() const {
  return dist::parameters_identical(impl_->shared(), impl_->comm);
}

std::uint64_t Masac::shared_parameter_digest() const {
  return dist::parameter_digest(impl_->shared());
}

std::vector<float> Masac::action_probs(const GlobalObs& g, int local_agent) const {
  const auto& m = *impl_;
  std::vector<float> x(static_cast<std::size_t>(m.in));
  nn::agent_input(g, m.pub, m.first + local_agent, x.data());
  torch::NoGradGuard guard;
  const auto p = nn::host(torch::softmax(m.actor.ptr()->forward(nn::blob(x, 1, m.in, m.dev)), 1));
  return std::vector<float>(p.data_ptr<float>(), p.data_ptr<float>() + m.na);
}

void Masac::export_torchscript(const std::vector<const Masac*>& ranks, const std::string& path,
                               const std::string& metadata) {
  MARLSCHED_CHECK(!ranks.empty(), "no learner to export");
  const Impl& m0 = *ranks.front()->impl_;
  auto mod = nn::policy_module(m0.n, m0.d, m0.pub, m0.na, metadata);
  std::ostringstream src;
  src << nn::script_agent_input() << nn::script_logits_head()
      << nn::script_mlp(mod, "actor", m0.actor, "    ") << "    return out\n"
      << nn::script_softmax_policy();
  nn::save_module(mod, src.str(), path);
}

}  // namespace marlsched
