#include "agents/masac/masac.hpp"

#include "agents/masac/masac_impl.hpp"

namespace marlsched {

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

}  // namespace marlsched
