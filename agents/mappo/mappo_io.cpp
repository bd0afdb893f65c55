#include "agents/mappo/mappo.hpp"

#include "agents/mappo/mappo_impl.hpp"

namespace marlsched {

namespace {
/// What differs when a model's layout record is not this run's.
constexpr const char* kLayoutMismatch =
    "was trained with a different layout (agents, agents per rank, observation or action space, "
    "actor sharing or groups, --actor, a centralized (mappo) vs decentralized (ippo) critic, or "
    "--critic-privileged), or is not a MAPPO model (mappo, ippo, bc and awr write those)";
}  // namespace

void Mappo::export_torchscript(const std::vector<const Mappo*>& ranks, const std::string& path,
                               const std::string& metadata, bool with_critic) {
  MARLSCHED_CHECK(!ranks.empty(), "no learner to export");
  const Impl& m0 = *ranks.front()->impl_;
  MARLSCHED_REQUIRE(!m0.base, "this policy departs from the baseline '"
                                  << m0.cfg.base_policy
                                  << "' (--base-policy), which a TorchScript module cannot "
                                     "carry: evaluate it with marlsched eval --model instead");
  MARLSCHED_REQUIRE(!with_critic || m0.pd == 0,
                    "the critic reads privileged fields (--critic-privileged) that a deployed "
                    "policy never sees: export the policy without --critic");
  auto mod = nn::policy_module(m0.n, m0.d, m0.pub, m0.na, metadata);

  std::ostringstream src;
  src << (m0.per_target ? nn::script_target_input(mod, m0.spec) : nn::script_agent_input())
      << nn::script_logits_head();
  const bool pt = m0.per_target;
  if (m0.cfg.share_actor && m0.group_of.empty()) {
    src << nn::script_actor(mod, "actor", m0.actors[0], "    ", pt) << "    return out\n";
  } else if (m0.cfg.share_actor) {
    // One actor per group (every rank holds them all): each agent's branch uses its group's.
    std::vector<const Mlp*> nets;
    for (int g : m0.cfg.actor_groups) nets.push_back(&m0.actors[static_cast<std::size_t>(g)]);
    src << nn::script_per_agent(mod, "actor", nets, pt);
  } else {
    // One actor per agent, gathered from the ranks that trained them.
    std::vector<const Mlp*> nets;
    for (const Mappo* r : ranks)
      for (const auto& net : r->impl_->actors) nets.push_back(&net);
    MARLSCHED_CHECK(static_cast<int>(nets.size()) == m0.n,
                    "exported " << nets.size() << " actors for " << m0.n << " agents");
    src << nn::script_per_agent(mod, "actor", nets, pt);
  }
  src << nn::script_softmax_policy();
  if (with_critic) {
    mod.register_attribute("value_mean", c10::FloatType::get(),
                           m0.cfg.value_norm ? m0.vnorm.mean : 0.0);
    mod.register_attribute("value_std", c10::FloatType::get(),
                           m0.cfg.value_norm ? m0.vnorm.std() : 1.0);
    src << R"(
def value(self, obs: Tensor, agent: int) -> Tensor:
    self.check_input(obs, agent)
    single = obs.dim() == 2
    o = obs.unsqueeze(0) if single else obs
    b = o.size(0)
)" << m0.critic_script(mod)
        << script_mlp(mod, "critic", m0.critic, "    ")
        << R"(    v = out.squeeze(-1) * self.value_std + self.value_mean
    return v[0] if single else v
)";
  }
  nn::save_module(mod, src.str(), path);
}

void Mappo::save(const std::string& path) const {
  const auto& m = *impl_;
  auto params = params_of(m.actors);
  for (auto& t : m.critic_params()) params.push_back(t);
  nn::require_finite(params, "model '" + path + "'");
  ModelWriter ar;
  ar.tensor("meta", torch::tensor(m.layout()));
  for (std::size_t i = 0; i < m.actors.size(); ++i)
    ar.module("actor" + std::to_string(i), *m.actors[i]);
  ar.module("critic", *m.critic);
  if (m.pooled) ar.module("critic_enc", *m.critic_enc);
  ar.optimizer("actor_opt", *m.actor_opt);
  ar.optimizer("critic_opt", *m.critic_opt);
  ar.tensor("vnorm", torch::tensor({m.vnorm.count, m.vnorm.mean, m.vnorm.m2}, torch::kFloat64));
  ar.rngs("rng", {&m.sample_rng, &m.shuffle_rng});
  ar.tensor("updates", torch::tensor({m.updates_done}, torch::kInt64));
  ar.tensor("critic_trained", torch::tensor({m.critic_trained ? 1 : 0}, torch::kInt64));
  ar.base(m.cfg.base_policy, m.cfg.base_margin);
  ar.save(path);
}

void Mappo::load(const std::string& path) {
  load_impl(path);
}

std::vector<std::int64_t> Mappo::layout_of(const MappoConfig& cfg, const EnvSpec& spec,
                                           int num_agents, int local_agents) {
  const bool per_target = cfg.actor == ActorKind::kTargets;
  const bool pooled = cfg.critic == CriticKind::kPooled;
  const bool local = cfg.critic == CriticKind::kLocal;
  const int d = spec.obs_dim(), n = num_agents;
  const int ain = per_target ? nn::target_input_dim(spec) : nn::agent_input_dim(spec, n);
  const int pd = cfg.critic_privileged ? spec.privileged_dim() : 0;
  const int cin = local ? ain : pooled ? (per_target ? ain : d) : (d + pd) * n + n;
  const std::int64_t actors =
      !cfg.share_actor ? 0
      : cfg.actor_groups.empty()
          ? 1
          : *std::max_element(cfg.actor_groups.begin(), cfg.actor_groups.end()) + 1;
  std::vector<std::int64_t> l = {n, local_agents, ain, cin, spec.num_actions(), actors};
  if (per_target || pooled) l.push_back(per_target ? 1 : 0);
  if (pooled) l.push_back(1);
  return l;
}

