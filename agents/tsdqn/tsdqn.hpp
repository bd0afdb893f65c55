#pragma once
/// \file tsdqn.hpp
/// Two-timescale deep Q-learning for envs with a factored long/short action
/// (EnvSpec::action_heads = {long, short}, long_every = W): the LSTCB structure.
///
/// * A long-timescale head chooses the long action at the first step of every window of W
///   steps and keeps it for the window. It learns on window transitions (semi-MDP): its reward
///   is the discounted sum Σ γ^t r_t over the window and its discount γ^W (the exact semi-MDP
///   of the short head's objective), or, with `--ts-long-gamma g` > 0, the plain sum of the
///   window's rewards and the discount g per window: the long decision holds for the whole
///   window, so every step of it counts the same, and the long head's horizon is set in windows
///   (with γ = 0.95 per step the exact form weighs a 40-step window's last step 0.13 times its
///   first and looks 0.95^40 = 0.13 of a window ahead).
/// * A short-timescale head chooses the short action every step, seeing the long decision in
///   force through the observation.
/// * Both heads are DQN learners (agents/dqn: target networks, replay, ε-greedy, double DQN)
///   and learn from the same (team-mixed) reward: they cooperate on one objective. The short
///   head takes the --dqn-* options; the long head the --ts-long-* overrides.
/// * `--ts-short-actions` may restrict the short head to some of the env's short actions (by
///   name, e.g. "slack,dispatch"): action masking, so that the head does not spend its
///   exploration on modes that only the baselines need.
/// Statistics: the DQN statistics of each head, prefixed long_ and short_.

#include <memory>
#include <string>
#include <vector>

#include "agents/dqn/dqn.hpp"
#include "core/learner.hpp"

namespace marlsched {

struct TsdqnConfig {
  double long_lr = 5e-4;
  int long_batch = 64;
  int long_warmup = 256;
  int long_updates = 8;  ///< gradient steps of the long head per iteration
  int long_target_every = 50;
  int long_eps_decay = 100;  ///< windows of linear ε decay of the long head
  double long_gamma = 0;     ///< discount per window, plain window sums (0: γ^W, discounted sums)
  std::vector<std::string> short_actions;  ///< the short head's choices (empty: all)
  void bind(OptionBinder& b);
  void validate() const;
  /// Env indices of the short actions the short head may choose; throws ConfigError naming an
  /// unknown action and the env's list.
  std::vector<int> short_subset(const EnvSpec& spec) const;
  /// The long head's DQN options: the short head's with the overrides above.
  DqnConfig long_head(const DqnConfig& short_head, int window) const;
};

/// Throws ConfigError unless `spec` has the two action heads tsdqn learns (a long head applied
/// every spec.long_every steps, a short head every step) and episodes of whole long windows.
void check_tsdqn_env(const EnvSpec& spec);

class TwoTimescaleDqn final : public Learner {
 public:
  TwoTimescaleDqn(const TsdqnConfig& ts, const DqnConfig& dqn, const LearnerLayout& layout);
  ~TwoTimescaleDqn() override;

  std::string name() const override { return "tsdqn"; }
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

  const Dqn& long_head() const;
  const Dqn& short_head() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace marlsched
