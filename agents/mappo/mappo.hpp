#pragma once
/// \file mappo.hpp
/// MAPPO (Yu et al., "The Surprising Effectiveness of PPO in Cooperative Multi-Agent Games",
/// 2022) with a centralized critic.
///
/// * Actor (shared by all agents by default): input = own observation, the public fields of
///   every site (as exchanged), and a one-hot agent id; output = action logits. Or (--actor
///   targets) a per-target scoring network whose size does not depend on the agent count.
/// * Critic V(global state, agent id): input = every agent's observation (the allgather) and
///   the one-hot id; or (--critic pooled) the own observation and the mean of every agent's
///   embedding, exchanged as fixed-size sums (one allreduce per step, two per minibatch). Value
///   targets are normalised with running moments (MAPPO's ValueNorm).
/// * PPO clipped surrogate, GAE(λ) with truncation bootstrapping, entropy bonus, Huber value
///   loss, Adam, global-norm gradient clipping, epochs × minibatches.
/// * Gradients that must agree across ranks (critic; actor when shared) are averaged with ONE
///   flattened MPI_Allreduce per minibatch update, so parameters stay bitwise identical.
/// The header is free of torch: the implementation lives behind a pointer.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/learner.hpp"
#include "core/options.hpp"
#include "dist/comm.hpp"

namespace marlsched {

/// The kinds of actor and critic that --actor and --critic name.
enum class ActorKind { kMlp, kTargets };
enum class CriticKind { kConcat, kPooled, kLocal };
/// The option's name of a critic kind ("local" for IPPO's, which no option names).
const char* critic_name(CriticKind k);

struct MappoConfig {
  double lr_actor = 5e-4;
  double lr_critic = 5e-4;
  double gamma = 0.99;
  double gae_lambda = 0.95;
  double clip = 0.2;
  int epochs = 5;
  int minibatches = 2;
  double entropy_coef = 0.01;
  double value_coef = 1.0;
  double huber_delta = 10.0;
  double max_grad_norm = 10.0;
  std::vector<int> actor_hidden{64, 64};
  /// The actor (--actor): mlp, an MLP over the own observation, every site's public fields and
  /// a one-hot agent id (its size grows with the agent count); targets, one network that scores
  /// each (mode, target) of the env's targeted action space (EnvSpec::targets) from the own
  /// observation and the target's features (nn::target_input; no agent id), so that its size and
  /// its cost per agent depend on the targets per agent only.
  ActorKind actor = ActorKind::kMlp;
  std::vector<int> critic_hidden{128, 128};
  bool share_actor = true;
  /// Heterogeneous agents: the group of each agent, in agent order (values 0 .. G-1, each
  /// used). Each group has one actor, shared by its agents wherever they run (every rank holds
  /// all G actors; their gradients are averaged over ranks like a shared actor's). Empty: one
  /// actor (--share-actor) or one per agent.
  std::vector<int> actor_groups;
  bool value_norm = true;
  /// Start the critic's gradient allreduce (nonblocking) before the actor's backward pass. Off
  /// by default: Open MPI progresses a nonblocking collective only inside MPI calls, so nothing
  /// overlaps, and its MPI_Iallreduce (libnbc) is slower than the blocking MPI_Allreduce
  /// (bench_collectives' BM_GradIallreduce; docs/performance.md).
  bool overlap_grads = false;
  /// Where the networks and batches live (LearnerConfigs binds --device; see nn::check_device).
  std::string device = "cpu";
  /// The critic's input (--critic): concat, V(every agent's observation, agent id), whose
  /// size grows with the agent count; pooled, V(own observation, mean over all agents of a
  /// shared embedding of each agent's observation), whose size does not (with --actor targets
  /// the head reads the actor's per-target input in place of the own observation: MAPPO's
  /// agent-specific state, the agent's own features beside the global context, here its
  /// neighbourhood, which a neighbourhood reward depends on); each rank embeds its
  /// own agents and the ranks allreduce the embeddings' sum per (step, copy), and in the update
  /// its gradient (the learners of `comm` must then hold every agent once between them, and
  /// minibatches are whole (step, copy) groups, the same on every rank); local (IPPO, set by
  /// its row in agents/mappo/entry.cpp), V(the agent's own actor input).
  CriticKind critic = CriticKind::kConcat;
  /// A privileged centralized critic (--critic-privileged, with --critic concat): the critic also
  /// reads every agent's privileged fields (EnvSpec::privileged_fields: the arrivals still to
  /// come, the true carbon and prices ahead), which the world gathers during training only. The
  /// actors never see them, so the policy acts as before; the value baseline no longer has to
  /// guess what the episode's own randomness brings, which is most of the returns' spread.
  /// Asymmetric actor-critic (Pinto et al. 2018), as MAPPO's "agent-specific global state".
  bool critic_privileged = false;
  int critic_embed = 64;     ///< embedding width of the pooled critic
  double team_reward = 1.0;  ///< reward = (1-β)·own + β·mean over agents
  int rollout_steps = 96;
  /// Common random numbers for PPO: copies c and c' of a rank run the same episodes (the same
  /// arrivals and traces) when c / common_episodes == c' / common_episodes, and the actor's
  /// advantage of copy c at a step is its GAE advantage minus the mean of the group's other
  /// copies' at the same step and agent: a leave-one-out control variate that removes what the
  /// episode's exogenous draws did to everyone (independent of c's own actions, so the gradient
  /// stays unbiased). 1: every copy its own episodes, plain GAE. Needs fixed-length episodes.
  int common_episodes = 1;
  /// Warm start by imitation (DAgger-style, Ross et al. 2011): a heuristic baseline of the env
  /// (e.g. least-loaded) labels every state the policy visits, and the actor's loss gains
  /// `imitate_coef` × the cross-entropy of the teacher's action, falling linearly to 0 over the
  /// first `imitate_iterations` updates; PPO alone after that. The policy acts throughout, so the
  /// PPO part stays on-policy. Empty: no teacher.
  std::string imitate;
  int imitate_iterations = 0;
  double imitate_coef = 1.0;
  /// Residual policy over a baseline of the env (empty: none): the actor's logits gain
  /// `base_margin` on the baseline's action in every state, in acting and in the PPO loss alike,
  /// so an actor whose logits are level acts (greedily) as the baseline and PPO learns where to
  /// depart from it. The baseline is part of the policy: evaluation runs it, the model records it,
  /// export and the offline learners refuse it.
  std::string base_policy;
  double base_margin = 3.0;

