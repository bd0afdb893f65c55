#include "agents/dqn/dqn.hpp"
#include "agents/archive_check.hpp"
#include "core/clock.hpp"

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

void DqnConfig::bind(OptionBinder& b) {
  b.group("Agent: DQN");
  b.add("dqn-lr", lr, "Q-network learning rate (Adam)");
  b.add("dqn-gamma", gamma, "discount factor");
  b.add("dqn-hidden", hidden, "Q-network hidden layer sizes");
  b.add("dqn-buffer", buffer,
        "replay buffer capacity in transitions (per rank; per agent "
        "when not shared)");
  b.add("dqn-batch", batch, "transitions per gradient step (per rank)");
  b.add("dqn-warmup", warmup, "transitions in the buffer before learning starts");
  b.add("dqn-updates", updates, "gradient steps per iteration");
  b.add("dqn-target-every", target_every, "gradient steps between target-network copies");
  b.add("dqn-eps-start", eps_start, "ε of ε-greedy exploration at the start");
  b.add("dqn-eps-end", eps_end, "ε after the decay");
  b.add("dqn-eps-decay", eps_decay, "decision steps (act calls while training) of linear ε decay");
  b.add("dqn-eps-eval", eps_eval, "ε when evaluating a stochastic (non --deterministic) policy");
  b.add("dqn-double", double_dqn, "double DQN targets (online net picks, target net values)");
  b.add("dqn-share", share, "one Q-network shared by all agents (with agent-id input)");
  b.add("dqn-huber-delta", huber_delta, "Huber loss δ of the TD error");
  b.add("dqn-max-grad-norm", max_grad_norm, "global gradient norm clip");
  b.add("dqn-team-reward", team_reward, "β in reward = (1-β)·own + β·mean over agents");
  b.add("dqn-rollout-steps", rollout_steps, "environment steps per iteration");
}

void DqnConfig::validate() const {
  require_learning_rate(lr, "dqn-lr");
  MARLSCHED_REQUIRE(gamma >= 0 && gamma < 1, "--dqn-gamma must be in [0, 1), got " << gamma);
  MARLSCHED_REQUIRE(!hidden.empty(), "--dqn-hidden needs at least one layer");
  for (int h : hidden) MARLSCHED_REQUIRE(h > 0, "--dqn-hidden sizes must be positive");
  MARLSCHED_REQUIRE(batch >= 1, "--dqn-batch must be >= 1, got " << batch);
  MARLSCHED_REQUIRE(buffer >= batch, "--dqn-buffer (" << buffer
                                                      << ") must hold at least one "
                                                         "batch ("
                                                      << batch << ")");
  MARLSCHED_REQUIRE(warmup >= batch && warmup <= buffer,
                    "--dqn-warmup must be between --dqn-batch and --dqn-buffer, got " << warmup);
  MARLSCHED_REQUIRE(updates >= 0, "--dqn-updates must be >= 0");
  MARLSCHED_REQUIRE(target_every >= 1, "--dqn-target-every must be >= 1");
  for (double v : {eps_start, eps_end, eps_eval})
    MARLSCHED_REQUIRE(v >= 0 && v <= 1, "ε values (--dqn-eps-*) must be in [0, 1], got " << v);
  MARLSCHED_REQUIRE(eps_decay >= 1, "--dqn-eps-decay must be >= 1");
  require_positive(huber_delta, "dqn-huber-delta");
  require_positive(max_grad_norm, "dqn-max-grad-norm");
  MARLSCHED_REQUIRE(team_reward >= 0 && team_reward <= 1, "--dqn-team-reward must be in [0, 1]");
  MARLSCHED_REQUIRE(rollout_steps >= 1, "--dqn-rollout-steps must be >= 1");
}

