#include "agents/bc/bc.hpp"

#include <limits>

#include "core/error.hpp"

namespace marlsched {

void BcConfig::bind(OptionBinder& b) {
  b.group("Agent: behaviour cloning (bc; the actor's options are MAPPO's)");
  b.add("dataset", dataset,
        "trajectory files or run directories to learn from (marlsched collect, a training run, "
        "a converted log), concatenated");
  b.add("bc-epochs", epochs, "passes over the dataset per iteration");
  b.add("bc-minibatch", minibatch, "transitions per gradient step, per rank");
}

void BcConfig::validate() const {
  MARLSCHED_REQUIRE(!dataset.empty(), "bc learns from a dataset: give --dataset FILE_OR_RUN_DIR");
  MARLSCHED_REQUIRE(epochs >= 1, "--bc-epochs must be at least 1, got " << epochs);
  MARLSCHED_REQUIRE(minibatch >= 1, "--bc-minibatch must be at least 1, got " << minibatch);
}

void check_bc_dataset(const BcConfig& cfg, const EnvSpec& spec, int num_agents, int rank,
                      int ranks) {
  std::int64_t world_steps = 0;
  for (const auto& f : dataset_files(cfg.dataset)) {
    const auto info = inspect_dataset(f, spec, num_agents, rank, ranks);
    world_steps += info.rows * info.worlds;
  }
  const std::int64_t per_rank = world_steps * (num_agents / ranks);
  MARLSCHED_REQUIRE_INPUT(per_rank >= cfg.minibatch, "the dataset holds "
                                                         << per_rank
                                                         << " transitions per rank, fewer than one "
                                                            "minibatch (--bc-minibatch "
                                                         << cfg.minibatch << ")");
}

BehaviourCloning::BehaviourCloning(const BcConfig& cfg, const MappoConfig& actor,
                                   const EnvSpec& spec, const dist::Comm& comm, int num_agents,
                                   int first_agent, int local_agents, int copies,
                                   std::uint64_t seed)
    : cfg_(cfg),
      spec_(spec),
      comm_(comm),
      first_(first_agent),
      k_(local_agents),
      mappo_(std::make_unique<Mappo>(actor, spec, comm, num_agents, first_agent, local_agents,
                                     copies, seed)),
      values_(static_cast<std::size_t>(copies * local_agents),
              std::numeric_limits<float>::quiet_NaN()) {
  cfg_.validate();
  mappo_->set_training(false);
}

void BehaviourCloning::act(const PolicyInput& in, std::vector<int>& actions) {
  mappo_->act(in, actions);
}

UpdateStats BehaviourCloning::update(const PolicyInput&) {
  if (!data_)
    data_ = std::make_unique<LocalDataset>(
        read_dataset(comm_, dataset_files(cfg_.dataset), spec_, first_, k_));
  return mappo_->clone(*data_, cfg_.epochs, cfg_.minibatch);
}

const std::vector<StatName>& BehaviourCloning::stat_names() const {
  static const std::vector<StatName> names = {{"bc_loss", "loss/bc"},
                                              {"bc_accuracy", "policy/bc_accuracy"},
                                              {"grad_norm_actor", "grad_norm/actor"}};
  return names;
}

bool BehaviourCloning::shared_parameters_identical() const {
  return mappo_->shared_parameters_identical();
}

std::uint64_t BehaviourCloning::shared_parameter_digest() const {
  return mappo_->shared_parameter_digest();
}

}  // namespace marlsched