void Mappo::check_model_layout(const std::string& path, const MappoConfig& cfg, const EnvSpec& spec,
                               int num_agents, int local_agents) {
  ModelReader ar(path, "MAPPO");
  const auto l = layout_of(cfg, spec, num_agents, local_agents);
  ar.require_layout("meta", l, kLayoutMismatch);
  // The networks' sizes are not in the layout: compare the stored parameters' shapes with the
  // networks this config builds (the first actor and the critic; every actor has one shape).
  const bool per_target = cfg.actor == ActorKind::kTargets;
  const bool pooled = cfg.critic == CriticKind::kPooled;
  const int ain = static_cast<int>(l[2]), cin = static_cast<int>(l[3]);
  const std::string sizes = "--actor-hidden, --critic-hidden and --critic-embed";
  nn::KeepTorchRng keep;  // building the reference networks draws from torch's generator
  ar.require_shapes(
      "actor0",
      *nn::Mlp(per_target ? spec.obs_dim() + nn::target_row_dim(spec) : ain, cfg.actor_hidden,
               per_target ? spec.num_modes() : spec.num_actions(), 0.01),
      sizes);
  ar.require_shapes(
      "critic", *nn::Mlp(pooled ? cin + cfg.critic_embed : cin, cfg.critic_hidden, 1, 1.0), sizes);
  if (pooled)
    ar.require_shapes("critic_enc",
                      *nn::Mlp(spec.obs_dim(), std::vector<int>{cfg.critic_hidden.front()},
                               cfg.critic_embed, 1.0),
                      sizes);
}

void Mappo::init_from(const std::string& path) {
  load_impl(path, true);
}

void Mappo::load_impl(const std::string& path, bool parameters_only) {
  auto& m = *impl_;
  ModelReader ar(path, "MAPPO", m.dev);  // networks and optimiser state straight onto the device
  ar.require_layout("meta", m.layout(), kLayoutMismatch);
  if (!parameters_only)  // a warm start may add or leave a baseline; a resume or eval not
    ar.require_base("--base-policy", "--base-margin", m.cfg.base_policy, m.cfg.base_margin);
  for (std::size_t i = 0; i < m.actors.size(); ++i)
    ar.module("actor" + std::to_string(i), *m.actors[i]);
  // A warm start takes the critic (and its value normaliser) only from a learner that trained
  // one: not from bc, whose critic is its initialisation (files without the flag are MAPPO's).
  torch::Tensor trained;
  const bool critic_trained =
      !ar.try_tensor("critic_trained", trained, 1) || trained[0].item<std::int64_t>() != 0;
  if (parameters_only && !critic_trained) return;
  ar.module("critic", *m.critic);
  if (m.pooled) ar.module("critic_enc", *m.critic_enc);
  const auto vn = ar.tensor("vnorm", 3);
  m.vnorm.count = vn[0].item<double>();
  m.vnorm.mean = vn[1].item<double>();
  m.vnorm.m2 = vn[2].item<double>();
  m.critic_trained = critic_trained;
  if (parameters_only) return;
  ar.optimizer("actor_opt", *m.actor_opt);
  ar.optimizer("critic_opt", *m.critic_opt);
  ar.rngs("rng", {&m.sample_rng, &m.shuffle_rng});
  torch::Tensor updates;  // absent from models written before --imitate existed
  m.updates_done = ar.try_tensor("updates", updates, 1) ? updates[0].item<std::int64_t>() : 0;
}

const std::vector<StatName>& Mappo::stat_names() const {
  static const std::vector<StatName> names = {
      {"policy_loss", "loss/policy"},          {"value_loss", "loss/value"},
      {"entropy", "policy/entropy"},           {"approx_kl", "policy/approx_kl"},
      {"clip_frac", "policy/clip_frac"},       {"grad_norm_actor", "grad_norm/actor"},
      {"grad_norm_critic", "grad_norm/critic"}};
  return names;
}

bool Mappo::shared_parameters_identical() const {
  return dist::parameters_identical(impl_->shared_params(), impl_->comm);
}

std::uint64_t Mappo::shared_parameter_digest() const {
  return dist::parameter_digest(impl_->shared_params());
}

std::vector<float> Mappo::action_probs(const GlobalObs& g, int local_agent) const {
  const auto& m = *impl_;
  std::vector<float> xa(static_cast<std::size_t>(m.ain)), xc(static_cast<std::size_t>(m.cin));
  m.build_inputs(g, local_agent, xa.data(), xc.data());
  torch::NoGradGuard guard;
  auto X = torch::from_blob(xa.data(), {1, m.ain}, torch::kFloat32).to(m.dev);
  auto idx = torch::full({1}, local_agent, torch::TensorOptions(torch::kInt64).device(m.dev));
  auto p = nn::host(torch::softmax(m.logits(X, idx), 1));
  return std::vector<float>(p.data_ptr<float>(), p.data_ptr<float>() + m.na);
}

std::int64_t Mappo::shared_parameter_count() const {
  std::int64_t n = 0;
  for (const auto& p : impl_->shared_params()) n += p.numel();
  return n;
}

}  // namespace marlsched