namespace {}  // namespace

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
  std::vector<float> last_x, last_logp, last_value;
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
      replay.back().init(cfg.buffer, in);
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

  void inputs_of(const std::vector<GlobalObs>& global, std::vector<float>& x) const {
    x.assign(static_cast<std::size_t>(e * k * in), 0.f);
    for (int c = 0; c < e; ++c)
      for (int kk = 0; kk < k; ++kk)
        nn::agent_input(global[static_cast<std::size_t>(c)], pub, first + kk,
                        x.data() + static_cast<std::ptrdiff_t>(c * k + kk) * in);
  }
};

Dqn::Dqn(const DqnConfig& cfg, const EnvSpec& spec, const dist::Comm& comm, int num_agents,
         int first_agent, int local_agents, int copies, std::uint64_t seed)
    : impl_(std::make_unique<Impl>(cfg, spec, comm, num_agents, first_agent, local_agents, copies,
                                   seed)) {}

Dqn::~Dqn() = default;

void Dqn::set_training(bool t) {
  impl_->training = t;
}
void Dqn::set_deterministic(bool d) {
  impl_->deterministic = d;
}
double Dqn::epsilon() const {
  return impl_->epsilon();
}
std::int64_t Dqn::replay_size() const {
  std::int64_t s = 0;
  for (const auto& r : impl_->replay) s += r.size;
  return s;
}

void Dqn::act(const PolicyInput& pin, std::vector<int>& actions) {
  auto& m = *impl_;
  MARLSCHED_CHECK(pin.copies == m.e && pin.local_agents == m.k && pin.num_agents == m.n,
                  "DQN was built for a different layout");
  const int rows = m.e * m.k;
  m.inputs_of(pin.global, m.last_x);
  if (m.training) m.finish_pending(m.last_x);
  const auto q = m.q_of(m.last_x, rows);
  const double eps = m.training ? m.epsilon() : (m.deterministic ? 0.0 : m.cfg.eps_eval);
  actions.resize(static_cast<std::size_t>(rows));
  m.last_act.resize(static_cast<std::size_t>(rows));
  m.last_logp.resize(static_cast<std::size_t>(rows));
  m.last_value.resize(static_cast<std::size_t>(rows));
  for (int r = 0; r < rows; ++r) {
    const float* row = q.data() + static_cast<std::ptrdiff_t>(r) * m.na;
    int greedy = 0;
    for (int j = 1; j < m.na; ++j)
      if (row[j] > row[greedy]) greedy = j;
    int a = greedy;
    if (m.training) {
      if (eps > 0 && m.explore_rng.uniform() < eps)
        a = static_cast<int>(m.explore_rng.below(static_cast<std::uint64_t>(m.na)));
    } else if (eps > 0) {  // evaluation: the episode's draws, the same at every rank count
      const int c = r / m.k, agent = pin.first_agent + r % m.k;
      if (pin.draw(c, agent, kExploreStream + m.cfg.draw_stream) < eps)
        a = pin.draw_below(c, agent, kActionStream + m.cfg.draw_stream, m.na);
    }
    const double p = (a == greedy ? 1.0 - eps : 0.0) + eps / m.na;
    actions[static_cast<std::size_t>(r)] = a;
    m.last_act[static_cast<std::size_t>(r)] = a;
    m.last_logp[static_cast<std::size_t>(r)] = static_cast<float>(std::log(p));
    m.last_value[static_cast<std::size_t>(r)] = row[greedy];
  }
  if (m.training) m.env_steps += 1;
}

const std::vector<float>& Dqn::last_log_probs() const {
  return impl_->last_logp;
}
const std::vector<float>& Dqn::last_values() const {
  return impl_->last_value;
}

