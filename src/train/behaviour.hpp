#pragma once
/// \file behaviour.hpp
/// The behaviour policy of a dataset (`marlsched collect`): any Policy (a heuristic, a trained
/// learner in evaluation mode, an exported policy), optionally ε-randomised, run through the
/// training loop as a Learner that never learns, so that a collection gets the loop's world,
/// trajectory file, metrics, TensorBoard and checkpoints unchanged.
///
/// With probability ε (the episode's draw, PolicyInput::draw, so the same at every rank count)
/// an agent takes a uniformly random action instead of the policy's. The log-probability the
/// dataset records is that of the mixture, log((1 − ε)·π(a|o) + ε/|A|), where π is known:
/// a deterministic rule or a greedy learner (π is a point mass), the uniform rule, or a sampling
/// learner without ε (its own log π). Otherwise (a rule that samples from a law it does not
/// expose, or a sampling learner with ε > 0) it is NaN. Values are NaN: a behaviour policy has
/// no value estimate.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/learner.hpp"

namespace marlsched {

class BehaviourLearner final : public Learner {
 public:
  /// `policy` acts. `learner` is the same object when it is a trained learner in evaluation
  /// mode, else null; `greedy` says whether that learner takes its most probable action (a
  /// point mass) or samples (its own log π is then recorded, without ε). `epsilon` in [0, 1].
  BehaviourLearner(std::unique_ptr<Policy> policy, const Learner* learner, bool greedy,
                   double epsilon, int num_actions);

  std::string name() const override;
  using Learner::act;
  /// The behaviour's actions and their log-probabilities; values NaN.
  Decisions act(const PolicyInput& in) override;
  ActionLaw action_law() const override;
  void set_training(bool) override {}
  void set_deterministic(bool) override {}
  void record(const StepFeedback&) override {}
  UpdateStats update(const PolicyInput&) override;
  const std::vector<StatName>& stat_names() const override { return stats_; }
  /// A small file naming the policy and ε, so that a collection's checkpoints and model files
  /// exist like a training's; load checks that they match.
  void save(const std::string& path) const override;
  void load(const std::string& path) override;
  bool shared_parameters_identical() const override { return true; }
  std::uint64_t shared_parameter_digest() const override { return 0; }

 private:
  /// What save writes and load expects: a magic line and the policy's name.
  std::string file_text() const;

  std::unique_ptr<Policy> policy_;
  const Learner* learner_;
  ActionLaw law_;
  double epsilon_;
  int num_actions_;
  std::vector<int> chosen_;
  std::vector<StatName> stats_;
};

/// log((1 − ε)·π(a) + ε/|A|) for a policy of law `law` that chose `chosen` (NaN when `law` is
/// unknown).
double behaviour_log_prob(ActionLaw law, int a, int chosen, double epsilon, int num_actions);

/// The draw() streams of the ε-coin and the random action (apart from every policy's own).
constexpr std::uint64_t kBehaviourCoinStream = 0xC011EC7, kBehaviourActionStream = 0xC011EC8;

}  // namespace marlsched
