#include "evaluate_all.hpp"

#include <memory>

#include "agents/exported/torchscript_policy.hpp"
#include "core/error.hpp"
#include "envs/baselines.hpp"
#include "train/checkpoint.hpp"
#include "train/evaluate.hpp"

namespace marlsched {

void evaluate_all(const RunConfig& run, const LearnerConfigs& learners, const EnvFactory& factory,
                  const dist::Comm& comm, const LearnedPolicy& learned,
                  const std::vector<std::string>& baselines, bool deterministic,
                  const std::string& out_dir) {
  const auto& spec = factory.spec();
  EvalSettings es;
  es.agents_per_rank = run.agents_per_rank;
  es.copies = run.envs_per_rank;
  es.episodes = run.eval_episodes;
  es.seed = run.eval_seed;
  const int n = run.agents_per_rank * comm.size();
  std::vector<std::unique_ptr<Policy>> policies;
  std::vector<EvalEntry> entries;
  if (!learned.exported.empty()) {
    policies.push_back(load_exported_policy(learned.exported, spec, n, deterministic));
    entries.push_back({policies.back().get(), ""});
  } else if (!learned.empty()) {
    auto agent = make_learner(run.algo, learners, spec, comm, n, run.agents_per_rank * comm.rank(),
                              run.agents_per_rank, run.envs_per_rank, run.seed);
    agent->load(learned.run_dir.empty() ? learned.checkpoint + "/" + ckpt_model_file(comm.rank())
                                        : model_path(learned.run_dir, comm.rank()));
    agent->set_training(false);
    agent->set_deterministic(deterministic);
    entries.push_back({agent.get(), run.algo + (deterministic ? " (greedy)" : "")});
    policies.push_back(std::move(agent));
  }
  for (const auto& b : baselines) {
    policies.push_back(make_heuristic(b, spec, run.eval_seed));
    entries.push_back({policies.back().get(), ""});
  }
  evaluate_and_report(entries, factory, comm, es, run.eval_bound, out_dir);
}

}  // namespace marlsched
