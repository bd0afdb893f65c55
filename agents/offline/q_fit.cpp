#include "agents/offline/q_fit.hpp"

#include <limits>

#include "agents/dqn/dqn_impl.hpp"
#include "core/error.hpp"
#include "io/dataset.hpp"
#include "rollout/minibatch.hpp"

namespace marlsched {

QFit::QFit(Dqn& nets) : m_(nets.parts()) {
  MARLSCHED_CHECK(m_.cfg.offline, "QFit needs an offline DQN");
}

void QFit::use_dataset(const LocalDataset& data, bool team_targets) {
  auto& m = m_;
  MARLSCHED_CHECK(data.num_agents == m.n && data.first_agent == m.first &&
                      data.local_agents == m.k && data.obs_dim == m.spec.obs_dim(),
                  "the dataset was read for another layout");
  const std::int64_t per_net = m.cfg.share ? data.transitions() : data.rows;
  MARLSCHED_REQUIRE_INPUT(per_net <= std::numeric_limits<int>::max(),
                          "the dataset holds " << per_net
                                               << " transitions per Q-network on this rank, "
                                                  "more than one replay buffer can hold; use "
                                                  "more ranks");
  for (auto& rb : m.replay) rb.init(static_cast<int>(per_net), m.in);
  const double beta = m.cfg.team_reward;
  std::vector<float> x(static_cast<std::size_t>(m.in)), x2(x.size());
  for (std::int64_t r = 0; r < data.rows; ++r) {
    const auto ru = static_cast<std::size_t>(r);
    const bool terminated = data.terminations[ru] != 0;
    for (int kk = 0; kk < m.k; ++kk) {
      const auto i = static_cast<std::size_t>(r * m.k + kk);
      nn::agent_input(data.global(r), m.pub, m.first + kk, x.data());
      nn::agent_input(data.global(r, true), m.pub, m.first + kk, x2.data());
      const double reward = data.reward(r, kk, beta, team_targets ? &m.spec : nullptr);
      m.replay[static_cast<std::size_t>(m.net_of(kk))].push(
          x.data(), data.actions[i], static_cast<float>(reward), terminated, x2.data());
    }
  }
}

UpdateStats QFit::update(int epochs, int minibatch) {
  auto& m = m_;
  const int size = m.replay[0].size;  // every buffer, on every rank, holds as many
  MARLSCHED_REQUIRE_INPUT(size >= minibatch, "the dataset holds "
                                                 << size
                                                 << " transitions per Q-network and rank, fewer "
                                                    "than one minibatch ("
                                                 << minibatch << ")");
  UpdateStats st;
  double s[4] = {0, 0, 0, 0};  // td_loss, q_mean, grad_norm, cql_gap
  int steps = 0;
  const int batches = size / minibatch;
  std::vector<std::vector<std::int64_t>> perm(m.online.size());
  for (int ep = 0; ep < epochs; ++ep) {
    for (auto& p : perm) shuffle_units(size, 1, m.sample_rng, p);
    for (int b = 0; b < batches; ++b) {
      for (std::size_t i = 0; i < m.online.size(); ++i) {
        m.gather(i, perm[i].data() + static_cast<std::ptrdiff_t>(b) * minibatch, minibatch);
        m.step(i, minibatch, s, st);
      }
      m.count_step();
      ++steps;
    }
  }
  m.comm.allreduce_sum(s, 4);
  const double div = static_cast<double>(std::max(1, steps)) *
                     static_cast<double>(m.online.size()) * m.comm.size();
  st.stepped = steps > 0;
  st.values = {s[0] / div, s[3] / div, s[1] / div, s[2] / div};
  return st;
}

}  // namespace marlsched
