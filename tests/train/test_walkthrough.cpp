// The README's "Add an env" and "Add a learner" walk-throughs, kept true. A whole env defined
// in this file (its config, spec, shard, factory and one baseline) joins by one row,
// register_env, and then the framework trains MAPPO on it, checkpoints it and evaluates it
// against its baseline, knowing nothing else of it. A whole learner defined here (its options
// and the Learner) joins by one row, register_learner, and then trains on that env, binds its
// flags, saves and loads itself. Runs at 1, 2 and 4 ranks.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "agents/mappo/mappo.hpp"
#include "agents/registry.hpp"
#include "core/error.hpp"
#include "core/file.hpp"
#include "core/rng.hpp"
#include "core/serialize.hpp"
#include "envs/baselines.hpp"
#include "envs/registry.hpp"
#include "test_util.hpp"
#include "train/evaluate.hpp"
#include "train/trainer.hpp"

using namespace marlsched;

namespace {

// 1. The config: binds its own options (--echo-steps) and validates them.
struct EchoConfig : EnvConfig {
  int steps = 6;
  void bind(OptionBinder& b) override {
    b.group("Env: echo (the walk-through's env)");
    b.add("echo-steps", steps, "echo: steps per episode");
  }
  void validate(int num_agents) const override {
    MARLSCHED_REQUIRE(steps >= 1, "--echo-steps must be >= 1, got " << steps);
    MARLSCHED_REQUIRE(num_agents >= 1, "echo needs an agent");
  }
};

// 2. The spec: each agent sees one bit and is paid 1 for echoing it.
EnvSpec echo_spec(const EchoConfig& cfg) {
  EnvSpec s;
  s.name = "echo";
  s.obs_fields = {"bit"};
  s.num_public = 1;
  s.action_names = {"zero", "one"};
  s.reward_components = {"hit"};
  s.episode_length = cfg.steps;
  return s;
}

// 3. The shard: one agent's part of a world, with its whole state saved for checkpoints.
class EchoShard final : public Shard {
 public:
  explicit EchoShard(std::shared_ptr<const EnvSpec> spec) : spec_(std::move(spec)) {}
  const EnvSpec& spec() const override { return *spec_; }
  void reset(std::uint64_t, std::uint64_t shard_seed) override {
    rng_.seed(shard_seed);
    step_ = 0;
    bit_ = static_cast<int>(rng_.below(2));
  }
  void observe(float* out) const override { out[0] = static_cast<float>(bit_); }
  void act(int action, const GlobalObs&, std::vector<WorkRecord>&) override {
    hit_ = action == bit_ ? 1.0 : 0.0;
  }
  StepOutcome advance() override {
    StepOutcome o;
    o.reward = hit_;
    o.components = {hit_};
    hits_ += hit_;
    o.truncated = ++step_ >= spec_->episode_length;
    bit_ = static_cast<int>(rng_.below(2));
    return o;
  }
  void receive(const WorkRecord&) override { MARLSCHED_THROW(InputError, "echo sends no work"); }
  std::map<std::string, double> counters() const override { return {{"hits", hits_}}; }
  // Checkpoints: one field list serves both directions (core/serialize.hpp); the header
  // (format magic, agent, random generators) comes from core/env.hpp.
  std::vector<std::byte> save_state() const override {
    auto w = shard_state_writer(kMagic, 0, {&rng_});
    state_fields(*this, w);
    return w.bytes();
  }
  void load_state(const std::vector<std::byte>& state) override {
    auto r = shard_state_reader(state, "echo shard state", kMagic, 0, {&rng_});
    state_fields(*this, r);
    r.finish();
  }

 private:
  static constexpr std::uint32_t kMagic = 0xEC40'0001;
  template <class Self, class IO>
  static void state_fields(Self& s, IO& io) {
    io(s.step_, s.bit_, s.hit_, s.hits_);
  }
  std::shared_ptr<const EnvSpec> spec_;
  Rng rng_;
  int step_ = 0, bit_ = 0;
  double hit_ = 0, hits_ = 0;
};

// 4. The factory: what a run builds its shards from.
class EchoFactory final : public EnvFactory {
 public:
  explicit EchoFactory(const EchoConfig& cfg) : spec_(std::make_shared<EnvSpec>(echo_spec(cfg))) {}
  const EnvSpec& spec() const override { return *spec_; }
  std::unique_ptr<Shard> make_shard(int) const override {
    return std::make_unique<EchoShard>(spec_);
  }

