#include "agents/dqn/dqn.hpp"

#include <fstream>
#include <limits>
#include <sstream>

#include "agents/dqn/dqn_impl.hpp"
#include "agents/model_archive.hpp"
#include "core/error.hpp"
#include "core/file.hpp"

namespace marlsched {

void DqnConfig::bind(OptionBinder& b) {
  b.group("Agent: DQN");
  b.add("dqn-lr", lr, "Q-network learning rate (Adam)").learning_rate();
  b.add("dqn-gamma", gamma, "discount factor").at_least(0).less_than(1);
  b.add("dqn-hidden", hidden, "Q-network hidden layer sizes").positive();
  b.add("dqn-buffer", buffer,
        "replay buffer capacity in transitions (per rank; per agent "
        "when not shared)");
  b.add("dqn-batch", batch, "transitions per gradient step (per rank)").at_least(1);
  b.add("dqn-warmup", warmup, "transitions in the buffer before learning starts");
  b.add("dqn-updates", updates, "gradient steps per iteration").at_least(0);
  b.add("dqn-target-every", target_every, "gradient steps between target-network copies")
      .at_least(1);
  b.add("dqn-eps-start", eps_start, "ε of ε-greedy exploration at the start").in(0, 1);
  b.add("dqn-eps-end", eps_end, "ε after the decay").in(0, 1);
  b.add("dqn-eps-decay", eps_decay, "decision steps (act calls while training) of linear ε decay")
      .at_least(1);
  b.add("dqn-eps-eval", eps_eval, "ε when evaluating a stochastic (non --deterministic) policy")
      .in(0, 1);
  b.add("dqn-double", double_dqn, "double DQN targets (online net picks, target net values)");
  b.add("dqn-share", share, "one Q-network shared by all agents (with agent-id input)");
  b.add("dqn-huber-delta", huber_delta, "Huber loss δ of the TD error").positive();
  b.add("dqn-max-grad-norm", max_grad_norm, "global gradient norm clip").positive();
  b.add("dqn-team-reward", team_reward,
        "β in reward = (1-β)·own + β·team (every agent, or --team-scope targets)")
      .in(0, 1);
  b.add("dqn-rollout-steps", rollout_steps, "environment steps per iteration").at_least(1);
}

void DqnConfig::validate() const {
  check_declared(*this);
  MARLSCHED_REQUIRE(!hidden.empty(), "--dqn-hidden needs at least one layer");
  MARLSCHED_REQUIRE(buffer >= batch, "--dqn-buffer (" << buffer
                                                      << ") must hold at least one "
                                                         "batch ("
                                                      << batch << ")");
  MARLSCHED_REQUIRE(warmup >= batch && warmup <= buffer,
                    "--dqn-warmup must be between --dqn-batch and --dqn-buffer, got " << warmup);
}

Dqn::Dqn(const DqnConfig& cfg, const LearnerLayout& l)
    : impl_(std::make_unique<Impl>(cfg, *l.spec, *l.comm, l.num_agents, l.first_agent,
                                   l.local_agents, l.copies, l.seed)) {}

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

Decisions Dqn::act(const PolicyInput& pin) {
  auto& m = *impl_;
  Decisions out;
  std::vector<int>& actions = out.actions;
  MARLSCHED_CHECK(pin.copies == m.e && pin.local_agents == m.k && pin.num_agents == m.n,
                  "DQN was built for a different layout");
  const int rows = m.e * m.k;
  m.inputs_of(pin.global, m.last_x);
  if (m.training) m.finish_pending(m.last_x);
  const auto q = m.q_of(m.last_x, rows);
  const double eps = m.training ? m.epsilon() : (m.deterministic ? 0.0 : m.cfg.eps_eval);
  actions.resize(static_cast<std::size_t>(rows));
  m.last_act.resize(static_cast<std::size_t>(rows));
  out.log_probs.resize(static_cast<std::size_t>(rows));
  out.values.resize(static_cast<std::size_t>(rows));
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
    out.log_probs[static_cast<std::size_t>(r)] = static_cast<float>(std::log(p));
    out.values[static_cast<std::size_t>(r)] = row[greedy];
  }
  if (m.training) m.env_steps += 1;
  return out;
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
  MARLSCHED_CHECK(!m.cfg.offline, "an offline DQN learns through QFit (agents/offline/q_fit.hpp)");
  UpdateStats st;
  std::vector<float> x_last;
  m.inputs_of(last.global, x_last);
  m.finish_pending(x_last);
  // td_loss, q_mean, grad_norm (and the unused CQL gap) summed over gradient steps and networks
  double s[4] = {0, 0, 0, 0};
  int steps = 0;
  const int B = m.cfg.batch;
  std::vector<std::int64_t> idx(static_cast<std::size_t>(B));
  const bool ready = m.replay[0].size >= m.cfg.warmup;  // same on every rank (lockstep)
  for (int u = 0; ready && u < m.cfg.updates; ++u) {
    for (std::size_t i = 0; i < m.online.size(); ++i) {
      for (auto& j : idx)
        j = static_cast<std::int64_t>(
            m.sample_rng.below(static_cast<std::uint64_t>(m.replay[i].size)));
      m.gather(i, idx.data(), B);
      m.step(i, B, s, st);
    }
    m.count_step();
    ++steps;
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
  ModelWriter ar;
  ar.tensor("meta", torch::tensor({static_cast<std::int64_t>(m.n), static_cast<std::int64_t>(m.k),
                                   static_cast<std::int64_t>(m.in), static_cast<std::int64_t>(m.na),
                                   static_cast<std::int64_t>(m.cfg.share)}));
  ar.tensor("counters", torch::tensor({m.env_steps, m.grad_steps}));
  for (std::size_t i = 0; i < m.online.size(); ++i) {
    const std::string id = std::to_string(i);
    ar.module("q" + id, *m.online[i]);
    ar.module("target" + id, *m.target[i]);
    ar.optimizer("opt" + id, *m.opt[i]);
    // An offline learner's buffer holds its dataset, which it reads again when resumed.
    const rollout::Replay& rb = m.replay[i];
    const auto rows = m.cfg.offline ? std::int64_t{0} : static_cast<std::int64_t>(rb.size);
    auto part = [&](const std::vector<float>& v, std::int64_t w) {
      return torch::from_blob(const_cast<float*>(v.data()), {rows, w}, torch::kFloat32).clone();
    };
    ar.tensor("replay_pos" + id,
              torch::tensor(
                  {rows, m.cfg.offline ? std::int64_t{0} : static_cast<std::int64_t>(rb.head)}));
    ar.tensor("replay_x" + id, part(rb.obs, m.in));
    ar.tensor("replay_x2" + id, part(rb.next_obs, m.in));
    ar.tensor("replay_r" + id, part(rb.rewards, 1));
    ar.tensor("replay_term" + id, part(rb.term, 1));
    ar.tensor("replay_a" + id,
              torch::from_blob(const_cast<std::int64_t*>(rb.actions.data()), {rows}, torch::kInt64)
                  .clone());
  }
  // No transition is waiting for its next state here (update() completed them), but the last
  // act() is kept: a learner that records less often than it acts (tsdqn's long head) may save
  // between an act() and its record().
  ar.values("last_x", m.last_x);
  ar.values("last_act", m.last_act);
  ar.rngs("rng", {&m.explore_rng, &m.sample_rng});
  ar.save(out);
}

void Dqn::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  MARLSCHED_REQUIRE_INPUT(static_cast<bool>(in), "cannot read model '" << path << "'");
  verify_archive(path, "model");
  load(in, path);
}

