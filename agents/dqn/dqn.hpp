#pragma once
/// \file dqn.hpp
/// Deep Q-learning (Mnih et al., Nature 2015) per agent, the learning method of ASET (arXiv
/// 2301.13618): an online Q-network and a target network copied every `target_every` gradient
/// steps, a uniform replay buffer, a linearly decaying ε-greedy schedule, the Huber TD loss, and
/// optionally double DQN (van Hasselt et al., AAAI 2016: the online network picks the next
/// action, the target network values it).
///
/// * Input per agent: its own observation, the public fields of every site (as exchanged) and a
///   one-hot agent id — the same input as MAPPO's actor. With `share` (default) one Q-network
///   serves every agent (parameter sharing); its gradients are averaged over ranks with one
///   flattened MPI_Allreduce per gradient step, so it stays bitwise identical everywhere.
///   Without it each agent has its own network and no gradient crosses ranks.
/// * Each rank keeps a replay buffer of its own agents' transitions (one per agent when not
///   shared). Truncated episodes bootstrap from the terminal observation; only terminations
///   cut the target.
/// * The trainer runs `rollout_steps` environment steps per iteration, then `updates` gradient
///   steps on minibatches of `batch` transitions, once the buffer holds `warmup` of them.
/// Statistics: td_loss, q_mean, epsilon, grad_norm, replay_size.

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "core/learner.hpp"
#include "core/options.hpp"
#include "dist/comm.hpp"

namespace marlsched {

struct DqnConfig {
  double lr = 5e-4;
  double gamma = 0.95;
  std::vector<int> hidden{128, 128};
  int buffer = 50000;      ///< transitions per rank (per agent when not shared)
  int batch = 128;         ///< transitions per gradient step per rank
  int warmup = 2000;       ///< transitions in the buffer before learning starts
  int updates = 32;        ///< gradient steps per iteration
  int target_every = 250;  ///< gradient steps between target-network copies
  double eps_start = 1.0;  ///< ε at the start of training
  double eps_end = 0.05;   ///< ε after eps_decay steps
  int eps_decay = 3000;    ///< decision steps (act calls while training) of linear ε decay
  double eps_eval = 0.0;   ///< ε when evaluating without --deterministic
  /// Added to the PolicyInput::draw streams of an evaluation (not an option: tsdqn's two heads
  /// draw from different streams).
  std::uint64_t draw_stream = 0;
  /// Not options: set by the offline learner `cql` (agents/offline). Offline, the replay
  /// buffers hold a dataset (QFit, agents/offline/q_fit.hpp) and are not saved; cql_alpha > 0 adds
  /// discrete CQL's penalty to the TD loss.
  bool offline = false;
  double cql_alpha = 0.0;
  bool double_dqn = true;
  bool share = true;  ///< one Q-network for all agents (with agent-id input)
  double huber_delta = 1.0;
  double max_grad_norm = 10.0;
  double team_reward = 0.0;  ///< reward = (1-β)·own + β·mean over agents
  int rollout_steps = 32;
  /// Where the networks and batches live (LearnerConfigs binds --device; see nn::check_device).
  std::string device = "cpu";

  void bind(OptionBinder& b);
  void validate() const;
};

class Dqn final : public Learner {
 public:
  Dqn(const DqnConfig& cfg, const LearnerLayout& layout);
  ~Dqn() override;

  std::string name() const override { return "dqn"; }
  /// ε-greedy in training mode (recording the transition's first half); greedy in evaluation
  /// (ε = eps_eval unless deterministic). The log-probabilities are the ε-greedy policy's, the
  /// values max_a Q(s, a).
  using Learner::act;
  Decisions act(const PolicyInput& in) override;
  void set_training(bool training) override;
  void set_deterministic(bool deterministic) override;
  void record(const StepFeedback& fb) override;
  UpdateStats update(const PolicyInput& last) override;
  const std::vector<StatName>& stat_names() const override;
  /// Networks, target networks, optimisers, ε step, RNGs and the replay buffer (so that a
  /// resumed run continues exactly).
  void save(const std::string& path) const override;
  void load(const std::string& path) override;
  /// The same to and from a stream (`name` names it in errors), for learners built on DQN.
  void save(std::ostream& out) const;
  void load(std::istream& in, const std::string& name);
  bool shared_parameters_identical() const override;
  std::uint64_t shared_parameter_digest() const override;

  /// Q-values of local agent k for one world's global observations (for tests).
  std::vector<float> q_values(const GlobalObs& g, int local_agent) const;
  /// Current ε of the training schedule.
  double epsilon() const;
  /// Transitions in this rank's replay buffer(s).
  std::int64_t replay_size() const;

  /// Writes the greedy policy of every agent as one TorchScript module (see
  /// Mappo::export_torchscript for the calling convention): probs() is the one-hot greedy
  /// action, q(obs, agent) the Q-values.
  static void export_torchscript(const std::vector<const Dqn*>& ranks, const std::string& path,
                                 const std::string& metadata);

  /// Its parts: Q-networks, target networks, optimisers, replay buffers and the TD step
  /// (agents/dqn/dqn_impl.hpp), for the learners that train them another way (cql,
  /// agents/offline/q_fit.hpp).
  struct Impl;
  Impl& parts() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace marlsched
