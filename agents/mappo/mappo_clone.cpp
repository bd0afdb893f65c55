/// \file mappo_clone.cpp
/// Mappo::clone: behaviour cloning of the actor on a dataset (the bc learner, agents/bc).

#include "agents/mappo/mappo_impl.hpp"
#include "io/dataset.hpp"

namespace marlsched {

UpdateStats Mappo::clone(const LocalDataset& data, int epochs, int minibatch) {
  auto& m = *impl_;
  MARLSCHED_CHECK(data.num_agents == m.n && data.first_agent == m.first &&
                      data.local_agents == m.k && data.obs_dim == m.d,
                  "the dataset was read for another layout");
  const std::int64_t rows = data.transitions();
  MARLSCHED_REQUIRE_INPUT(rows >= minibatch,
                          "the dataset holds " << rows << " transitions per rank, fewer than one "
                                               << "minibatch (--bc-minibatch " << minibatch << ")");
  if (m.clone_X.numel() == 0) {  // the actor's inputs and the logged actions, once
    std::vector<float> x(static_cast<std::size_t>(rows * m.ain)),
        c(static_cast<std::size_t>(m.cin));
    std::vector<std::int64_t> a(static_cast<std::size_t>(rows));
    for (std::int64_t r = 0; r < data.rows; ++r)
      for (int kk = 0; kk < m.k; ++kk) {
        const std::int64_t i = r * m.k + kk;
        m.build_inputs(data.global(r), kk, x.data() + i * m.ain, c.data());
        a[static_cast<std::size_t>(i)] = data.actions[static_cast<std::size_t>(i)];
      }
    m.clone_X = torch::from_blob(x.data(), {rows, m.ain}, torch::kFloat32).clone().to(m.dev);
    m.clone_A = torch::from_blob(a.data(), {rows}, torch::kInt64).clone().to(m.dev);
    m.clone_AG = m.local_agent_index(static_cast<int>(rows));
  }
  UpdateStats st;
  double s[3] = {0, 0, 0};  // bc_loss, bc_accuracy, grad_norm_actor
  const auto actor_params = params_of(m.actors);
  const int batches = static_cast<int>(rows / minibatch);
  std::vector<std::int64_t> perm;
  int updates = 0;
  for (int ep = 0; ep < epochs; ++ep) {
    shuffle_units(static_cast<int>(rows), 1, m.shuffle_rng, perm);
    for (int b = 0; b < batches; ++b) {
      const double t0 = now();
      auto idx = torch::from_blob(perm.data() + static_cast<std::ptrdiff_t>(b) * minibatch,
                                  {minibatch}, torch::kInt64)
                     .to(m.dev);
      auto logp = torch::log_softmax(
          m.logits(m.clone_X.index_select(0, idx), m.clone_AG.index_select(0, idx)), 1);
      auto act = m.clone_A.index_select(0, idx);
      auto loss = -logp.gather(1, act.unsqueeze(1)).mean();
      m.actor_grads.zero();
      if (m.cfg.share_actor)
        m.actor_grads.backward(loss, m.comm);
      else
        loss.backward();
      const double t1 = now();
      if (m.cfg.share_actor) m.actor_grads.start(m.comm);
      m.actor_grads.finish();
      const double t2 = now();
      s[2] += nn::clip_grad_norm(actor_params, m.cfg.max_grad_norm);
      nn::adam_step(*m.actor_opt);
      {
        torch::NoGradGuard g;
        s[0] += loss.item<double>();
        s[1] += logp.argmax(1).eq(act).to(torch::kFloat32).mean().item<double>();
      }
      st.time_forward_backward += (t1 - t0) + (now() - t2);
      st.time_allreduce += t2 - t1;
      ++updates;
    }
  }
  m.comm.allreduce_sum(s, 3);
  const double div = static_cast<double>(std::max(1, updates)) * m.comm.size();
  for (double v : s) st.values.push_back(v / div);
  return st;
}

}  // namespace marlsched