 private:
  std::shared_ptr<const EnvSpec> spec_;
};

// 5. A baseline: echo the bit (the optimum, 1 per agent-step).
class EchoBaseline final : public Policy {
 public:
  std::string name() const override { return "echo-bit"; }
  void act(const PolicyInput& in, std::vector<int>& actions) override {
    actions.resize(in.global.size() * static_cast<std::size_t>(in.local_agents));
    for (std::size_t c = 0; c < in.global.size(); ++c)
      for (int k = 0; k < in.local_agents; ++k)
        actions[c * static_cast<std::size_t>(in.local_agents) + static_cast<std::size_t>(k)] =
            static_cast<int>(in.global[c].row(in.first_agent + k)[0]);
  }
};

// 6. The row.
void register_echo() {
  static bool done = false;
  if (done) return;
  done = true;
  register_env(
      {"echo", "the README's walk-through env: echo your bit",
       [] { return std::make_unique<EchoConfig>(); },
       [](const EnvConfig& c, int) -> std::unique_ptr<EnvFactory> {
         return std::make_unique<EchoFactory>(dynamic_cast<const EchoConfig&>(c));
       },
       []() -> const std::vector<std::string>& {
         static const std::vector<std::string> names = {"echo-bit"};
         return names;
       },
       [](const std::string& name, const EnvSpec&, std::uint64_t) -> std::unique_ptr<Policy> {
         if (name == "echo-bit") return std::make_unique<EchoBaseline>();
         return nullptr;
       }});
}

// ---- The learner walk-through ----

// 1. Its options group: binds its own flags (--tally-*) and validates them.
struct TallyConfig {
  double epsilon = 0.2;
  int rollout_steps = 12;
  void bind(OptionBinder& b) {
    b.group("Agent: tally (the walk-through's learner)");
    b.add("tally-epsilon", epsilon, "tally: probability of a random action while training")
        .in(0, 1);
    b.add("tally-rollout-steps", rollout_steps, "tally: environment steps per update").at_least(1);
  }
  void validate() const { check_declared(*this); }
};

// 2. The learner: the mean reward of each (first observation field, action) pair, shared by
// every agent and summed over the ranks at each update; it acts greedily on it, exploring
// with probability epsilon while training.
class Tally final : public Learner {
 public:
  Tally(const TallyConfig& cfg, const dist::Comm& comm) : cfg_(cfg), comm_(comm) {}
  std::string name() const override { return "tally"; }
  using Learner::act;
  Decisions act(const PolicyInput& in) override {
    const auto rows = static_cast<std::size_t>(in.copies * in.local_agents);
    Decisions out;
    auto& actions = out.actions;
    actions.assign(rows, 0);
    out.log_probs.assign(rows, 0.f);  // (a simplification: the walk-through records none)
    out.values.assign(rows, 0.f);
    seen_.assign(rows, 0);
    for (int c = 0; c < in.copies; ++c)
      for (int k = 0; k < in.local_agents; ++k) {
        const int agent = in.first_agent + k;
        const auto r = static_cast<std::size_t>(c * in.local_agents + k);
        const int seen = in.global[static_cast<std::size_t>(c)].row(agent)[0] > 0.5f ? 1 : 0;
        const bool explore = training_ && in.draw(c, agent, kExploreStream) < cfg_.epsilon;
        seen_[r] = seen;
        actions[r] = explore ? in.draw_below(c, agent, kActionStream, 2)
                             : (mean(seen, 1) > mean(seen, 0) ? 1 : 0);
      }
    acted_ = actions;
    return out;
  }
  void set_training(bool t) override { training_ = t; }
  void set_deterministic(bool) override {}
  void record(const StepFeedback& fb) override {
    for (std::size_t r = 0; r < acted_.size(); ++r) {
      const auto cell = static_cast<std::size_t>(2 * seen_[r] + acted_[r]);
      pending_[cell] += fb.reward[r];
      pending_[4 + cell] += 1;
    }
  }
  UpdateStats update(const PolicyInput&) override {
    comm_.allreduce_sum(pending_.data(), 8);  // the same table on every rank
    double reward = 0, n = 0;
    for (std::size_t i = 0; i < 4; ++i) {
      table_[i] += pending_[i];
      table_[4 + i] += pending_[4 + i];
      reward += pending_[i];
      n += pending_[4 + i];
    }
    pending_.fill(0);
    UpdateStats st;
    st.values = {n > 0 ? reward / n : 0.0};
    return st;
  }
  const std::vector<StatName>& stat_names() const override {
    static const std::vector<StatName> names = {{"tally_reward", "tally/reward"}};
    return names;
  }
  void save(const std::string& path) const override {
    std::ostringstream o;
    o.precision(17);
    for (double v : table_) o << v << ' ';
    write_file_atomic(path, o.str());
  }
  void load(const std::string& path) override {
    std::ifstream in(path);
    for (double& v : table_) in >> v;
    MARLSCHED_REQUIRE_INPUT(static_cast<bool>(in), "tally model '" << path << "' is damaged");
  }
  bool shared_parameters_identical() const override {
    const std::uint64_t mine = shared_parameter_digest();  // as dist::parameters_identical
    return comm_.allreduce_min(mine) == mine && comm_.allreduce_max(mine) == mine;
  }
  std::uint64_t shared_parameter_digest() const override {
    return fnv1a64(table_.data(), sizeof table_);
  }
  double mean(int seen, int action) const {
    const auto cell = static_cast<std::size_t>(2 * seen + action);
    return table_[4 + cell] > 0 ? table_[cell] / table_[4 + cell] : 0.0;
  }

