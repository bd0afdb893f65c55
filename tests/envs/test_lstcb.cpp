#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <vector>

#include "envs/lstcb/lstcb.hpp"
#include "envs/registry.hpp"
#include "test_util.hpp"
#include "train/world.hpp"

using namespace marlsched;

namespace {

/// The action index of a long choice (batch, clock, steer) and a short mode.
int action_of(const EnvSpec& spec, const std::string& long_name, const std::string& short_name) {
  for (int a = 0; a < spec.num_actions(); ++a)
    if (spec.action_names[static_cast<std::size_t>(a)] == long_name + "|" + short_name) return a;
  ADD_FAILURE() << "no action " << long_name << "|" << short_name;
  return 0;
}

}  // namespace

TEST(Lstcb, SpecIsFactoredIntoLongAndShortHeads) {
  lstcb::Config cfg;
  const auto spec = lstcb::make_spec(cfg, 4);
  ASSERT_EQ(spec.action_heads.size(), 2u);
  EXPECT_EQ(spec.action_heads[0], 5 * 3 * 2);  // batch sizes x clocks x steering shares
  // wait, timeout, dispatch, slack, single; dispatch and slack with overflow to either neighbour
  EXPECT_EQ(spec.action_heads[1], 5 + 2 * 2);
  EXPECT_EQ(spec.num_actions(), spec.action_heads[0] * spec.action_heads[1]);
  EXPECT_EQ(spec.long_every, cfg.window_slots);
  EXPECT_EQ(spec.windows, 3);  // 5 ms slots, 2 ms links
  EXPECT_EQ(spec.action_names[0], "B1,f0.6,steer0%|wait");
  EXPECT_EQ(spec.action_names.back(), "B32,f1,steer25%|slack+overflow>nbr2");
  EXPECT_EQ(spec.action_names[5], "B1,f0.6,steer0%|dispatch+overflow>nbr1");
}

namespace {
/// Server 1 of two (no own arrivals) gets three requests that server 0 received at t = 0; they
/// arrive after the 2 ms link at t = 2 and their answers travel 2 ms back. Runs `slots` slots of
/// one action and returns the counters and the per-slot reward components.
struct Scripted {
  std::map<std::string, double> counters;
  std::vector<std::vector<double>> components;
  std::size_t sent = 0;  ///< work records handed to other servers
};
Scripted run_scripted(lstcb::Config cfg, const std::string& long_name,
                      const std::string& short_name, int slots) {
  cfg.rates = {0, 0};
  cfg.neighbours = 1;
  cfg.validate(2);
  auto factory = find_env("lstcb").make_factory(cfg, 2);
  const EnvSpec& spec = factory->spec();
  auto s1 = factory->make_shard(1);
  s1->reset(1, 2);
  std::vector<lstcb::Wire> ws(3);
  for (int i = 0; i < 3; ++i) {
    ws[static_cast<std::size_t>(i)].t_at = 2.0;
    ws[static_cast<std::size_t>(i)].r.t0 = 0.0;
    ws[static_cast<std::size_t>(i)].r.id = static_cast<std::uint64_t>(i);
    ws[static_cast<std::size_t>(i)].r.origin = 0;
  }
  WorkRecord rec;
  rec.dest = 1;
  rec.payload.resize(ws.size() * sizeof(lstcb::Wire));
  std::memcpy(rec.payload.data(), ws.data(), rec.payload.size());
  s1->receive(rec);
  const int a = action_of(spec, long_name, short_name);
  std::vector<WorkRecord> out;
  GlobalObs none;
  Scripted r;
  for (int slot = 0; slot < slots; ++slot) {
    s1->act(a, none, out);
    for (int w = 0; w < spec.windows; ++w) s1->window(w, out);
    r.components.push_back(s1->advance().components);
  }
  r.counters = s1->counters();
  r.sent = out.size();
  return r;
}
constexpr double kBatch3Ms = 6.6317 + 3 * 0.97143;  // GoogLeNet, Titan X, full clock
}  // namespace

