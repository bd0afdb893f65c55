#pragma once
/// \file offline.hpp
/// Learning from a dataset (`--dataset FILES`), offline: behaviour cloning (`--algo bc`) and
/// advantage-weighted regression (`--algo awr`), both on MAPPO's actor and critic (the same
/// networks, options and model file as `--algo mappo`, so an offline-trained policy exports,
/// evaluates and warm-starts MAPPO like a trained one). Each rank reads its own agents' rows of
/// the dataset collectively (io/dataset.hpp), once, at the first update. Every iteration the
/// policy also acts in the env (sampling, from the episode's draws), so metrics.csv and
/// TensorBoard show its online utility as it learns; those rollouts are not trained on.
///
/// Two offline RL methods, for two different needs (docs/offline.md):
/// * `--algo awr` only ever scores actions that the data holds (no out-of-distribution action
///   values to overestimate), its policy step is IQL's, and it trains exactly the actor and
///   critic that MAPPO fine-tunes, so a warm start gets both. But it can only reweight the
///   data's actions state by state: greedily it cannot beat the best behaviour in the data.
/// * `--algo cql`, discrete conservative Q-learning (Kumar et al., NeurIPS 2020, CQL(H) on DQN's
///   networks and options): Q-learning propagates values across episodes and states, so it can
///   stitch better behaviour out of the data than any episode shows; its penalty keeps the
///   values of actions the data does not take from being overestimated. It writes a DQN model
///   file (evaluate, export and resume as DQN's), but has no actor to warm-start MAPPO with.

#include <memory>
#include <string>
#include <vector>

#include "agents/dqn/dqn.hpp"
#include "agents/mappo/mappo.hpp"
#include "agents/offline/policy_fit.hpp"
#include "agents/offline/q_fit.hpp"
#include "core/learner.hpp"
#include "core/options.hpp"
#include "io/dataset.hpp"

namespace marlsched {

struct OfflineConfig {
  /// Trajectory files (`marlsched collect`, `marlsched train`, a converted log) or run
  /// directories (their segments), concatenated.
  std::vector<std::string> dataset;
  int epochs = 1;            ///< passes over this rank's transitions per iteration
  int minibatch = 512;       ///< transitions per gradient step (per rank)
  double temperature = 1.0;  ///< awr: weights exp(standardised advantage / temperature)
  double max_weight = 20.0;  ///< awr: cap of the weights
  double cql_alpha = 1.0;    ///< cql: weight of the conservative penalty

  void bind(OptionBinder& b);
  void validate() const;
};

enum class OfflineMethod { kClone, kAwr };

class OfflineLearner final : public Learner {
 public:
  OfflineLearner(OfflineMethod method, const OfflineConfig& cfg, const MappoConfig& nets,
                 const LearnerLayout& layout);

  std::string name() const override { return method_ == OfflineMethod::kClone ? "bc" : "awr"; }
  using Learner::act;
  /// MAPPO's actor acts; the values are NaN (not computed while acting).
  Decisions act(const PolicyInput& in) override;
  /// The policy always acts as in evaluation (it learns from the dataset only).
  void set_training(bool) override {}
  void set_deterministic(bool d) override { mappo_->set_deterministic(d); }
  void record(const StepFeedback&) override {}
  /// Collective: reads the dataset (the first time), then PolicyFit::clone or PolicyFit::awr.
  UpdateStats update(const PolicyInput& last) override;
  const std::vector<StatName>& stat_names() const override;
  /// A MAPPO model file (actor, critic, optimisers, value normaliser, RNGs).
  void save(const std::string& path) const override { mappo_->save(path); }
  void load(const std::string& path) override { mappo_->load(path); }
  void init_from(const std::string& path) override { mappo_->init_from(path); }
  bool shared_parameters_identical() const override;
  std::uint64_t shared_parameter_digest() const override;

  const Mappo& mappo() const { return *mappo_; }

 private:
  OfflineMethod method_;
  OfflineConfig cfg_;
  double team_reward_;
  bool team_targets_;  ///< --team-scope targets
  const EnvSpec& spec_;
  const dist::Comm& comm_;
  int first_, k_;
  std::unique_ptr<Mappo> mappo_;
  PolicyFit fit_;  ///< on mappo_'s networks
  std::unique_ptr<LocalDataset> data_;
  std::vector<float> values_;
};

/// `--algo cql`: DQN's Q-networks (the --dqn options) trained offline on `--dataset` with
/// discrete CQL's penalty (`--cql-alpha`). Acting, it is greedy (ε = --dqn-eps-eval when
/// evaluated without --deterministic); its rollouts only show its online utility.
class CqlLearner final : public Learner {
 public:
  CqlLearner(const OfflineConfig& cfg, const DqnConfig& nets, const LearnerLayout& layout);

  std::string name() const override { return "cql"; }
  using Learner::act;
  Decisions act(const PolicyInput& in) override { return dqn_->act(in); }
  void set_training(bool) override {}
  void set_deterministic(bool d) override { dqn_->set_deterministic(d); }
  void record(const StepFeedback&) override {}
  /// Collective: reads the dataset into the replay buffers (the first time), then
  /// QFit::update.
  UpdateStats update(const PolicyInput& last) override;
  const std::vector<StatName>& stat_names() const override;
  /// A DQN model file without the replay buffers (the dataset is read again on resume).
  void save(const std::string& path) const override { dqn_->save(path); }
  void load(const std::string& path) override { dqn_->load(path); }
  bool shared_parameters_identical() const override { return dqn_->shared_parameters_identical(); }
  std::uint64_t shared_parameter_digest() const override { return dqn_->shared_parameter_digest(); }

  const Dqn& dqn() const { return *dqn_; }

 private:
  OfflineConfig cfg_;
  bool team_targets_;  ///< --team-scope targets
  const EnvSpec& spec_;
  const dist::Comm& comm_;
  int first_, k_;
  std::unique_ptr<Dqn> dqn_;
  QFit fit_;  ///< on dqn_'s networks
  bool loaded_ = false;
};

/// Phase-1 checks of `--dataset` for a run of `num_agents` agents over `ranks` ranks (this is
/// `rank`): every file inspected (io/dataset.hpp, this rank's share of the rows read back), and
/// enough transitions for one minibatch: per rank, or per agent when each agent's network
/// learns from its own transitions alone (`per_agent`: cql without --dqn-share). Throws
/// InputError.
void check_offline_dataset(const OfflineConfig& cfg, const EnvSpec& spec, int num_agents, int rank,
                           int ranks, bool per_agent = false);

}  // namespace marlsched