 private:
  TallyConfig cfg_;
  const dist::Comm& comm_;
  bool training_ = true;
  std::array<double, 8> table_{}, pending_{};  // reward sums, then counts, of (seen, action)
  std::vector<int> seen_, acted_;
};

// 3. The row: what differs from LearnerFamily's defaults (a shared table, each agent's own
// reward, no export, no warm start).
class TallyFamily final : public LearnerFamily {
 public:
  std::string name() const override { return "tally"; }
  std::string description() const override {
    return "the README's walk-through learner: a shared table of mean rewards";
  }
  std::vector<OptionsMaker> options() const override { return {options_of<TallyConfig>()}; }
  void validate(const LearnerConfigs& c) const override { c.get<TallyConfig>().validate(); }
  void check_env(const LearnerConfigs&, const EnvSpec& spec) const override {
    MARLSCHED_REQUIRE(spec.num_actions() == 2, "tally needs two actions");
  }
  int rollout_steps(const LearnerConfigs& c, const EnvSpec&) const override {
    return c.get<TallyConfig>().rollout_steps;
  }
  std::unique_ptr<Learner> make(const LearnerConfigs& c, const LearnerLayout& l) const override {
    return std::make_unique<Tally>(c.get<TallyConfig>(), *l.comm);
  }
};

void register_tally() {
  static bool done = false;
  if (done) return;
  done = true;
  register_learner(std::make_unique<TallyFamily>());
}

// A run directory for a test's training, named by rank 0 and shared with every rank.
std::string run_dir(const dist::Comm& comm, const std::string& what) {
  return test::shared_temp_dir(comm, "walkthrough-" + what);
}

}  // namespace

