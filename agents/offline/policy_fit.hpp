#pragma once
/// \file policy_fit.hpp
/// bc and awr: MAPPO's networks (Mappo::parts(): its actors, critic, value normaliser and
/// optimisers) fitted to a dataset instead of trained by PPO, so an offline-trained policy saves,
/// exports, evaluates and warm-starts MAPPO like a trained one.

#include <memory>

#include "agents/mappo/mappo.hpp"
#include "io/dataset.hpp"

namespace marlsched {

class PolicyFit {
 public:
  /// Fits `nets`' parts (they must outlive this). Refuses a --base-policy (a dataset's actions
  /// are the actor's alone) and --critic-privileged (a dataset holds no privileged fields).
  explicit PolicyFit(Mappo& nets);
  ~PolicyFit();
  PolicyFit(const PolicyFit&) = delete;
  PolicyFit& operator=(const PolicyFit&) = delete;

  /// Behaviour cloning: `epochs` passes, in minibatches of `minibatch` rows, over the
  /// (observation, action) pairs of this rank's agents in `data` (io/dataset.hpp; its
  /// world-steps × local agents), minimising the actor's −log π(a|o) with Adam (--lr-actor) and
  /// MAPPO's gradient clipping; a shared actor's gradients are averaged over ranks, so it stays
  /// bitwise identical. The critic is not trained. The actor inputs are built once, on the first
  /// call. Statistics: bc_loss, bc_accuracy (the share of rows whose most probable action is the
  /// logged one), grad_norm_actor.
  UpdateStats clone(const LocalDataset& data, int epochs, int minibatch);

  /// Advantage-weighted regression (Peng et al. 2019, the policy step of IQL): each call fits
  /// the critic to the dataset's λ-returns of the reward (1-β)·own + β·mean over agents
  /// (bootstrapped at episode ends and cuts, --gamma, --gae-lambda, MAPPO's value normalisation
  /// and Huber loss), then trains the actor on the logged actions with weights
  /// min(exp(Â / temperature), max_weight), Â the standardised advantage λ-return − V(s). Only
  /// actions in the data are ever scored (no out-of-distribution queries). `epochs` passes of
  /// each. Statistics: awr_loss, awr_accuracy, value_loss, mean_weight, grad_norm_actor,
  /// grad_norm_critic. Not for --critic pooled.
  struct AwrOptions {
    int epochs = 1, minibatch = 512;
    double temperature = 1.0, max_weight = 20.0, team_reward = 1.0;
    bool team_targets = false;  ///< the team reward over each agent's targets (--team-scope)
  };
  UpdateStats awr(const LocalDataset& data, const AwrOptions& opt);

 private:
  /// The dataset as the networks read it, built on the first call.
  struct Rows;
  void prepare(const LocalDataset& data, bool with_critic, int minibatch);
  Mappo::Impl& m_;
  std::unique_ptr<Rows> rows_;
};

}  // namespace marlsched