void Dqn::record(const StepFeedback& fb) {
  auto& m = *impl_;
  MARLSCHED_CHECK(m.training, "record() outside training mode");
  const int rows = m.e * m.k;
  MARLSCHED_CHECK(static_cast<int>(fb.reward.size()) == rows, "feedback has wrong size");
  std::vector<float> x2(static_cast<std::size_t>(m.in));
  for (int r = 0; r < rows; ++r) {
    const auto ru = static_cast<std::size_t>(r);
    const int c = r / m.k;
    const float* x = m.last_x.data() + ru * static_cast<std::size_t>(m.in);
    if (fb.done[static_cast<std::size_t>(c)]) {
      // The episode ended: the next state is the terminal observation, known now.
      nn::agent_input(fb.terminal[static_cast<std::size_t>(c)], m.pub, m.first + r % m.k,
                      x2.data());
      const bool terminated = !fb.truncated[static_cast<std::size_t>(c)];
      m.replay[static_cast<std::size_t>(m.net_of(r))].push(x, m.last_act[ru], fb.reward[ru],
                                                           terminated, x2.data());
    } else {
      std::copy(x, x + m.in, m.pend_x.begin() + static_cast<std::ptrdiff_t>(ru) * m.in);
      m.pend_a[ru] = m.last_act[ru];
      m.pend_r[ru] = fb.reward[ru];
      m.pending[ru] = 1;
    }
  }
}

UpdateStats Dqn::update(const PolicyInput& last) {
  auto& m = *impl_;
  UpdateStats st;
  std::vector<float> x_last;
  m.inputs_of(last.global, x_last);
  m.finish_pending(x_last);
  // td_loss, q_mean, grad_norm summed over gradient steps and networks
  double s[3] = {0, 0, 0};
  int steps = 0;
  const int B = m.cfg.batch;
  std::vector<float> bx(static_cast<std::size_t>(B * m.in)), bx2(bx.size()),
      br(static_cast<std::size_t>(B)), bt(br.size());
  std::vector<std::int64_t> ba(static_cast<std::size_t>(B));
  const bool ready = m.replay[0].size >= m.cfg.warmup;  // same on every rank (lockstep)
  for (int u = 0; ready && u < m.cfg.updates; ++u) {
    for (std::size_t i = 0; i < m.online.size(); ++i) {
      const rollout::Replay& rb = m.replay[i];
      for (int b = 0; b < B; ++b) {
        const auto j =
            static_cast<std::size_t>(m.sample_rng.below(static_cast<std::uint64_t>(rb.size)));
        const auto src = j * static_cast<std::size_t>(m.in);
        std::copy(
            rb.obs.begin() + static_cast<std::ptrdiff_t>(src),
            rb.obs.begin() + static_cast<std::ptrdiff_t>(src + static_cast<std::size_t>(m.in)),
            bx.begin() + static_cast<std::ptrdiff_t>(b) * m.in);
        std::copy(
            rb.next_obs.begin() + static_cast<std::ptrdiff_t>(src),
            rb.next_obs.begin() + static_cast<std::ptrdiff_t>(src + static_cast<std::size_t>(m.in)),
            bx2.begin() + static_cast<std::ptrdiff_t>(b) * m.in);
        ba[static_cast<std::size_t>(b)] = rb.actions[j];
        br[static_cast<std::size_t>(b)] = rb.rewards[j];
        bt[static_cast<std::size_t>(b)] = rb.term[j];
      }
      const double t0 = now();
      auto& net = m.online[i];
      auto X = nn::blob(bx, B, m.in, m.dev), X2 = nn::blob(bx2, B, m.in, m.dev);
      auto A = torch::from_blob(ba.data(), {B, 1}, torch::kInt64).to(m.dev);
      auto R = torch::from_blob(br.data(), {B}, torch::kFloat32).to(m.dev);
      auto T = torch::from_blob(bt.data(), {B}, torch::kFloat32).to(m.dev);
      torch::Tensor y;
      {
        torch::NoGradGuard g;
        auto q2t = m.target[i]->forward(X2);
        torch::Tensor next;
        if (m.cfg.double_dqn)
          next = q2t.gather(1, net->forward(X2).argmax(1, true)).squeeze(1);
        else
          next = std::get<0>(q2t.max(1));
        y = R + m.cfg.gamma * (1.0f - T) * next;
      }
      auto q = net->forward(X).gather(1, A).squeeze(1);
      auto loss = torch::nn::functional::huber_loss(
          q, y, torch::nn::functional::HuberLossFuncOptions().delta(m.cfg.huber_delta));
      m.grads[i].zero();
      if (m.cfg.share)
        m.grads[i].backward(loss, m.comm);
      else
        loss.backward();
      const double t1 = now();
      if (m.cfg.share) m.grads[i].average(m.comm);
      const double t2 = now();
      s[2] += torch::nn::utils::clip_grad_norm_(net->parameters(), m.cfg.max_grad_norm);
      m.opt[i]->step();
      const double t3 = now();
      st.time_forward_backward += (t1 - t0) + (t3 - t2);
      st.time_allreduce += t2 - t1;
      s[0] += loss.item<double>();
      s[1] += q.mean().item<double>();
    }
    m.grad_steps += 1;
    ++steps;
    if (m.grad_steps % m.cfg.target_every == 0)
      for (std::size_t i = 0; i < m.online.size(); ++i) m.sync_target(static_cast<int>(i));
  }
  m.comm.allreduce_sum(s, 3);
  const double div =
      static_cast<double>(steps) * static_cast<double>(m.online.size()) * m.comm.size();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  st.stepped = steps > 0;
  st.values = {steps ? s[0] / div : nan, steps ? s[1] / div : nan, m.epsilon(),
               steps ? s[2] / div : nan, static_cast<double>(replay_size())};
  return st;
}

