#pragma once
/// \file masac.hpp
/// Multi-agent soft actor-critic with a centralized critic, for discrete actions: the
/// off-policy actor-critic that the GLOBECOM 2023 AIGC scheduler builds on. SAC with automatic
/// entropy tuning (Haarnoja et al., arXiv 1812.05905) in its discrete-action form (Christodoulou,
/// arXiv 1910.07207: the policy's full distribution enters the soft value and the actor loss, no
/// reparameterisation), with MADDPG's centralized critic (Lowe et al., NeurIPS 2017: each agent's
/// critic sees every agent's observation and the other agents' actions).
///
/// * Actor: one network for every agent (parameter sharing), on the same per-agent input as
///   MAPPO's actor and DQN (own observation, every site's public fields, one-hot agent id);
///   softmax over the env's actions.
/// * Critics: two Q-networks and their Polyak-averaged targets (clipped double Q), shared by
///   every agent. Input of agent i: every agent's observation, the one-hot actions of the other
///   agents (agent i's slot zero), the one-hot id of i; output: Q for each of i's actions.
/// * Temperature: α = exp(log α), learned so that the policy's entropy tracks
///   --sac-target-entropy × log(actions) (a fraction of the uniform policy's entropy).
/// * Other agents' actions across ranks: every rank samples its own agents' actions, then one
///   MPI_Allgather per environment step (training only; n ints per env copy) gives every rank
///   the joint action, which its replay buffer stores with the global observations the trainer
///   already gathers. In the critic target, the other agents' next actions are sampled from the
///   current shared actor at the next state, which every rank can evaluate for any agent; so no
///   further communication is needed than the gradient allreduces.
/// * Replay: per rank, one entry per (step, env copy): global observation, joint action, the
///   rewards of this rank's agents, termination, next global observation. A minibatch draws
///   (entry, local agent) pairs. Truncated episodes bootstrap from the terminal observation.
/// * Gradients of actor, critics and α are averaged over ranks (dist::GradBucket), so every
///   parameter stays bitwise identical on every rank.
/// Statistics: critic_loss, actor_loss, alpha, entropy, q_mean, replay_size.
///
/// `--algo maddpg` is the same learner as MADDPG for discrete actions (Lowe et al. 2017, with
/// the Gumbel-softmax relaxation its authors use for discrete actions): the critics as above but
/// without the entropy term; a Polyak-averaged target actor samples every agent's next action in
/// the critic target; the actor follows the critic's gradient through a straight-through
/// Gumbel-softmax sample of its own action (hard one-hot forward, softmax backward), with
/// MADDPG's 1e-3 penalty on the logits. It keeps the twin critics (clipped double Q, as TD3 does
/// for DDPG), and α and the entropy target are unused. Options: the --sac-* ones.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/learner.hpp"
#include "core/options.hpp"
#include "dist/comm.hpp"

namespace marlsched {

struct MasacConfig {
  double lr_actor = 3e-4;
  double lr_critic = 1e-3;
  double lr_alpha = 3e-4;
  double gamma = 0.95;
  double tau = 0.01;  ///< Polyak rate of the target critics per gradient step
  std::vector<int> actor_hidden{64, 64};
  std::vector<int> critic_hidden{128, 128};
  int buffer = 20000;           ///< replay entries (step × env copy) per rank
  int batch = 128;              ///< (entry, agent) samples per gradient step per rank
  int warmup = 500;             ///< entries before learning starts
  int updates = 16;             ///< gradient steps per iteration
  double target_entropy = 0.5;  ///< target entropy as a fraction of log(actions)
  double init_alpha = 0.2;
  double max_grad_norm = 10.0;
  double team_reward = 0.0;  ///< reward = (1-β)·own + β·mean over agents
  int rollout_steps = 32;
  std::string device = "cpu";  ///< set from LearnerConfigs::device

  void bind(OptionBinder& b);
  void validate() const;
};

class Masac final : public Learner {
 public:
  /// `maddpg`: the MADDPG variant (see the file comment).
  Masac(const MasacConfig& cfg, const LearnerLayout& layout, bool maddpg = false);
  ~Masac() override;

  std::string name() const override;  ///< "masac" or "maddpg"
  /// Samples from the policy (training; then gathers the joint action); in evaluation the
  /// greedy action when deterministic, else a sample. The values are the soft state value
  /// Σ_a π(a)·(min Q(a) − α log π(a)) (training mode).
  using Learner::act;
  Decisions act(const PolicyInput& in) override;
  void set_training(bool training) override;
  void set_deterministic(bool deterministic) override;
  void record(const StepFeedback& fb) override;
  UpdateStats update(const PolicyInput& last) override;
  const std::vector<StatName>& stat_names() const override;
  void save(const std::string& path) const override;
  void load(const std::string& path) override;
  bool shared_parameters_identical() const override;
  std::uint64_t shared_parameter_digest() const override;

  /// π(·|o) of local agent k for one world's global observations.
  std::vector<float> action_probs(const GlobalObs& g, int local_agent) const;
  double alpha() const;
  std::int64_t replay_size() const;

  /// Writes the policy as a TorchScript module with MAPPO's calling convention (probs(obs,
  /// agent), forward(obs, agent, deterministic)); the actor is shared, so rank 0's is every
  /// rank's.
  static void export_torchscript(const std::vector<const Masac*>& ranks, const std::string& path,
                                 const std::string& metadata);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace marlsched
