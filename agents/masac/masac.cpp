#include "agents/masac/masac.hpp"
#include "agents/archive_check.hpp"
#include "core/clock.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "agents/nn.hpp"
#include "core/error.hpp"
#include "core/file.hpp"
#include "core/rng.hpp"
#include "dist/grad.hpp"
#include "rollout/replay.hpp"

namespace marlsched {

void MasacConfig::bind(OptionBinder& b) {
  b.group("Agent: multi-agent soft actor-critic (masac)");
  b.add("sac-lr-actor", lr_actor, "actor learning rate (Adam)");
  b.add("sac-lr-critic", lr_critic, "critic learning rate (Adam)");
  b.add("sac-lr-alpha", lr_alpha, "temperature learning rate (Adam, on log α)");
  b.add("sac-gamma", gamma, "discount factor");
  b.add("sac-tau", tau, "Polyak rate of the target critics per gradient step");
  b.add("sac-actor-hidden", actor_hidden, "actor hidden layer sizes");
  b.add("sac-critic-hidden", critic_hidden, "critic hidden layer sizes");
  b.add("sac-buffer", buffer, "replay capacity in (step, env copy) entries per rank");
  b.add("sac-batch", batch, "(entry, agent) samples per gradient step per rank");
  b.add("sac-warmup", warmup, "replay entries before learning starts");
  b.add("sac-updates", updates, "gradient steps per iteration");
  b.add("sac-target-entropy", target_entropy,
        "target policy entropy as a fraction of log(number of actions)");
  b.add("sac-init-alpha", init_alpha, "initial temperature α");
  b.add("sac-max-grad-norm", max_grad_norm, "global gradient norm clip (actor and critics)");
  b.add("sac-team-reward", team_reward, "β in reward = (1-β)·own + β·mean over agents");
  b.add("sac-rollout-steps", rollout_steps, "environment steps per iteration");
}

void MasacConfig::validate() const {
  require_learning_rate(lr_actor, "sac-lr-actor");
  require_learning_rate(lr_critic, "sac-lr-critic");
  require_learning_rate(lr_alpha, "sac-lr-alpha");
  require_positive(init_alpha, "sac-init-alpha");
  require_positive(max_grad_norm, "sac-max-grad-norm");
  MARLSCHED_REQUIRE(gamma >= 0 && gamma < 1, "--sac-gamma must be in [0, 1), got " << gamma);
  MARLSCHED_REQUIRE(tau > 0 && tau <= 1, "--sac-tau must be in (0, 1], got " << tau);
  for (const auto* h : {&actor_hidden, &critic_hidden}) {
    MARLSCHED_REQUIRE(!h->empty(), "--sac-actor-hidden and --sac-critic-hidden need a layer");
    for (int w : *h) MARLSCHED_REQUIRE(w > 0, "--sac-*-hidden sizes must be positive");
  }
  MARLSCHED_REQUIRE(batch >= 1, "--sac-batch must be >= 1, got " << batch);
  MARLSCHED_REQUIRE(warmup >= 1 && warmup <= buffer,
                    "--sac-warmup must be between 1 and --sac-buffer, got " << warmup);
  MARLSCHED_REQUIRE(updates >= 0, "--sac-updates must be >= 0");
  MARLSCHED_REQUIRE(
      target_entropy >= 0 && target_entropy < 1,
      "--sac-target-entropy is a fraction of log(actions) in [0, 1), got " << target_entropy);
  MARLSCHED_REQUIRE(team_reward >= 0 && team_reward <= 1, "--sac-team-reward must be in [0, 1]");
  MARLSCHED_REQUIRE(rollout_steps >= 1, "--sac-rollout-steps must be >= 1");
}

namespace {

template <typename T>
torch::Tensor saved(const std::vector<T>& v, torch::ScalarType type) {
  return torch::from_blob(const_cast<T*>(v.data()), {static_cast<std::int64_t>(v.size())}, type)
      .clone();
}
template <typename T>
void restore(const torch::Tensor& t, std::vector<T>& v, const std::string& what,
             const std::string& path) {
  const auto h = nn::host(t);
  MARLSCHED_REQUIRE(h.numel() == static_cast<std::int64_t>(v.size()),
                    "model '" << path << "': " << what << " does not fit this run's layout");
  std::copy(h.data_ptr<T>(), h.data_ptr<T>() + h.numel(), v.begin());
}

}  // namespace

struct Masac::Impl {
  MasacConfig cfg;
  const dist::Comm& comm;
  torch::Device dev;
  int n, first, k, e, d, pub, na, in, gw, cin;  // gw: global obs width n·d; cin: critic input
  bool ddpg;  // the MADDPG variant: target actor, Gumbel-softmax actor gradient, no entropy
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
  std::vector<float> last_g, last_logp, last_value;
  std::vector<std::int64_t> last_joint;
  std::vector<float> pend_g, pend_r;
  std::vector<std::int64_t> pend_a;
  std::vector<char> pending;  // [copy]

