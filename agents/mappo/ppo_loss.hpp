#pragma once
/// \file ppo_loss.hpp
/// MAPPO's two losses and their gradients with respect to the networks' outputs, written out
/// for the update without autograd (nn::MlpTape): one pass over a minibatch's rows, no tensors.
/// The rows of a minibatch are positions idx[r] in the rollout's arrays. Torch-free.

#include <cstdint>

namespace marlsched::ppo {

/// log-softmax of each of `rows` rows of `cols` logits, in place (the policy step's and the
/// actor loss's one implementation).
void log_softmax_rows(float* z, std::int64_t rows, int cols);

/// Means over a minibatch's rows (what Mappo's statistics report).
struct PolicyTerms {
  double policy_loss = 0;  ///< -mean(min(r·A, clip(r, 1-ε, 1+ε)·A)), r = π(a)/π_old(a)
  double entropy = 0;      ///< mean entropy of π
  double approx_kl = 0;    ///< mean(log π_old(a) - log π(a))
  double clip_frac = 0;    ///< share of rows with |r - 1| > ε
};

/// The actor's loss L = policy_loss - entropy_coef·entropy - imitation·mean(log π(teacher)) on
/// logits z [rows][na] (the teacher term only when `teacher` is given and imitation > 0).
/// Writes seed·dL/dz into dz [rows][na] (autograd's conventions at the clip's kinks: the
/// unclipped term where min() ties, the clip passes its bounds' gradient) and returns the terms.
PolicyTerms policy_loss_grad(const float* z, int rows, int na, const std::int64_t* idx,
                             const std::int64_t* action, const float* old_logp, const float* adv,
                             const std::int64_t* teacher, double clip, double entropy_coef,
                             double imitation, float seed, float* dz);

/// The critic's Huber loss (threshold `delta`) of values v [rows] against target[idx[r]]:
/// writes seed·value_coef·dL/dv into dv [rows] and returns the loss (a mean over rows).
double value_loss_grad(const float* v, int rows, const std::int64_t* idx, const float* target,
                       double delta, double value_coef, float seed, float* dv);

}  // namespace marlsched::ppo
