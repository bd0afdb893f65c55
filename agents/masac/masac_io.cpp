#include "agents/masac/masac.hpp"

#include "agents/masac/masac_impl.hpp"

namespace marlsched {

const std::vector<StatName>& Masac::stat_names() const {
  static const std::vector<StatName> names = {
      {"critic_loss", "loss/critic"}, {"actor_loss", "loss/actor"}, {"alpha", "sac/alpha"},
      {"entropy", "policy/entropy"},  {"q_mean", "q/mean"},         {"replay_size", "replay/size"}};
  return names;
}

void Masac::save(const std::string& path) const {
  const auto& m = *impl_;
  ModelWriter ar;
  ar.tensor("meta",
            torch::tensor({static_cast<std::int64_t>(m.ddpg ? 0xDD6 : 0x5AC),
                           static_cast<std::int64_t>(m.n), static_cast<std::int64_t>(m.k),
                           static_cast<std::int64_t>(m.in), static_cast<std::int64_t>(m.na)}));
  ar.tensor("counters", torch::tensor({m.grad_steps}));
  const std::pair<const char*, const nn::Mlp*> nets[] = {
      {"actor", &m.actor}, {"q1", &m.q1}, {"q2", &m.q2},
      {"t1", &m.t1},       {"t2", &m.t2}, {"target_actor", &m.ta}};
  for (const auto& [name, net] : nets) {
    nn::require_finite((*net)->parameters(), "model '" + path + "' (" + name + ")");
    ar.module(name, **net);
  }
  ar.tensor("log_alpha", m.log_alpha.detach());
  ar.optimizer("opt_actor", *m.opt_actor);
  ar.optimizer("opt_critic", *m.opt_critic);
  ar.optimizer("opt_alpha", *m.opt_alpha);
  const rollout::Replay& rb = m.replay;
  ar.tensor("replay_pos", torch::tensor({static_cast<std::int64_t>(rb.size),
                                         static_cast<std::int64_t>(rb.head)}));
  ar.values("replay_s", rb.obs);
  ar.values("replay_s2", rb.next_obs);
  ar.values("replay_r", rb.rewards);
  ar.values("replay_term", rb.term);
  ar.values("replay_a", rb.actions);
  // update() completed every waiting transition; the last act() is kept for a save between an
  // act() and its record().
  ar.values("last_g", m.last_g);
  ar.values("last_joint", m.last_joint);
  ar.rngs("rng", {&m.explore_rng, &m.sample_rng});
  ar.save(path);
}

void Masac::load(const std::string& path) {
  auto& m = *impl_;
  ModelReader ar(path, m.ddpg ? "MADDPG" : "MASAC", m.dev);
  ar.require_layout("meta", {m.ddpg ? 0xDD6 : 0x5AC, m.n, m.k, m.in, m.na},
                    std::string("is not a ") + (m.ddpg ? "MADDPG" : "MASAC") +
                        " model of this layout (agents, agents per rank, observation or action "
                        "space)");
  m.grad_steps = ar.tensor("counters", 1)[0].item<std::int64_t>();
  const std::pair<const char*, nn::Mlp*> nets[] = {{"actor", &m.actor}, {"q1", &m.q1},
                                                   {"q2", &m.q2},       {"t1", &m.t1},
                                                   {"t2", &m.t2},       {"target_actor", &m.ta}};
  for (const auto& [name, net] : nets) ar.module(name, **net);
  const auto la = ar.tensor("log_alpha", m.log_alpha.numel());
  {
    torch::NoGradGuard g;
    m.log_alpha.copy_(la);
  }
  ar.optimizer("opt_actor", *m.opt_actor);
  ar.optimizer("opt_critic", *m.opt_critic);
  ar.optimizer("opt_alpha", *m.opt_alpha);
  const auto pos = ar.tensor("replay_pos", 2);
  rollout::Replay& rb = m.replay;
  const auto size = pos[0].item<std::int64_t>(), head = pos[1].item<std::int64_t>();
  MARLSCHED_REQUIRE(size >= 0 && size <= rb.cap && head >= 0 && head < rb.cap,
                    "model '" << path << "': replay buffer does not fit --sac-buffer " << rb.cap);
  ar.values("replay_s", rb.obs, "replay buffer");
  ar.values("replay_s2", rb.next_obs, "replay buffer");
  ar.values("replay_r", rb.rewards, "replay buffer");
  ar.values("replay_term", rb.term, "replay buffer");
  ar.values("replay_a", rb.actions, "replay buffer");
  rb.size = static_cast<int>(size);
  rb.head = static_cast<int>(head);
  std::fill(m.pending.begin(), m.pending.end(), 0);
  const auto lg = ar.tensor("last_g"), lj = ar.tensor("last_joint");
  // Only a run resumed with the same layout continues from the last act().
  if (lg.numel() == static_cast<std::int64_t>(m.e) * m.gw && lj.numel() == m.e * m.n &&
      lg.scalar_type() == torch::kFloat32 && lj.scalar_type() == torch::kInt64) {
    m.last_g.assign(lg.data_ptr<float>(), lg.data_ptr<float>() + lg.numel());
    m.last_joint.assign(lj.data_ptr<std::int64_t>(), lj.data_ptr<std::int64_t>() + lj.numel());
  } else {
    m.last_g.clear();
    m.last_joint.clear();
  }
  ar.rngs("rng", {&m.explore_rng, &m.sample_rng});
}

}  // namespace marlsched