TEST(Lstcb, BatchLatencyEnergyAndLittlesLawAreAccountedExactly) {
  const auto r = run_scripted(lstcb::Config{}, "B4,f1,steer0%", "dispatch", 4);  // 20 ms
  // The first request starts alone at t = 2 (7.60 ms); the two others wait and run together
  // (8.57 ms) from 9.60 to 18.17. Titan X GoogLeNet: 6.6317 + 0.97143·b ms at 250 W.
  const double t1 = 6.6317 + 0.97143, t2 = 6.6317 + 2 * 0.97143;
  EXPECT_EQ(r.sent, 0u);
  const auto& c = r.counters;
  EXPECT_EQ(c.at("served"), 3);
  EXPECT_EQ(c.at("batches"), 2);
  EXPECT_NEAR(c.at("busy_ms"), t1 + t2, 1e-9);
  EXPECT_NEAR(c.at("energy_j"), (250.0 * (t1 + t2) + 15.0 * (20.0 - t1 - t2)) / 1000.0, 1e-9);
  // Latency at the origin: completion + 2 ms back.
  EXPECT_NEAR(c.at("latency_ms_sum"), (2 + t1 + 2) + 2 * (2 + t1 + t2 + 2), 1e-9);
  EXPECT_EQ(c.at("violations"), 0);
  // Little: ∫N dt = Σ time in the server.
  EXPECT_NEAR(c.at("area_ms"), t1 + 2 * (t1 + t2), 1e-9);
  EXPECT_NEAR(c.at("left_ms"), c.at("area_ms"), 1e-9);
  EXPECT_EQ(c.at("here_ms"), 0);
}

TEST(Lstcb, SlackWithOverflowBatchesLazilyAndHandsTheQueueBeyondOneBatchToTheNeighbour) {
  // Cap 1: the first request starts at t = 2 (until 9.60); at the next slot start (t = 5) two
  // wait, so the newest goes to the neighbour and the other runs when the GPU is free.
  const auto r = run_scripted(lstcb::Config{}, "B1,f1,steer0%", "slack+overflow>nbr1", 4);
  EXPECT_EQ(r.counters.at("served"), 2);
  EXPECT_EQ(r.counters.at("steered"), 1);
  EXPECT_EQ(r.counters.at("batches"), 2);
  EXPECT_GE(r.sent, 1u);
  EXPECT_EQ(r.counters.at("violations"), 0);
}

TEST(Lstcb, SlackModeStartsTheBatchAtTheLastMomentThatMeetsTheSlo) {
  lstcb::Config cfg;  // SLO 50 ms, 2 ms back to the origin: due at 48, start at 48 - 9.55
  auto r = run_scripted(cfg, "B4,f1,steer0%", "slack", 12);
  EXPECT_EQ(r.counters.at("batches"), 1);
  EXPECT_EQ(r.counters.at("served"), 3);
  EXPECT_NEAR(r.counters.at("latency_ms_sum"), 3 * 50.0, 1e-9);
  EXPECT_EQ(r.counters.at("violations"), 0);
  // Little: each request stayed from t = 2 until the batch ended at 48.
  EXPECT_NEAR(r.counters.at("left_ms"), 3 * 46.0, 1e-9);
  // With a 5 ms guard band the batch starts (and answers) 5 ms earlier.
  cfg.slo_guard_ms = 5;
  r = run_scripted(cfg, "B4,f1,steer0%", "slack", 12);
  EXPECT_NEAR(r.counters.at("latency_ms_sum"), 3 * 45.0, 1e-9);
  EXPECT_NEAR(r.counters.at("busy_ms"), kBatch3Ms, 1e-9);
}