  void bind(OptionBinder& b);
  void validate() const;
  /// What the env must offer (--actor targets: a targeted action space); throws ConfigError.
  void check_env(const EnvSpec& spec) const;
};

class Mappo final : public Learner {
 public:
  /// The layout's `baselines` (the env's) serve --imitate and --base-policy (needed only where
  /// they are set).
  Mappo(const MappoConfig& cfg, const LearnerLayout& layout);
  ~Mappo() override;

  std::string name() const override;
  /// --common-episodes.
  int common_episodes() const override;
  /// --critic-privileged.
  bool wants_privileged() const override;
  /// Whether its teacher (--imitate) or base policy (--base-policy) plans every site at once.
  bool needs_every_agent() const override;
  using Learner::act;
  /// Chooses actions. In training mode it samples and records (obs, action, log-prob, value);
  /// in evaluation mode it samples (or takes the argmax when deterministic) without recording.
  /// The values are the critic's (denormalised), in training mode.
  Decisions act(const PolicyInput& in) override;
  void set_training(bool training) override;
  void set_deterministic(bool deterministic) override;
  void record(const StepFeedback& fb) override;
  /// PPO update on the collected rollout; `last` are the global observations after the final
  /// step (bootstrap values). Clears the rollout. Statistics: policy_loss, value_loss, entropy,
  /// approx_kl, clip_frac, grad_norm_actor, grad_norm_critic.
  UpdateStats update(const PolicyInput& last) override;
  const std::vector<StatName>& stat_names() const override;
  /// Saves/loads this rank's networks, optimiser state and value normaliser.
  void save(const std::string& path) const override;
  void load(const std::string& path) override;
  /// The actor, and the critic with its value normaliser where the file's learner trained one
  /// (mappo, ippo, awr; not bc), from a model file of the same layout; optimisers, RNGs and
  /// the imitation schedule start afresh.
  void init_from(const std::string& path) override;
  bool shared_parameters_identical() const override;
  /// Digest of the shared parameters (critic and, when shared, actor).
  std::uint64_t shared_parameter_digest() const override;

  /// Writes the actors of every agent (and with `with_critic` the critic) as one TorchScript
  /// module that PyTorch (`torch.jit.load`) and libtorch (`torch::jit::load`) load:
  ///   forward(obs, agent: int, deterministic: bool = False) -> (probs, action)
  ///   probs(obs, agent: int) -> probs;  value(obs, agent: int) -> V  (with the critic)
  /// `obs` is the raw observations of every agent, [num_agents, obs_dim] or
  /// [batch, num_agents, obs_dim]; the module assembles the actor's input (own observation,
  /// every site's public fields, one-hot agent id) itself, exactly as training does, and the
  /// critic's output is denormalised. `ranks` holds one learner per training rank (each with
  /// its own agents' actors; rank 0's shared actor and critic). `metadata` (JSON) is stored as
  /// the string attribute `metadata`.
  static void export_torchscript(const std::vector<const Mappo*>& ranks, const std::string& path,
                                 const std::string& metadata, bool with_critic);

  /// What a model file of this config, env and layout records as its layout (the "meta" entry
  /// that load and init_from check), computed without building the networks.
  static std::vector<std::int64_t> layout_of(const MappoConfig& cfg, const EnvSpec& spec,
                                             int num_agents, int local_agents);
  /// Throws ConfigError, as load would, unless the model file at `path` has the layout of
  /// `cfg`, `spec` and this many agents (for checks before any collective: --init-from).
  static void check_model_layout(const std::string& path, const MappoConfig& cfg,
                                 const EnvSpec& spec, int num_agents, int local_agents);

  /// Action probabilities of the actor alone (without --base-policy's margin) for local agent k
  /// and one copy's global observations (for tests).
  std::vector<float> action_probs(const GlobalObs& g, int local_agent) const;
  /// The weight of the imitation loss in the next update (--imitate; 0 without a teacher or
  /// after --imitate-iterations updates).
  double imitation_weight() const;
  /// Number of floats in the shared parameter set (critic, and the actor when shared).
  std::int64_t shared_parameter_count() const;

  /// Its parts: actors, critic, value normaliser, optimisers, gradient buckets and input
  /// builders (agents/mappo/mappo_impl.hpp), for the learners that train the same networks
  /// another way (bc and awr, agents/offline/policy_fit.hpp).
  struct Impl;
  Impl& parts() { return *impl_; }

 private:
  void load_impl(const std::string& path, bool parameters_only = false);
  std::unique_ptr<Impl> impl_;
};

}  // namespace marlsched
