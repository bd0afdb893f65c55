#pragma once
/// \file evaluate_all.hpp
/// The evaluation a run ends with, and `marlsched eval` / `baselines`: the learned policy (a run's
/// models, a checkpoint's, or an exported TorchScript file) beside the env's heuristic baselines.
/// It builds those policies from the tables of agents (agents/), so it lives here, in the layer
/// that assembles runs; the framework's evaluate_and_report (src/train/evaluate.hpp) runs them.

#include <memory>
#include <string>
#include <vector>

#include "agents/registry.hpp"
#include "core/env.hpp"
#include "dist/comm.hpp"
#include "train/trainer.hpp"

namespace marlsched {

/// Where the learned policy of an evaluation comes from (at most one is set).
struct LearnedPolicy {
  std::string run_dir;     ///< a trained run: RUN_DIR/model-rank-R.pt (same rank layout)
  std::string checkpoint;  ///< a checkpoint directory: CKPT/rank-R.pt (same rank layout)
  std::string exported;    ///< a policy written by `marlsched export` (any rank layout)
  bool empty() const { return run_dir.empty() && checkpoint.empty() && exported.empty(); }
};

/// The learned policy `learned` names (not empty), ready to act in evaluation mode: a learner
/// loaded from a run's or a checkpoint's model (then also returned in `as_learner`) or an
/// exported policy; `deterministic` takes the most probable action instead of sampling.
std::unique_ptr<Policy> make_learned_policy(const RunConfig& run, const LearnerConfigs& learners,
                                            const EnvSpec& spec, const dist::Comm& comm,
                                            const LearnedPolicy& learned, bool deterministic,
                                            const Learner** as_learner = nullptr);

/// Compares the learned policy (if any) with every heuristic baseline on held-out seeds; prints
/// the table on rank 0 and writes eval.csv and eval.md into `out_dir`.
void evaluate_all(const RunConfig& run, const LearnerConfigs& learners, const EnvFactory& factory,
                  const dist::Comm& comm, const LearnedPolicy& learned,
                  const std::vector<std::string>& baselines, bool deterministic,
                  const std::string& out_dir);

}  // namespace marlsched