TEST(Lstcb, SlackModeSendsTheLargestBatchThatStillMeetsTheSlo) {
  lstcb::Config cfg;
  cfg.slo_ms = 12;  // due at 10 (2 ms back): at t = 2 a batch of 3 or 2 would answer too late
  const auto r = run_scripted(cfg, "B4,f1,steer0%", "slack", 12);
  // One request alone (answer at 2 + 7.60 + 2 = 11.60) meets the SLO; the two others are late
  // whatever happens and go together when the GPU is free.
  const double t1 = 6.6317 + 0.97143, t2 = 6.6317 + 2 * 0.97143;
  EXPECT_EQ(r.counters.at("batches"), 2);
  EXPECT_EQ(r.counters.at("violations"), 2);
  EXPECT_NEAR(r.counters.at("busy_ms"), t1 + t2, 1e-9);
  EXPECT_NEAR(r.counters.at("latency_ms_sum"), (2 + t1 + 2) + 2 * (2 + t1 + t2 + 2), 1e-9);
}

TEST(Lstcb, SingleModeServesOneRequestAtATime) {
  const auto r = run_scripted(lstcb::Config{}, "B32,f1,steer0%", "single", 12);
  EXPECT_EQ(r.counters.at("batches"), 3);
  EXPECT_NEAR(r.counters.at("busy_ms"), 3 * (6.6317 + 0.97143), 1e-9);
}

TEST(Lstcb, SloMissesAreChargedWhenTheBatchStartsAndCountedWhenItEnds) {
  lstcb::Config cfg;
  cfg.slo_ms = 10;
  // "dispatch": the first request leaves alone at t = 2 (answer at 2 + 7.60 + 2 > 10), the other
  // two at 9.60 when the GPU is free again (answers at 9.60 + 8.57 + 2). All three miss.
  const auto r = run_scripted(cfg, "B4,f1,steer0%", "dispatch", 4);
  EXPECT_EQ(r.counters.at("violations"), 3);
  ASSERT_EQ(r.components.size(), 4u);
  const double charged[4] = {1, 2, 0, 0};  // "violations": the slots of the dispatches
  const double served[4] = {0, 1, 0, 2};   // "served": the slots in which the batches ended
  for (std::size_t s = 0; s < 4; ++s) {
    EXPECT_EQ(r.components[s][2], charged[s]) << "slot " << s;
    EXPECT_EQ(r.components[s][1], served[s]) << "slot " << s;
  }
}

namespace {
struct LRun {
  std::map<std::string, double> counters;
  std::vector<float> rewards;
};
/// Four servers under actions drawn from a hash of (step, agent): layout independent, and they
/// steer, overflow, wait and change clocks.
LRun run_world(const dist::Comm& comm, int agents_per_rank, int steps, std::uint64_t seed) {
  lstcb::Config cfg;
  cfg.window_slots = 8;
  cfg.episode_windows = 4;
  auto factory = find_env("lstcb").make_factory(cfg, 4);
  World w(*factory, comm, agents_per_rank, 2, seed);
  w.reset();
  LRun run;
  std::vector<int> actions;
  const auto na = static_cast<std::uint64_t>(w.spec().num_actions());
  for (int s = 0; s < steps; ++s) {
    actions.clear();
    for (int c = 0; c < w.copies(); ++c)
      for (int k = 0; k < w.local_agents(); ++k)
        actions.push_back(static_cast<int>(
            derive_seed(seed, {static_cast<std::uint64_t>(s), static_cast<std::uint64_t>(c),
                               static_cast<std::uint64_t>(w.first_agent() + k)}) %
            na));
    w.step(actions);
    for (int c = 0; c < w.copies(); ++c)
      for (int a = 0; a < w.num_agents(); ++a) run.rewards.push_back(w.reward(c, a));
    const auto t = w.global_counters();
    EXPECT_EQ(t.at("arrived"),
              t.at("served") + t.at("abandoned") + t.at("in_system") + t.at("in_inbox"))
        << "requests lost or duplicated at step " << s;
    EXPECT_EQ(t.at("steered"), t.at("received")) << "at step " << s;
    EXPECT_NEAR(t.at("area_ms"), t.at("left_ms") + t.at("here_ms"),
                1e-9 * std::max(1.0, t.at("area_ms")))
        << "Little's law accounting at step " << s;
    EXPECT_EQ(t.at("late_deliveries"), 0);
  }
  run.counters = w.global_counters();
  return run;
}
}  // namespace