TEST(WalkThrough, AnEnvDefinedOutsideEnvsJoinsByOneRowAndTrainsAndEvaluates) {
  register_echo();
  auto comm = dist::Comm::world();
  const auto& entry = find_env("echo");
  EXPECT_EQ(heuristic_names("echo"), std::vector<std::string>{"echo-bit"});
  auto cfg = entry.make_config();
  const int k = 2, n = k * comm.size();
  cfg->validate(n);
  const auto factory = entry.make_factory(*cfg, n);

  const std::string dir = run_dir(comm, "env");
  RunConfig run;
  run.env = "echo";
  run.iterations = 4;
  run.agents_per_rank = k;
  run.envs_per_rank = 2;
  run.run_dir = dir;
  run.quiet = true;
  run.checkpoint_every = 2;
  run.traj.every = 2;
  LearnerConfigs learners;
  learners.get<MappoConfig>().rollout_steps = 12;
  const auto sum =
      train(run, learner_recipe("mappo", learners, factory->spec()), *factory, comm, "# echo\n");
  EXPECT_EQ(sum.iterations, 4);
  EXPECT_TRUE(sum.parameters_identical);

  // Its baseline, found through its row, evaluated by the framework: 1 per agent-step.
  auto baseline = make_heuristic("echo-bit", factory->spec(), 0);
  EvalSettings es;
  es.agents_per_rank = k;
  es.copies = 2;
  es.episodes = 2;
  const EvalRow row = evaluate(*baseline, *factory, comm, es);
  EXPECT_DOUBLE_EQ(row.utility, 6.0 * n);
  EXPECT_THROW(make_heuristic("random", factory->spec(), 0), ConfigError);
  if (comm.is_root()) {
    std::ifstream metrics(dir + "/metrics.csv");
    std::string header, line;
    std::getline(metrics, header);
    EXPECT_NE(header.find("hit_per_slot"), std::string::npos) << header;
    int rows = 0;
    while (std::getline(metrics, line)) ++rows;
    EXPECT_EQ(rows, 4);
    EXPECT_TRUE(std::filesystem::exists(dir + "/trajectories/segment-000.h5"));
    std::filesystem::remove_all(dir);
  }
  comm.barrier();
  EXPECT_THROW(register_env(entry), ConfigError);  // a name is registered once
}

TEST(WalkThrough, ALearnerDefinedOutsideAgentsJoinsByOneRowAndTrainsAndEvaluates) {
  register_echo();
  register_tally();
  const auto names = learner_names();
  EXPECT_EQ(names.back(), "tally");
  EXPECT_THROW(register_learner(std::make_unique<TallyFamily>()),
               ConfigError);  // a name is registered once

  // Its options group is bound with every learner's, and its validation runs.
  LearnerConfigs learners;
  OptionBinder declared;
  learners.bind(declared);
  std::vector<std::string> flags;
  for (const Option& o : declared.declared()) flags.push_back(o.flag());
  EXPECT_NE(std::find(flags.begin(), flags.end(), "tally-epsilon"), flags.end());
  EXPECT_NE(std::find(flags.begin(), flags.end(), "lr-actor"), flags.end());
  learners.get<TallyConfig>().epsilon = 2;
  try {
    learners.validate("tally");
    ADD_FAILURE() << "an epsilon of 2 was accepted";
  } catch (const ConfigError& e) {  // the message comes from the declaration
    EXPECT_STREQ(e.what(), "--tally-epsilon must be in [0, 1], got 2");
  }
  learners.get<TallyConfig>().epsilon = 0.2;

  // The framework trains it on the walk-through's env, checkpoints it and saves its model.
  auto comm = dist::Comm::world();
  auto cfg = find_env("echo").make_config();
  const int k = 2, n = k * comm.size();
  const auto factory = find_env("echo").make_factory(*cfg, n);
  const std::string dir = run_dir(comm, "learner");
  RunConfig run;
  run.env = "echo";
  run.algo = "tally";
  run.iterations = 6;
  run.agents_per_rank = k;
  run.envs_per_rank = 2;
  run.run_dir = dir;
  run.quiet = true;
  run.checkpoint_every = 3;
  run.traj.every = 0;
  const auto sum =
      train(run, learner_recipe("tally", learners, factory->spec()), *factory, comm, "# tally\n");
  EXPECT_EQ(sum.iterations, 6);
  EXPECT_TRUE(sum.parameters_identical);

  // Loaded from its model file and evaluated greedily, it echoes every bit: 1 per agent-step.
  auto learned =
      make_learner("tally", learners, factory->spec(), comm, n, k * comm.rank(), k, 2, 1);
  learned->load(model_path(dir, comm.rank()));
  learned->set_training(false);
  EvalSettings es;
  es.agents_per_rank = k;
  es.copies = 2;
  es.episodes = 2;
  EXPECT_DOUBLE_EQ(evaluate(*learned, *factory, comm, es).utility, 6.0 * n);
  comm.barrier();
  if (comm.is_root()) std::filesystem::remove_all(dir);
  comm.barrier();
}
