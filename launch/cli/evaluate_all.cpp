#include "evaluate_all.hpp"

#include <memory>

#include "agents/exported/torchscript_policy.hpp"
#include "core/error.hpp"
#include "envs/baselines.hpp"
#include "train/checkpoint.hpp"
#include "train/evaluate.hpp"

namespace marlsched {

std::unique_ptr<Policy> make_learned_policy(const RunConfig& run, const LearnerConfigs& learners,
                                            const EnvSpec& spec, const dist::Comm& comm,
                                            const LearnedPolicy& learned, bool deterministic,
                                            const Learner** as_learner) {
  const int n = run.agents_per_rank * comm.size();
  if (as_learner) *as_learner = nullptr;
  if (!learned.exported.empty())
    return load_exported_policy(learned.exported, spec, n, deterministic);
  MARLSCHED_CHECK(!learned.empty(), "no learned policy named");
  auto agent = make_learner(run.algo, learners, spec, comm, n, run.agents_per_rank * comm.rank(),
                            run.agents_per_rank, run.envs_per_rank, run.seed, baseline_maker(spec));
  agent->load(learned.run_dir.empty() ? learned.checkpoint + "/" + ckpt_model_file(comm.rank())
                                      : model_path(learned.run_dir, comm.rank()));
  agent->set_training(false);
  agent->set_deterministic(deterministic);
  if (as_learner) *as_learner = agent.get();
  return agent;
}

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
  std::vector<std::unique_ptr<Policy>> policies;
  std::vector<EvalEntry> entries;
  if (!learned.empty()) {
    const Learner* agent = nullptr;
    policies.push_back(
        make_learned_policy(run, learners, spec, comm, learned, deterministic, &agent));
    entries.push_back({policies.back().get(),
                       agent ? run.algo + (deterministic ? " (greedy)" : "") : std::string()});
  }
  for (const auto& b : baselines) {
    policies.push_back(make_heuristic(b, spec, run.eval_seed));
    entries.push_back({policies.back().get(), ""});
  }
  const auto hindsight = run.eval_bound ? make_hindsight_schedule(spec) : nullptr;
  evaluate_and_report(entries, factory, comm, es, run.eval_bound, out_dir, hindsight.get());
}

}  // namespace marlsched
