#pragma once
/// \file es.hpp
/// Evolution strategies with common random numbers ("es"): Augmented Random Search (Mania,
/// Guy and Recht, "Simple random search of static linear policies is competitive for
/// reinforcement learning", NeurIPS 2018) over the same shared, decentralized actor input as
/// MAPPO, with the MPI layout of Salimans et al. ("Evolution Strategies as a Scalable
/// Alternative to Reinforcement Learning", 2017): no gradient, no critic, one deterministic
/// policy per world.
///
/// * Policy: logits = net((x − μ) / s), action = argmax (deterministic, as evaluated); x is the
///   agent's input (own observation, every site's public fields, one-hot agent id), μ and s the
///   running mean and standard deviation of every input the training rollouts visited (ARS's V2
///   normalisation, frozen within an iteration). The net is linear by default (--es-hidden empty,
///   ARS's static linear policy) or a tanh MLP. One parameter vector θ serves every agent. With
///   --es-actor targets the net instead scores every (mode, target) of a targeted action space
///   from (own observation, target row), as MAPPO's per-target actor: θ's size and the cost per
///   agent do not grow with the agent count (a model still loads only at the agent count it
///   was trained with).
/// * Population = the env copies: each iteration draws P = copies / 2 directions ε_j ~ N(0, I)
///   from a seed that every rank derives alike (no parameters travel); copy 2j runs θ + σε_j,
///   copy 2j+1 runs θ − σε_j, for one whole episode each (an iteration is one episode: the
///   rollout is the env's episode length).
/// * Common random numbers: the two copies of pair j run the same episode (same arrivals, same
///   traces: Learner::common_episodes() = 2 asks the world for it), so the difference of their
///   returns, d_j = F(θ + σε_j) − F(θ − σε_j), measures the perturbation and not the episode.
///   F is the episode's sum over every agent of the learner reward (the team return). Episodes
///   differ across pairs and iterations.
/// * Update: θ ← θ + α / (b · sd(d)) · Σ_{j ∈ top b} d_j ε_j, the b = ⌈top · P⌉ directions
///   with the largest |d_j| (ARS's top-b, ranked by the paired difference instead of the
///   better return, which common random numbers make comparable across pairs). Every rank
///   computes the same step from the same allreduced returns, so θ stays bitwise identical.
/// * Imitation, then improvement (--es-imitate NAME --es-imitate-iterations K, linear policy):
///   the first K iterations are DAgger rounds instead of ES steps. Every copy acts with the
///   teacher (round 0) or with θ (later rounds) while the teacher labels every state visited;
///   after each round θ is fitted to all labels so far (softmax cross-entropy with weight decay,
///   full-batch Adam, gradients summed over ranks so that θ stays identical), then ES improves
///   it. A teacher that needs every agent (the MPC) needs one rank holding every agent.
/// * Residual policy search over a baseline (--es-base NAME, Silver et al., "Residual Policy
///   Learning", 2018, with ES in place of the gradient): every step the baseline acts too, and
///   each head's logit of the baseline's decision gets --es-base-margin more, so θ = 0 is the
///   baseline and a perturbation changes a decision only where its logits overrule the margin.
///   ES then learns where the baseline is wrong. The baseline is part of the policy: evaluation
///   runs it, the model records its name, and TorchScript export refuses such a policy.
/// Statistics: return_mean and return_max (F over the population), diff_sd (sd of the used
/// d_j), diff_nonzero (share of pairs whose two policies scored differently: the rest saw no
/// decision change), step_norm (|Δθ|), imitation_accuracy (share of the labelled states where
/// θ's action is the teacher's, after the last DAgger round; 0 without one).

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/learner.hpp"
#include "core/options.hpp"
#include "dist/comm.hpp"

namespace marlsched {

/// The policy's input that --es-actor names.
enum class EsActor { kAgent, kTargets };

struct EsConfig {
  std::vector<int> hidden;  ///< empty: a linear policy (ARS)
  /// The policy's input (--es-actor): agent, the own observation, every site's public fields
  /// and a one-hot id (its size grows with the agent count); targets, one network that scores
  /// each (mode, target) of the env's targeted action space from the own observation and that
  /// target's row (nn::target_input: its public fields, their difference from the own, an
  /// is-self flag and the pair's static features), so that θ does not depend on the agent count.
  EsActor actor = EsActor::kAgent;
  double lr = 0.02;       ///< α
  double sigma = 0.05;    ///< σ, the perturbation's scale
  double top = 1.0;       ///< share of directions used per update (ARS's b / N)
  bool normalize = true;  ///< inputs standardised by running moments (ARS V2)
  /// Standard deviation of the initial output-layer weights (hidden layers: 1/√fan-in; biases 0).
  double init_scale = 0.01;
  /// Imitation, then improvement: a baseline of the env (a teacher) whose actions the linear
  /// policy first fits by DAgger over `imitate_iterations` iterations (empty: none).
  std::string imitate;
  int imitate_iterations = 0;
  double imitate_l2 = 1e-3;  ///< weight decay of the fit (keeps θ at the scale σ explores)
  /// Residual policy search over a baseline of the env (empty: none): the policy's logits are
  /// the network's plus `base_margin` on each head's part of the baseline's action, so that
  /// θ = 0 acts as the baseline and ES learns where to overrule it.
  std::string base;
  double base_margin = 1.0;

  void bind(OptionBinder& b);
  void validate() const;
  /// What the env must offer: whole episodes of a fixed length; throws ConfigError.
  void check_env(const EnvSpec& spec) const;
};

class Es final : public Learner {
 public:
  /// The teacher of --es-imitate and the baseline of --es-base are made here, once each, from
  /// the layout's `baselines` (the env's).
  Es(const EsConfig& cfg, const LearnerLayout& layout);
  ~Es() override;

  std::string name() const override { return "es"; }
  /// Greedy actions; in training mode copy c acts with its perturbed parameters. Log-probabilities
  /// 0 (the policy is deterministic), values NaN (ES has no value estimate).
  using Learner::act;
  Decisions act(const PolicyInput& in) override;
  /// Training needs an even number of copies (antithetic pairs): ConfigError otherwise.
  void set_training(bool training) override;
  void set_deterministic(bool) override {}  ///< always deterministic
  void record(const StepFeedback& fb) override;
  UpdateStats update(const PolicyInput& last) override;
  const std::vector<StatName>& stat_names() const override;
  /// Copies per antithetic pair, which run the same episodes.
  static constexpr int kCopyGroup = 2;
  int common_episodes() const override { return kCopyGroup; }
  /// Whether its base (--es-base) or teacher (--es-imitate) plans every site at once.
  bool needs_every_agent() const override;
  /// θ, the input moments, the iteration count.
  void save(const std::string& path) const override;
  void load(const std::string& path) override;
  bool shared_parameters_identical() const override;
  std::uint64_t shared_parameter_digest() const override;

  /// Logits of local agent k for one world's global observations with the unperturbed θ.
  std::vector<float> logits(const GlobalObs& g, int local_agent) const;
  /// Number of parameters in θ.
  std::int64_t parameter_count() const;

  /// Writes the policy as one TorchScript module (the calling convention of
  /// Mappo::export_torchscript): logits(obs, agent) with the input normalisation folded into the
  /// first layer, probs() the one-hot greedy action.
  static void export_torchscript(const std::vector<const Es*>& ranks, const std::string& path,
                                 const std::string& metadata);

 private:
  /// The layout record of its model file: agents, input and action sizes, normalisation, hidden
  /// sizes.
  std::vector<std::int64_t> layout() const;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace marlsched
