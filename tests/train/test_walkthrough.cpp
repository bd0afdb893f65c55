// The README's "Add an env" walk-through, kept true: a whole env defined in this file (its
// config, spec, shard, factory and one baseline) joins by one row, register_env, and then the
// framework trains MAPPO on it, checkpoints it and evaluates it against its baseline, knowing
// nothing else of it. Runs at 1, 2 and 4 ranks.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "agents/registry.hpp"
#include "core/error.hpp"
#include "core/rng.hpp"
#include "core/serialize.hpp"
#include "envs/baselines.hpp"
#include "envs/registry.hpp"
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

  std::string dir;
  if (comm.is_root())
    dir = (std::filesystem::temp_directory_path() /
           ("marlsched-walkthrough-" + std::to_string(::getpid())))
              .string();
  int len = static_cast<int>(dir.size());
  comm.bcast(&len, 1);
  dir.resize(static_cast<std::size_t>(len));
  MPI_Bcast(dir.data(), len, MPI_CHAR, 0, comm.raw());
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
  learners.mappo.rollout_steps = 12;
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
