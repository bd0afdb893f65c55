// The dataset reader (io/dataset.hpp) at 1, 2 and 4 ranks: rank 0 alone writes a file of 4
// agents with known values; every rank then reads its own agents' columns (and every agent's
// observations) collectively and checks each value, and the header checks refuse files of
// another env, agent count or a damaged file.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>

#include "core/error.hpp"
#include "io/dataset.hpp"
#include "io/trajectory.hpp"
#include "test_util.hpp"

using namespace marlsched;

namespace {

constexpr int kN = 4, kW = 3, kD = 2, kRows = 10, kEpisode = 5;
/// Actions must lie within the action count (the reader refuses others): a prime count, and a
/// code that differs between neighbouring rows, worlds and agents.
constexpr int kActions = 97;

EnvSpec spec() {
  EnvSpec s;
  s.name = "dataset-env";
  s.obs_fields = {"x", "y"};
  s.num_public = 1;
  for (int a = 0; a < kActions; ++a) s.action_names.push_back("a" + std::to_string(a));
  s.reward_components = {"r"};
  s.episode_length = kEpisode;
  return s;
}

float code(int row, int w, int agent, int j) {
  return static_cast<float>(row * 1000 + w * 100 + agent * 10 + j);
}

std::int32_t action_code(int row, int w, int agent) {
  return (row * 31 + w * 7 + agent) % kActions;
}

/// Rank 0 writes `path` alone (its own communicator): every agent, distinct values everywhere.
void write_file(const dist::Comm& world, const std::string& path) {
  if (world.is_root()) {
    dist::Comm self(MPI_COMM_SELF, false);
    TrajConfig cfg;
    cfg.writer = "inline";
    TrajMeta m;
    m.spec = spec();
    m.algo = "mappo";
    m.behaviour_policy = "least-loaded";
    m.behaviour_epsilon = 0.25;
    m.agents_per_rank = kN;
    m.worlds = kW;
    m.rollout_steps = kEpisode;
    TrajectoryWriter w(self, cfg, path, m);
    for (int r = 0; r < kRows; ++r) {
      TrajStep s;
      s.iteration = r / kEpisode + 1;
      for (int wd = 0; wd < kW; ++wd) {
        for (int a = 0; a < kN; ++a) {
          for (int j = 0; j < kD; ++j) {
            s.observations.push_back(code(r, wd, a, j));
            s.next_observations.push_back(-code(r, wd, a, j));
          }
          s.actions.push_back(action_code(r, wd, a));
          s.rewards.push_back(code(r, wd, a, 1));
          s.log_probs.push_back(-code(r, wd, a, 2));
          s.values.push_back(0.f);
          s.reward_components.push_back(0.f);
        }
        s.terminations.push_back(0);
        s.truncations.push_back(static_cast<std::uint8_t>(r % kEpisode == kEpisode - 1));
        s.episode_ids.push_back(static_cast<std::int64_t>(r / kEpisode) * kW + wd);
        s.episode_steps.push_back(r % kEpisode);
      }
      w.append(s);
    }
    w.close(kRows / kEpisode);
  }
  world.barrier();
}

void expect_input_error(const std::function<void()>& f, const std::string& part) {
  const auto msg = test::input_error_of(f);
  EXPECT_NE(msg.find(part), std::string::npos) << msg;
}

}  // namespace