const std::vector<StatName>& Dqn::stat_names() const {
  static const std::vector<StatName> names = {{"td_loss", "loss/td"},
                                              {"q_mean", "q/mean"},
                                              {"epsilon", "explore/epsilon"},
                                              {"grad_norm", "grad_norm/q"},
                                              {"replay_size", "replay/size"}};
  return names;
}

void Dqn::save(const std::string& path) const {
  std::ostringstream bytes;
  save(bytes);
  write_file(path, bytes.str());
}

void Dqn::save(std::ostream& out) const {
  const auto& m = *impl_;
  nn::require_finite(nn::params_of(m.online), "the DQN model");
  torch::serialize::OutputArchive ar;
  ar.write("meta", torch::tensor({static_cast<std::int64_t>(m.n), static_cast<std::int64_t>(m.k),
                                  static_cast<std::int64_t>(m.in), static_cast<std::int64_t>(m.na),
                                  static_cast<std::int64_t>(m.cfg.share)}));
  ar.write("counters", torch::tensor({m.env_steps, m.grad_steps}));
  for (std::size_t i = 0; i < m.online.size(); ++i) {
    const std::string id = std::to_string(i);
    torch::serialize::OutputArchive q, t, o;
    m.online[i]->save(q);
    ar.write("q" + id, q);
    m.target[i]->save(t);
    ar.write("target" + id, t);
    m.opt[i]->save(o);
    ar.write("opt" + id, o);
    const rollout::Replay& rb = m.replay[i];
    const auto rows = static_cast<std::int64_t>(rb.size);
    auto part = [&](const std::vector<float>& v, std::int64_t w) {
      return torch::from_blob(const_cast<float*>(v.data()), {rows, w}, torch::kFloat32).clone();
    };
    ar.write("replay_pos" + id, torch::tensor({static_cast<std::int64_t>(rb.size),
                                               static_cast<std::int64_t>(rb.head)}));
    ar.write("replay_x" + id, part(rb.obs, m.in));
    ar.write("replay_x2" + id, part(rb.next_obs, m.in));
    ar.write("replay_r" + id, part(rb.rewards, 1));
    ar.write("replay_term" + id, part(rb.term, 1));
    ar.write("replay_a" + id,
             torch::from_blob(const_cast<std::int64_t*>(rb.actions.data()), {rows}, torch::kInt64)
                 .clone());
  }
  // No transition is waiting for its next state here (update() completed them), but the last
  // act() is kept: a learner that records less often than it acts (tsdqn's long head) may save
  // between an act() and its record().
  ar.write("last_x", torch::from_blob(const_cast<float*>(m.last_x.data()),
                                      {static_cast<std::int64_t>(m.last_x.size())}, torch::kFloat32)
                         .clone());
  ar.write("last_act",
           torch::from_blob(const_cast<std::int64_t*>(m.last_act.data()),
                            {static_cast<std::int64_t>(m.last_act.size())}, torch::kInt64)
               .clone());
  ar.write("rng", nn::string_tensor(write_states({&m.explore_rng, &m.sample_rng})));
  ar.save_to(out);
}

