#include "agents/offline/offline.hpp"

#include <limits>

#include "core/error.hpp"

namespace marlsched {

void OfflineConfig::bind(OptionBinder& b) {
  b.group("Agent: offline learning (bc, awr: the networks' options are MAPPO's; cql: DQN's)");
  b.add("dataset", dataset,
        "trajectory files or run directories to learn from (marlsched collect, a training run, "
        "a converted log), concatenated");
  b.add("offline-epochs", epochs, "passes over the dataset per iteration").at_least(1);
  b.add("offline-minibatch", minibatch, "transitions per gradient step, per rank").at_least(1);
  b.add("awr-temperature", temperature,
        "awr: actor weights exp(standardised advantage / temperature)")
      .positive();
  b.add("awr-max-weight", max_weight, "awr: the largest actor weight").at_least(1);
  b.add("cql-alpha", cql_alpha,
        "cql: weight of the conservative penalty logsumexp Q(s,.) - Q(s, a_data)")
      .at_least(0);
}

void OfflineConfig::validate() const {
  check_declared(*this);
  MARLSCHED_REQUIRE(!dataset.empty(),
                    "offline learning needs a dataset: give --dataset "
                    "FILE_OR_RUN_DIR");
}

void check_offline_dataset(const OfflineConfig& cfg, const EnvSpec& spec, int num_agents, int rank,
                           int ranks, bool per_agent) {
  std::int64_t world_steps = 0;
  for (const auto& f : dataset_files(cfg.dataset)) {
    const auto info = inspect_dataset(f, spec, num_agents, rank, ranks);
    world_steps += info.rows * info.worlds;
  }
  const std::int64_t each = world_steps * (per_agent ? 1 : num_agents / ranks);
  MARLSCHED_REQUIRE_INPUT(each >= cfg.minibatch,
                          "the dataset holds "
                              << each
                              << (per_agent ? " transitions per agent" : " transitions per rank")
                              << ", fewer than one minibatch (--offline-minibatch " << cfg.minibatch
                              << ")");
}

OfflineLearner::OfflineLearner(OfflineMethod method, const OfflineConfig& cfg,
                               const MappoConfig& nets, const LearnerLayout& l)
    : method_(method),
      cfg_(cfg),
      team_reward_(nets.team_reward),
      team_targets_(l.team_targets),
      spec_(*l.spec),
      comm_(*l.comm),
      first_(l.first_agent),
      k_(l.local_agents),
      mappo_(std::make_unique<Mappo>(nets, l)),
      fit_(*mappo_),
      values_(static_cast<std::size_t>(l.copies * l.local_agents),
              std::numeric_limits<float>::quiet_NaN()) {
  cfg_.validate();
  MARLSCHED_REQUIRE(method_ != OfflineMethod::kAwr || nets.critic != CriticKind::kPooled,
                    "awr fits the concat critic; --critic pooled is not supported offline");
  mappo_->set_training(false);
}

Decisions OfflineLearner::act(const PolicyInput& in) {
  Decisions out = mappo_->act(in);
  out.values = values_;
  return out;
}

UpdateStats OfflineLearner::update(const PolicyInput&) {
  if (!data_)
    data_ = std::make_unique<LocalDataset>(
        read_dataset(comm_, dataset_files(cfg_.dataset), spec_, first_, k_));
  if (method_ == OfflineMethod::kClone) return fit_.clone(*data_, cfg_.epochs, cfg_.minibatch);
  PolicyFit::AwrOptions o;
  o.epochs = cfg_.epochs;
  o.minibatch = cfg_.minibatch;
  o.temperature = cfg_.temperature;
  o.max_weight = cfg_.max_weight;
  o.team_reward = team_reward_;
  o.team_targets = team_targets_;
  return fit_.awr(*data_, o);
}

const std::vector<StatName>& OfflineLearner::stat_names() const {
  static const std::vector<StatName> bc = {{"bc_loss", "loss/bc"},
                                           {"bc_accuracy", "policy/bc_accuracy"},
                                           {"grad_norm_actor", "grad_norm/actor"}};
  static const std::vector<StatName> awr = {{"awr_loss", "loss/awr"},
                                            {"awr_accuracy", "policy/awr_accuracy"},
                                            {"value_loss", "loss/value"},
                                            {"mean_weight", "policy/mean_weight"},
                                            {"grad_norm_actor", "grad_norm/actor"},
                                            {"grad_norm_critic", "grad_norm/critic"}};
  return method_ == OfflineMethod::kClone ? bc : awr;
}

namespace {

DqnConfig offline_dqn(DqnConfig c, double alpha) {
  c.offline = true;
  c.cql_alpha = alpha;
  return c;
}

}  // namespace

CqlLearner::CqlLearner(const OfflineConfig& cfg, const DqnConfig& nets, const LearnerLayout& l)
    : cfg_(cfg),
      team_targets_(l.team_targets),
      spec_(*l.spec),
      comm_(*l.comm),
      first_(l.first_agent),
      k_(l.local_agents),
      dqn_(std::make_unique<Dqn>(offline_dqn(nets, cfg.cql_alpha), l)),
      fit_(*dqn_) {
  cfg_.validate();
  dqn_->set_training(false);
}

UpdateStats CqlLearner::update(const PolicyInput&) {
  if (!loaded_) {
    fit_.use_dataset(read_dataset(comm_, dataset_files(cfg_.dataset), spec_, first_, k_),
                     team_targets_);
    loaded_ = true;
  }
  return fit_.update(cfg_.epochs, cfg_.minibatch);
}

const std::vector<StatName>& CqlLearner::stat_names() const {
  static const std::vector<StatName> names = {{"td_loss", "loss/td"},
                                              {"cql_gap", "loss/cql_gap"},
                                              {"q_mean", "q/mean"},
                                              {"grad_norm", "grad_norm/q"}};
  return names;
}

bool OfflineLearner::shared_parameters_identical() const {
  return mappo_->shared_parameters_identical();
}

std::uint64_t OfflineLearner::shared_parameter_digest() const {
  return mappo_->shared_parameter_digest();
}

}  // namespace marlsched
