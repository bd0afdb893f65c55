#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "agents/mappo/mappo.hpp"
#include "agents/registry.hpp"
#include "envs/geodc/geodc.hpp"
#include "envs/registry.hpp"
#include "train/manifest.hpp"
#include "train/trainer.hpp"

using namespace marlsched;

namespace {
std::string run_dir(const dist::Comm& comm, const std::string& tag) {
  // Rank 0 picks the path; all ranks use it.
  std::string p = (std::filesystem::temp_directory_path() / ("marlsched-train-" + tag)).string();
  if (comm.is_root()) std::filesystem::remove_all(p);
  comm.barrier();
  return p;
}

TrainSummary small_run(const dist::Comm& comm, int agents_per_rank, bool share,
                       const std::string& dir, bool overlap = false) {
  geodc::Config env;
  env.episode_slots = 24;
  const int n = agents_per_rank * comm.size();
  env.replicate_sites = true;
  env.keep_sites(static_cast<std::size_t>(n));
  auto factory = find_env("geodc").make_factory(env, n);
  RunConfig run;
  run.iterations = 3;
  run.agents_per_rank = agents_per_rank;
  run.envs_per_rank = 2;
  run.run_dir = dir;
  run.quiet = true;
  run.check_every = 1;
  LearnerConfigs l;
  l.get<MappoConfig>().rollout_steps = 24;
  l.get<MappoConfig>().share_actor = share;
  l.get<MappoConfig>().overlap_grads = overlap;
  return train(run, learner_recipe(run.algo, l, factory->spec()), *factory, comm, "# test\n");
}
}  // namespace

TEST(Training, SharedParametersStayBitwiseIdenticalAcrossRanks) {
  auto comm = dist::Comm::world();
  const auto dir = run_dir(comm, "shared");
  const auto s = small_run(comm, 1, true, dir);
  EXPECT_TRUE(s.parameters_identical);
  EXPECT_EQ(s.env_steps, 3LL * 24 * 2 * comm.size());
  if (comm.is_root()) {
    std::ifstream m(dir + "/metrics.csv");
    int lines = 0;
    for (std::string l; std::getline(m, l);) ++lines;
    EXPECT_EQ(lines, 4);  // header + 3 iterations
  }
  EXPECT_TRUE(std::filesystem::exists(model_path(dir, comm.rank())));
}

TEST(Training, SeveralAgentsPerRankAndSeparateActors) {
  auto comm = dist::Comm::world();
  const auto dir = run_dir(comm, "k2");
  const auto s = small_run(comm, 2, false, dir);  // critic shared, actors per agent
  EXPECT_TRUE(s.parameters_identical);
  EXPECT_EQ(s.env_steps, 3LL * 24 * 2 * 2 * comm.size());
}

TEST(Training, OverlappedGradientAveragingMatchesTheBlockingOne) {
  // The critic's nonblocking allreduce (--overlap-grads) against the blocking allreduces after both
  // backward passes: the same sums, so the same training, bit for bit, where the reduction order
  // cannot differ (at most two ranks; at more, the two MPI algorithms may add in other orders).
  auto comm = dist::Comm::world();
  const auto a = run_dir(comm, "overlap-on"), b = run_dir(comm, "overlap-off");
  small_run(comm, 1, true, a, true);
  small_run(comm, 1, true, b, false);
  if (comm.size() > 2) GTEST_SKIP() << "summation order may differ above 2 ranks";
  if (comm.is_root()) {
    auto slurp = [](const std::string& f) {
      std::ifstream in(f);
      std::stringstream ss;
      ss << in.rdbuf();
      return ss.str();
    };
    const auto ma = slurp(a + "/metrics.csv");
    EXPECT_GT(ma.size(), 100u);
    EXPECT_EQ(ma, slurp(b + "/metrics.csv"));
  }
}

TEST(Training, TeamRewardAveragesAllAgentsOrAnAgentsTargets) {
  geodc::Config env;
  env.replicate_sites = true;
  env.neighbours = 2;
  const auto spec = geodc::make_spec(env, 6);  // agent 0's targets: 0, 1, 5
  const std::vector<double> r = {1, 2, 4, 8, 16, 32};
  auto of = [&](int j) { return r[static_cast<std::size_t>(j)]; };
  const double total = 63;
  EXPECT_DOUBLE_EQ(learner_reward(spec, 6, 0, 0.0, false, total, of), 1.0);  // own
  EXPECT_DOUBLE_EQ(learner_reward(spec, 6, 0, 1.0, false, total, of), 63.0 / 6);
  EXPECT_DOUBLE_EQ(learner_reward(spec, 6, 0, 1.0, true, total, of), (1 + 2 + 32) / 3.0);
  EXPECT_DOUBLE_EQ(learner_reward(spec, 6, 3, 0.5, true, total, of),
                   0.5 * 8 + 0.5 * (8 + 16 + 4) / 3.0);  // agent 3: 3, 4, 2
}

// What a resumed run may change comes from the run options' declarations; the list is the one
// checkpoints have always been fingerprinted with, so that runs checkpointed before keep resuming.
TEST(Training, AResumeMayChangeRunLengthEvaluationCheckpointsAndTrajectoriesOnly) {
  std::vector<std::string> got = RunConfig{}.resumable_options();
  std::sort(got.begin(), got.end());
  const std::vector<std::string> want = {
      "check-every", "checkpoint-every", "eval-after",       "eval-bound",       "eval-episodes",
      "eval-greedy", "eval-seed",        "iterations",       "keep-checkpoints", "quiet",
      "run-dir",     "tensorboard",      "traj-chunk-steps", "traj-compression", "traj-every",
      "traj-fields", "traj-level",       "traj-shuffle",     "watchdog-s"};
  EXPECT_EQ(got, want);
  // A changed iteration count keeps the fingerprint; a changed learning rate does not.
  const std::string a = "algo = \"es\"\niterations = 10\nes-lr = 0.01\n";
  const std::string b = "algo = \"es\"\niterations = 20\nes-lr = 0.01\n";
  const std::string c = "algo = \"es\"\niterations = 10\nes-lr = 0.02\n";
  EXPECT_EQ(config_fingerprint(a, got), config_fingerprint(b, got));
  EXPECT_NE(config_fingerprint(a, got), config_fingerprint(c, got));
}
