#include "agents/registry.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <typeinfo>

#include "agents/nn.hpp"
#include "agents/offline/offline.hpp"
#include "core/error.hpp"

namespace marlsched {

void LearnerFamily::export_policy(const std::vector<const Learner*>&, const std::string&,
                                  const std::string&, bool) const {
  MARLSCHED_THROW(ConfigError, "export: " << name()
                                          << " policies cannot be exported; evaluate them with "
                                             "`marlsched eval --model RUN_DIR`");
}

void LearnerFamily::check_inputs(const LearnerConfigs&, const EnvSpec&, int, int, int) const {}

void LearnerFamily::check_init(const LearnerConfigs&, const EnvSpec&, int, int,
                               const std::string&) const {}

// The table of learners: one row per algorithm, each made by its folder's entry.cpp (adding one
// = a folder under agents/ and a line here). Row order is the order of the options groups in
// --help and config files.
namespace learners {
std::unique_ptr<LearnerFamily> mappo();
std::unique_ptr<LearnerFamily> ippo();
std::unique_ptr<LearnerFamily> dqn();
std::unique_ptr<LearnerFamily> tsdqn();
std::unique_ptr<LearnerFamily> masac();
std::unique_ptr<LearnerFamily> maddpg();
std::unique_ptr<LearnerFamily> es();
std::unique_ptr<LearnerFamily> bc();
std::unique_ptr<LearnerFamily> awr();
std::unique_ptr<LearnerFamily> cql();
}  // namespace learners

namespace {
std::vector<std::unique_ptr<LearnerFamily>>& table() {
  static std::vector<std::unique_ptr<LearnerFamily>> t = [] {
    std::vector<std::unique_ptr<LearnerFamily>> rows;
    for (auto make :
         {learners::mappo, learners::ippo, learners::dqn, learners::tsdqn, learners::masac,
          learners::maddpg, learners::es, learners::bc, learners::awr, learners::cql})
      rows.push_back(make());
    return rows;
  }();
  return t;
}

const LearnerFamily& entry(const std::string& algo) {
  for (const auto& e : table())
    if (e->name() == algo) return *e;
  std::string known;
  for (const auto& e : table()) known += (known.empty() ? "" : ", ") + e->name();
  MARLSCHED_THROW(ConfigError, "unknown algorithm '" << algo << "' (known: " << known << ")");
}
}  // namespace

void register_learner(std::unique_ptr<LearnerFamily> family) {
  MARLSCHED_CHECK(family != nullptr, "register_learner without a learner");
  for (const auto& row : table())
    MARLSCHED_REQUIRE(row->name() != family->name(),
                      "a learner named '" << family->name() << "' is registered");
  table().push_back(std::move(family));
}

LearnerConfigs::LearnerConfigs() {
  for (const auto& row : table())
    for (const auto& make : row->options()) {
      auto group = make();
      const LearnerOptions& made = *group;
      const bool known = std::any_of(groups_.begin(), groups_.end(), [&](const auto& g) {
        const LearnerOptions& have = *g;
        return typeid(have) == typeid(made);
      });
      if (!known) groups_.push_back(std::move(group));
    }
}

LearnerConfigs::LearnerConfigs(const LearnerConfigs& other) : device(other.device) {
  for (const auto& g : other.groups_) groups_.push_back(g->clone());
}

LearnerConfigs& LearnerConfigs::operator=(const LearnerConfigs& other) {
  if (this != &other) {
    LearnerConfigs copy(other);
    *this = std::move(copy);
  }
  return *this;
}

void LearnerConfigs::bind(OptionBinder& b) {
  b.group("Agent: every learner");
  b.add("device", device,
        "where the learner's networks run: cpu, cuda (each rank takes its node-local rank's "
        "GPU) or cuda:N; CUDA needs marlsched built against a CUDA libtorch");
  for (auto& g : groups_) g->bind(b);
}

std::string learner_description(const std::string& algo) {
  return entry(algo).description();
}

std::vector<std::string> learner_names() {
  std::vector<std::string> v;
  for (const auto& e : table()) v.push_back(e->name());
  return v;
}

void LearnerConfigs::validate(const std::string& algo) const {
  const auto& e = entry(algo);
  nn::check_device(device);
  e.validate(*this);
  // An option with no effect is refused: only a learner that reads training input files (the
  // offline learners) reads --dataset.
  if (!e.reads_inputs() && !get<OfflineConfig>().dataset.empty()) {
    std::string readers;
    for (const auto& row : table())
      if (row->reads_inputs()) readers += (readers.empty() ? "" : ", ") + row->name();
    MARLSCHED_THROW(ConfigError, "--dataset is read by the offline learners ("
                                     << readers << "); --algo " << algo
                                     << " learns online and would ignore it");
  }
}

void LearnerConfigs::check_env(const std::string& algo, const EnvSpec& spec) const {
  validate(algo);
  entry(algo).check_env(*this, spec);
}

void LearnerConfigs::check_copies(const std::string& algo, int copies) const {
  require_copy_groups(algo, entry(algo).copy_group(*this), copies);
}

void LearnerConfigs::check_inputs(const std::string& algo, const EnvSpec& spec, int num_agents,
                                  int rank, int ranks) const {
  const auto& e = entry(algo);
  if (e.reads_inputs()) e.check_inputs(*this, spec, num_agents, rank, ranks);
}

void LearnerConfigs::check_init(const std::string& algo, const EnvSpec& spec, int num_agents,
                                int local_agents, const std::string& model) const {
  const auto& e = entry(algo);
  std::string can;
  for (const auto& row : table())
    if (row->warm_starts()) can += (can.empty() ? "" : ", ") + row->name();
  MARLSCHED_REQUIRE(e.warm_starts(), "--init-from: " << algo
                                                     << " cannot start from a trained model (these "
                                                        "can: "
                                                     << can << ")");
  e.check_init(*this, spec, num_agents, local_agents, model);
}

int LearnerConfigs::rollout_steps(const std::string& algo, const EnvSpec& spec) const {
  return entry(algo).rollout_steps(*this, spec);
}

double LearnerConfigs::team_reward(const std::string& algo) const {
  return entry(algo).team_reward(*this);
}

bool LearnerConfigs::shared(const std::string& algo) const {
  return entry(algo).shared(*this);
}

std::vector<NamedBaseline> LearnerConfigs::baselines(const std::string& algo) const {
  return entry(algo).baselines(*this);
}

std::unique_ptr<Learner> make_learner(const std::string& algo, const LearnerConfigs& cfg,
                                      const LearnerLayout& layout) {
  cfg.validate(algo);
  return entry(algo).make(cfg, layout);
}

std::unique_ptr<Learner> make_learner(const std::string& algo, const LearnerConfigs& cfg,
                                      const EnvSpec& spec, const dist::Comm& comm, int num_agents,
                                      int first_agent, int local_agents, int copies,
                                      std::uint64_t seed, BaselineMaker baselines) {
  return make_learner(algo, cfg,
                      {&spec, &comm, num_agents, first_agent, local_agents, copies, seed, false,
                       std::move(baselines)});
}

LearnerRecipe learner_recipe(const std::string& algo, const LearnerConfigs& cfg,
                             const EnvSpec& spec, BaselineMaker baselines) {
  cfg.validate(algo);
  LearnerRecipe r;
  r.rollout_steps = cfg.rollout_steps(algo, spec);
  r.team_reward = cfg.team_reward(algo);
  r.make = [algo, cfg, baselines](const LearnerLayout& layout) {
    LearnerLayout l = layout;
    l.baselines = baselines;
    return make_learner(algo, cfg, l);
  };
  return r;
}

void export_learners(const std::string& algo, const std::vector<const Learner*>& ranks,
                     const std::string& path, const std::string& metadata, bool with_critic) {
  entry(algo).export_policy(ranks, path, metadata, with_critic);
}

}  // namespace marlsched