TEST(Dataset, EveryRankReadsExactlyItsAgentsRows) {
  auto comm = dist::Comm::world();
  if (kN % comm.size() != 0) GTEST_SKIP() << kN << " agents do not split over " << comm.size();
  const auto dir = test::shared_temp_dir(comm, "dataset");
  const std::string path = dir + "/data.h5";
  write_file(comm, path);
  const int K = kN / comm.size(), first = K * comm.rank();
  // Two files: the reader concatenates them, world-major within each.
  const auto files = dataset_files({path, path});
  const auto info = inspect_dataset(path, spec(), kN, comm.rank(), comm.size());
  EXPECT_EQ(info.rows, kRows);
  EXPECT_EQ(info.worlds, kW);
  EXPECT_EQ(info.behaviour_policy, "least-loaded");
  EXPECT_DOUBLE_EQ(info.behaviour_epsilon, 0.25);
  const LocalDataset ds = read_dataset(comm, files, spec(), first, K);
  ASSERT_EQ(ds.rows, 2 * kRows * kW);
  EXPECT_EQ(ds.transitions(), 2 * kRows * kW * K);
  EXPECT_EQ(ds.file_offsets, (std::vector<std::int64_t>{0, kRows * kW, 2 * kRows * kW}));
  ASSERT_EQ(ds.block_offsets.size(), static_cast<std::size_t>(2 * kW + 1));
  for (int b = 0; b <= 2 * kW; ++b)
    EXPECT_EQ(ds.block_offsets[static_cast<std::size_t>(b)], b * kRows);
  ASSERT_EQ(ds.actions.size(), static_cast<std::size_t>(ds.rows * K));
  ASSERT_EQ(ds.observations.size(), static_cast<std::size_t>(ds.rows * kN * kD));
  for (std::int64_t i = 0; i < ds.rows; ++i) {
    const int within = static_cast<int>(i % (kRows * kW));
    const int w = within / kRows, r = within % kRows;  // world-major: a world's steps in order
    for (int k = 0; k < K; ++k) {
      const auto at = static_cast<std::size_t>(i * K + k);
      ASSERT_EQ(ds.actions[at], action_code(r, w, first + k)) << i;
      ASSERT_EQ(ds.reward(i, k, 0.0), code(r, w, first + k, 1));
      ASSERT_EQ(ds.log_probs[at], -code(r, w, first + k, 2));
    }
    double mean = 0;
    for (int a = 0; a < kN; ++a) mean += code(r, w, a, 1) / kN;
    ASSERT_FLOAT_EQ(ds.mean_rewards[static_cast<std::size_t>(i)], static_cast<float>(mean));
    for (int a = 0; a < kN; ++a)
      ASSERT_EQ(ds.rewards[static_cast<std::size_t>(i * kN + a)], code(r, w, a, 1));
    // The learner's reward: the team part over all agents, or (--team-scope targets) over the
    // agent's targets, here itself and the next agent.
    EnvSpec scoped = spec();
    for (int a = 0; a < kN; ++a) scoped.targets.push_back({a, (a + 1) % kN});
    for (int k = 0; k < K; ++k) {
      const int a = first + k;
      const double own = code(r, w, a, 1), beta = 0.75;
      const double targets = (own + code(r, w, (a + 1) % kN, 1)) / 2;
      EXPECT_NEAR(ds.reward(i, k, beta), 0.25 * own + beta * mean, 1e-3 * std::abs(mean));
      EXPECT_NEAR(ds.reward(i, k, beta, &scoped), 0.25 * own + beta * targets,
                  1e-9 * std::abs(targets));
    }
    for (int a = 0; a < kN; ++a)
      for (int j = 0; j < kD; ++j) {
        ASSERT_EQ(ds.global(i).row(a)[j], code(r, w, a, j));
        ASSERT_EQ(ds.global(i, true).row(a)[j], -code(r, w, a, j));
      }
    ASSERT_EQ(ds.truncations[static_cast<std::size_t>(i)], r % kEpisode == kEpisode - 1 ? 1 : 0);
    ASSERT_EQ(ds.terminations[static_cast<std::size_t>(i)], 0);
  }
}

TEST(Dataset, RefusesFilesItCannotLearnFrom) {
  auto comm = dist::Comm::world();
  const auto dir = test::shared_temp_dir(comm, "dataset-bad");
  const std::string path = dir + "/data.h5";
  write_file(comm, path);
  EnvSpec other = spec();
  other.name = "other-env";
  expect_input_error([&] { inspect_dataset(path, other, kN); },
                     "is a dataset of env 'dataset-env'");
  other = spec();
  other.obs_fields = {"x", "z"};
  expect_input_error([&] { inspect_dataset(path, other, kN); },
                     "its observations [x, y] are not this env's [x, z]");
  expect_input_error([&] { inspect_dataset(path, spec(), 8); }, "holds 4 agents; this run has 8");
  expect_input_error([&] { dataset_files({dir + "/none.h5"}); }, "does not exist");
  expect_input_error([&] { dataset_files({dir}); }, "a directory without trajectory files");
  comm.barrier();
  if (comm.is_root()) {
    // A damaged copy: one stored value of the observations (or the rewards, which hold the same
    // number) overwritten, so that its chunk fails its checksum.
    const std::string bad = dir + "/damaged.h5";
    std::filesystem::copy_file(path, bad);
    const auto size = std::filesystem::file_size(bad);
    std::string bytes(size, '\0');
    {
      std::ifstream in(bad, std::ios::binary);
      in.read(bytes.data(), static_cast<std::streamsize>(size));
    }
    const float value = code(3, 1, 2, 1);
    const auto at = bytes.find(std::string(reinterpret_cast<const char*>(&value), sizeof value));
    ASSERT_NE(at, std::string::npos);
    bytes[at] = static_cast<char>(bytes[at] ^ 0x5a);
    {
      std::ofstream out(bad, std::ios::binary | std::ios::trunc);
      out.write(bytes.data(), static_cast<std::streamsize>(size));
    }
    expect_input_error([&] { inspect_dataset(bad, spec(), kN, 0, 1); }, "is damaged");
    // Truncated: the end of the file is missing.
    const std::string cut = dir + "/truncated.h5";
    std::filesystem::copy_file(path, cut);
    std::filesystem::resize_file(cut, size / 2);
    EXPECT_THROW(inspect_dataset(cut, spec(), kN, 0, 1), InputError);
  }
  comm.barrier();
}