void Dqn::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  MARLSCHED_REQUIRE_INPUT(static_cast<bool>(in), "cannot read model '" << path << "'");
  verify_archive(path, "model");
  load(in, path);
}

void Dqn::load(std::istream& in, const std::string& path) {
  try {
    load_impl(in, path);
  } catch (const c10::Error&) {
    MARLSCHED_THROW(InputError,
                    "cannot read model '" << path << "': corrupted or not a marlsched DQN model");
  }
}

void Dqn::load_impl(std::istream& in, const std::string& path) {
  auto& m = *impl_;
  torch::serialize::InputArchive ar;
  torch::Tensor meta;
  try {
    ar.load_from(in, m.dev);  // networks and optimiser state straight onto the device
    ar.read("meta", meta);
    meta = nn::host(meta);
  } catch (const c10::Error&) {
    MARLSCHED_THROW(InputError, "cannot read model '" << path << "': not a marlsched model file");
  }
  const std::vector<std::int64_t> want = {m.n, m.k, m.in, m.na, m.cfg.share ? 1 : 0};
  MARLSCHED_REQUIRE(
      meta.numel() == 5 && std::equal(want.begin(), want.end(), meta.data_ptr<std::int64_t>()),
      "model '" << path
                << "' was trained with a different layout (agents, agents per "
                   "rank, observation or action space, or network sharing), or "
                   "by another algorithm");
  torch::Tensor cnt;
  ar.read("counters", cnt);
  m.env_steps = cnt[0].item<std::int64_t>();
  m.grad_steps = cnt[1].item<std::int64_t>();
  for (std::size_t i = 0; i < m.online.size(); ++i) {
    const std::string id = std::to_string(i);
    torch::serialize::InputArchive q, t, o;
    ar.read("q" + id, q);
    m.online[i]->load(q);
    ar.read("target" + id, t);
    m.target[i]->load(t);
    ar.read("opt" + id, o);
    m.opt[i]->load(o);
    torch::Tensor pos, x, x2, r, term, a;
    ar.read("replay_pos" + id, pos);
    ar.read("replay_x" + id, x);
    ar.read("replay_x2" + id, x2);
    ar.read("replay_r" + id, r);
    ar.read("replay_term" + id, term);
    ar.read("replay_a" + id, a);
    for (auto* t : {&pos, &x, &x2, &r, &term, &a}) *t = nn::host(*t);
    rollout::Replay& rb = m.replay[i];
    const auto size = pos[0].item<std::int64_t>(), head = pos[1].item<std::int64_t>();
    MARLSCHED_REQUIRE(size >= 0 && size <= rb.cap && head >= 0 && head < rb.cap &&
                          x.numel() == size * m.in && x2.numel() == size * m.in &&
                          r.numel() == size && term.numel() == size && a.numel() == size,
                      "model '" << path << "': replay buffer does not fit --dqn-buffer " << rb.cap);
    rb.size = static_cast<int>(size);
    rb.head = static_cast<int>(head);
    std::copy(x.data_ptr<float>(), x.data_ptr<float>() + x.numel(), rb.obs.begin());
    std::copy(x2.data_ptr<float>(), x2.data_ptr<float>() + x2.numel(), rb.next_obs.begin());
    std::copy(r.data_ptr<float>(), r.data_ptr<float>() + size, rb.rewards.begin());
    std::copy(term.data_ptr<float>(), term.data_ptr<float>() + size, rb.term.begin());
    std::copy(a.data_ptr<std::int64_t>(), a.data_ptr<std::int64_t>() + size, rb.actions.begin());
  }
  std::fill(m.pending.begin(), m.pending.end(), 0);
  torch::Tensor lx, la;
  ar.read("last_x", lx);
  ar.read("last_act", la);
  lx = nn::host(lx);
  la = nn::host(la);
  // The last act() only matters to a run resumed with the same layout; a model loaded with
  // another number of env copies (export, evaluation) starts without one.
  if (lx.numel() == static_cast<std::int64_t>(m.e * m.k * m.in) && la.numel() == m.e * m.k) {
    m.last_x.assign(lx.data_ptr<float>(), lx.data_ptr<float>() + lx.numel());
    m.last_act.assign(la.data_ptr<std::int64_t>(), la.data_ptr<std::int64_t>() + la.numel());
  } else {
    m.last_x.clear();
    m.last_act.clear();
  }
  torch::Tensor rt;
  ar.read("rng", rt);
  MARLSCHED_REQUIRE(read_states(nn::tensor_string(rt), {&m.explore_rng, &m.sample_rng}),
                    "model '" << path << "': bad RNG state");
}