TEST(Lstcb, RequestsAreConservedAcrossCooperatingServersAndLittlesLawHolds) {
  dist::Comm self(MPI_COMM_SELF, false);
  const LRun a = run_world(self, 4, 90, 3);
  EXPECT_GT(a.counters.at("steered"), 100);
  EXPECT_GT(a.counters.at("abandoned"), 0);
  // L = λ·W over the whole run: time-average number in system equals the entry rate times the
  // mean stay (stays of requests still inside counted so far).
  const double T = a.counters.at("sim_ms");
  const double L = a.counters.at("area_ms") / T;
  const double lambda = a.counters.at("entered") / T;
  const double W = (a.counters.at("left_ms") + a.counters.at("here_ms")) / a.counters.at("entered");
  EXPECT_NEAR(L, lambda * W, 1e-9 * L);
  const LRun b = run_world(self, 4, 90, 3);
  EXPECT_EQ(a.counters, b.counters);
  EXPECT_EQ(a.rewards, b.rewards);
}

TEST(Lstcb, BuiltInProfilesMatchTheProjectDataFile) {
  const std::string path =
      std::string(std::getenv("MARLSCHED_SOURCE_DIR") ? std::getenv("MARLSCHED_SOURCE_DIR") : ".") +
      "/data/lstcb/batch_profiles.csv";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, lstcb::profiles_csv(lstcb::builtin_profiles()))
      << "regenerate with `marlsched gen-data`";
  const auto loaded = lstcb::load_profiles(path);
  ASSERT_EQ(loaded.size(), lstcb::builtin_profiles().size());
  for (std::size_t i = 0; i < loaded.size(); ++i) {
    EXPECT_EQ(loaded[i].model, lstcb::builtin_profiles()[i].model);
    EXPECT_DOUBLE_EQ(loaded[i].a_ms, lstcb::builtin_profiles()[i].a_ms);
    EXPECT_DOUBLE_EQ(loaded[i].p_dyn, lstcb::builtin_profiles()[i].p_dyn);
  }
  const auto dir = test::temp_dir("lstcb-profiles");
  std::ofstream(dir + "/bad.csv") << "model,gpu,a_ms,c_ms_per_item,p_idle_w,p_static_w,p_dyn_w,"
                                     "source\ngooglenet,x,1,-2,1,1,1,s\n";
  EXPECT_THROW(lstcb::load_profiles(dir + "/bad.csv"), InputError);
  lstcb::Config cfg;
  cfg.profile = "resnet/none";
  EXPECT_THROW(cfg.validate(4), ConfigError);
}

TEST(Lstcb, StateRoundTripContinuesExactly) {
  lstcb::Config cfg;
  cfg.window_slots = 6;
  cfg.episode_windows = 3;
  auto factory = find_env("lstcb").make_factory(cfg, 4);
  dist::Comm self(MPI_COMM_SELF, false);
  World a(*factory, self, 4, 1, 9), b(*factory, self, 4, 1, 9);
  a.reset();
  b.reset();
  const int na = factory->spec().num_actions();
  std::vector<int> actions(4);
  for (int s = 0; s < 13; ++s) {
    for (int k = 0; k < 4; ++k) actions[static_cast<std::size_t>(k)] = (s * 37 + k * 11) % na;
    a.step(actions);
  }
  b.load_state(a.save_state());
  for (int s = 0; s < 30; ++s) {
    for (int k = 0; k < 4; ++k) actions[static_cast<std::size_t>(k)] = (s * 53 + k * 7) % na;
    a.step(actions);
    b.step(actions);
    for (int ag = 0; ag < 4; ++ag) ASSERT_EQ(a.reward(0, ag), b.reward(0, ag)) << "step " << s;
  }
  EXPECT_EQ(a.global_counters(), b.global_counters());
}