void Dqn::load(std::istream& in, const std::string& path) {
  auto& m = *impl_;
  ModelReader ar(in, path, "DQN", m.dev);  // networks and optimiser state onto the device
  ar.require_layout("meta", {m.n, m.k, m.in, m.na, m.cfg.share ? 1 : 0},
                    "was trained with a different layout (agents, agents per rank, observation "
                    "or action space, or network sharing), or by another algorithm");
  const auto cnt = ar.tensor("counters", 2);
  m.env_steps = cnt[0].item<std::int64_t>();
  m.grad_steps = cnt[1].item<std::int64_t>();
  for (std::size_t i = 0; i < m.online.size(); ++i) {
    const std::string id = std::to_string(i);
    ar.module("q" + id, *m.online[i]);
    ar.module("target" + id, *m.target[i]);
    ar.optimizer("opt" + id, *m.opt[i]);
    const auto pos = ar.tensor("replay_pos" + id, 2);
    const auto x = ar.tensor("replay_x" + id), x2 = ar.tensor("replay_x2" + id),
               r = ar.tensor("replay_r" + id), term = ar.tensor("replay_term" + id),
               a = ar.tensor("replay_a" + id);
    rollout::Replay& rb = m.replay[i];
    if (m.cfg.offline) continue;  // its buffer holds the dataset (save() writes none)
    const auto size = pos[0].item<std::int64_t>(), head = pos[1].item<std::int64_t>();
    MARLSCHED_REQUIRE(
        size >= 0 && size <= rb.cap && head >= 0 && head < rb.cap && x.numel() == size * m.in &&
            x2.numel() == size * m.in && r.numel() == size && term.numel() == size &&
            a.numel() == size && x.scalar_type() == torch::kFloat32 &&
            x2.scalar_type() == torch::kFloat32 && r.scalar_type() == torch::kFloat32 &&
            term.scalar_type() == torch::kFloat32 && a.scalar_type() == torch::kInt64,
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
  const auto lx = ar.tensor("last_x"), la = ar.tensor("last_act");
  // The last act() only matters to a run resumed with the same layout; a model loaded with
  // another number of env copies (export, evaluation) starts without one.
  if (lx.numel() == static_cast<std::int64_t>(m.e * m.k * m.in) && la.numel() == m.e * m.k &&
      lx.scalar_type() == torch::kFloat32 && la.scalar_type() == torch::kInt64) {
    m.last_x.assign(lx.data_ptr<float>(), lx.data_ptr<float>() + lx.numel());
    m.last_act.assign(la.data_ptr<std::int64_t>(), la.data_ptr<std::int64_t>() + la.numel());
  } else {
    m.last_x.clear();
    m.last_act.clear();
  }
  ar.rngs("rng", {&m.explore_rng, &m.sample_rng});
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