bool Dqn::shared_parameters_identical() const {
  if (!impl_->cfg.share) return true;
  return dist::parameters_identical(impl_->online[0]->parameters(), impl_->comm);
}

std::uint64_t Dqn::shared_parameter_digest() const {
  if (!impl_->cfg.share) return 0;
  return dist::parameter_digest(impl_->online[0]->parameters());
}

std::vector<float> Dqn::q_values(const GlobalObs& g, int local_agent) const {
  const auto& m = *impl_;
  std::vector<float> x(static_cast<std::size_t>(m.in));
  nn::agent_input(g, m.pub, m.first + local_agent, x.data());
  torch::NoGradGuard guard;
  auto q = m.online[static_cast<std::size_t>(m.net_of(local_agent))].ptr()->forward(
      nn::blob(x, 1, m.in, m.dev));
  q = nn::host(q);
  return std::vector<float>(q.data_ptr<float>(), q.data_ptr<float>() + m.na);
}

void Dqn::export_torchscript(const std::vector<const Dqn*>& ranks, const std::string& path,
                             const std::string& metadata) {
  MARLSCHED_CHECK(!ranks.empty(), "no learner to export");
  const Impl& m0 = *ranks.front()->impl_;
  auto mod = nn::policy_module(m0.n, m0.d, m0.pub, m0.na, metadata);
  std::ostringstream src;
  src << nn::script_agent_input() << R"(
def qvalues(self, obs: Tensor, agent: int) -> Tensor:
    assert agent >= 0 and agent < self.num_agents, "agent index out of range"
    x = self.actor_input(obs, agent)
)";
  if (m0.cfg.share) {
    src << nn::script_mlp(mod, "q", m0.online[0], "    ") << "    return out\n";
  } else {
    std::vector<const nn::Mlp*> nets;
    for (const Dqn* r : ranks)
      for (const auto& net : r->impl_->online) nets.push_back(&net);
    MARLSCHED_CHECK(static_cast<int>(nets.size()) == m0.n,
                    "exported " << nets.size() << " networks for " << m0.n << " agents");
    src << nn::script_per_agent(mod, "q", nets);
  }
  src << R"(
def q(self, obs: Tensor, agent: int) -> Tensor:
    single = obs.dim() == 2
    x = obs.unsqueeze(0) if single else obs
    v = self.qvalues(x, agent)
    return v[0] if single else v

)" << nn::script_greedy_policy("qvalues");
  nn::save_module(mod, src.str(), path);
}

}  // namespace marlsched