  Impl(const MasacConfig& c, bool maddpg, const EnvSpec& sp, const dist::Comm& cm, int num_agents,
       int first_agent, int local_agents, int copies, std::uint64_t seed)
      : cfg(c),
        comm(cm),
        dev(nn::device_for(c.device, cm)),
        n(num_agents),
        first(first_agent),
        k(local_agents),
        e(copies),
        d(sp.obs_dim()),
        pub(sp.num_public),
        na(sp.num_actions()),
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

Masac::Masac(const MasacConfig& cfg, const EnvSpec& spec, const dist::Comm& comm, int num_agents,
             int first_agent, int local_agents, int copies, std::uint64_t seed, bool maddpg)
    : impl_(std::make_unique<Impl>(cfg, maddpg, spec, comm, num_agents, first_agent, local_agents,
                                   copies, seed)) {}

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

void Masac::act(const PolicyInput& pin, std::vector<int>& actions) {
  auto& m = *impl_;
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
  m.last_logp.resize(static_cast<std::size_t>(rows));
  for (int r = 0; r < rows; ++r) {
    const auto ru = static_cast<std::size_t>(r);
    actions[ru] = static_cast<int>(chosen[ru]);
    m.last_logp[ru] = std::log(std::max(p.data_ptr<float>()[r * m.na + chosen[ru]], 1e-30f));
  }
  if (!m.training) return;
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
  m.last_value.assign(vh.data_ptr<float>(), vh.data_ptr<float>() + rows);
}

const std::vector<float>& Masac::last_log_probs() const {
  return impl_->last_logp;
}
const std::vector<float>& Masac::last_values() const {
  return impl_->last_value;
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

const std::vector<StatName>& Masac::stat_names() const {
  static const std::vector<StatName> names = {
      {"critic_loss", "loss/critic"}, {"actor_loss", "loss/actor"}, {"alpha", "sac/alpha"},
      {"entropy", "policy/entropy"},  {"q_mean", "q/mean"},         {"replay_size", "replay/size"}};
  return names;
}

void Masac::save(const std::string& path) const {
  const auto& m = *impl_;
  torch::serialize::OutputArchive ar;
  ar.write("meta",
           torch::tensor({static_cast<std::int64_t>(m.ddpg ? 0xDD6 : 0x5AC),
                          static_cast<std::int64_t>(m.n), static_cast<std::int64_t>(m.k),
                          static_cast<std::int64_t>(m.in), static_cast<std::int64_t>(m.na)}));
  ar.write("counters", torch::tensor({m.grad_steps}));
  const std::pair<const char*, const nn::Mlp*> nets[] = {
      {"actor", &m.actor}, {"q1", &m.q1}, {"q2", &m.q2},
      {"t1", &m.t1},       {"t2", &m.t2}, {"target_actor", &m.ta}};
  for (const auto& [name, net] : nets) {
    nn::require_finite((*net)->parameters(), "model '" + path + "' (" + name + ")");
    torch::serialize::OutputArchive a;
    (*net)->save(a);
    ar.write(name, a);
  }
  ar.write("log_alpha", m.log_alpha.detach());
  const std::pair<const char*, torch::optim::Adam*> opts[] = {{"opt_actor", m.opt_actor.get()},
                                                              {"opt_critic", m.opt_critic.get()},
                                                              {"opt_alpha", m.opt_alpha.get()}};
  for (const auto& [name, opt] : opts) {
    torch::serialize::OutputArchive a;
    opt->save(a);
    ar.write(name, a);
  }
  const rollout::Replay& rb = m.replay;
  ar.write("replay_pos",
           torch::tensor({static_cast<std::int64_t>(rb.size), static_cast<std::int64_t>(rb.head)}));
  ar.write("replay_s", saved(rb.obs, torch::kFloat32));
  ar.write("replay_s2", saved(rb.next_obs, torch::kFloat32));
  ar.write("replay_r", saved(rb.rewards, torch::kFloat32));
  ar.write("replay_term", saved(rb.term, torch::kFloat32));
  ar.write("replay_a", saved(rb.actions, torch::kInt64));
  // update() completed every waiting transition; the last act() is kept for a save between an
  // act() and its record().
  ar.write("last_g", saved(m.last_g, torch::kFloat32));
  ar.write("last_joint", saved(m.last_joint, torch::kInt64));
  ar.write("rng", nn::string_tensor(write_states({&m.explore_rng, &m.sample_rng})));
  std::ostringstream bytes;
  ar.save_to(bytes);
  write_file(path, bytes.str());
}

void Masac::load(const std::string& path) {
  auto& m = *impl_;
  std::ifstream in(path, std::ios::binary);
  MARLSCHED_REQUIRE_INPUT(static_cast<bool>(in), "cannot read model '" << path << "'");
  verify_archive(path, "model");
  try {
    torch::serialize::InputArchive ar;
    ar.load_from(in, m.dev);
    torch::Tensor meta;
    ar.read("meta", meta);
    meta = nn::host(meta);
    const std::vector<std::int64_t> want = {m.ddpg ? 0xDD6 : 0x5AC, m.n, m.k, m.in, m.na};
    MARLSCHED_REQUIRE(meta.numel() == 5 && meta.scalar_type() == torch::kInt64 &&
                          std::equal(want.begin(), want.end(), meta.data_ptr<std::int64_t>()),
                      "model '" << path << "' is not a " << (m.ddpg ? "MADDPG" : "MASAC")
                                << " model of this layout (agents, agents per "
                                   "rank, observation or action space)");
    torch::Tensor cnt;
    ar.read("counters", cnt);
    m.grad_steps = nn::host(cnt)[0].item<std::int64_t>();
    const std::pair<const char*, nn::Mlp*> nets[] = {{"actor", &m.actor}, {"q1", &m.q1},
                                                     {"q2", &m.q2},       {"t1", &m.t1},
                                                     {"t2", &m.t2},       {"target_actor", &m.ta}};
    for (const auto& [name, net] : nets) {
      torch::serialize::InputArchive a;
      ar.read(name, a);
      (*net)->load(a);
    }
    torch::Tensor la;
    ar.read("log_alpha", la);
    {
      torch::NoGradGuard g;
      m.log_alpha.copy_(la);
    }
    const std::pair<const char*, torch::optim::Adam*> opts[] = {{"opt_actor", m.opt_actor.get()},
                                                                {"opt_critic", m.opt_critic.get()},
                                                                {"opt_alpha", m.opt_alpha.get()}};
    for (const auto& [name, opt] : opts) {
      torch::serialize::InputArchive a;
      ar.read(name, a);
      opt->load(a);
    }
    torch::Tensor pos, s, s2, r, term, a;
    ar.read("replay_pos", pos);
    pos = nn::host(pos);
    rollout::Replay& rb = m.replay;
    const auto size = pos[0].item<std::int64_t>(), head = pos[1].item<std::int64_t>();
    MARLSCHED_REQUIRE(size >= 0 && size <= rb.cap && head >= 0 && head < rb.cap,
                      "model '" << path << "': replay buffer does not fit --sac-buffer " << rb.cap);
    ar.read("replay_s", s);
    ar.read("replay_s2", s2);
    ar.read("replay_r", r);
    ar.read("replay_term", term);
    ar.read("replay_a", a);
    restore(s, rb.obs, "replay buffer", path);
    restore(s2, rb.next_obs, "replay buffer", path);
    restore(r, rb.rewards, "replay buffer", path);
    restore(term, rb.term, "replay buffer", path);
    restore(a, rb.actions, "replay buffer", path);
    rb.size = static_cast<int>(size);
    rb.head = static_cast<int>(head);
    std::fill(m.pending.begin(), m.pending.end(), 0);
    torch::Tensor lg, lj;
    ar.read("last_g", lg);
    ar.read("last_joint", lj);
    lg = nn::host(lg);
    lj = nn::host(lj);
    // Only a run resumed with the same layout continues from the last act().
    if (lg.numel() == static_cast<std::int64_t>(m.e) * m.gw && lj.numel() == m.e * m.n) {
      m.last_g.assign(lg.data_ptr<float>(), lg.data_ptr<float>() + lg.numel());
      m.last_joint.assign(lj.data_ptr<std::int64_t>(), lj.data_ptr<std::int64_t>() + lj.numel());
    } else {
      m.last_g.clear();
      m.last_joint.clear();
    }
    torch::Tensor rt;
    ar.read("rng", rt);
    MARLSCHED_REQUIRE(read_states(nn::tensor_string(rt), {&m.explore_rng, &m.sample_rng}),
                      "model '" << path << "': bad RNG state");
  } catch (const c10::Error&) {
    MARLSCHED_THROW(InputError,
                    "cannot read model '" << path << "': corrupted or not a marlsched MASAC model");
  }
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
