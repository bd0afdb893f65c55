// Offline training from one dataset file across ranks (run at 1, 2 and 4 ranks): every rank
// reads its agents' rows (io/dataset.hpp, tested in tests/io/test_dataset.cpp) and trains MAPPO's
// networks by behaviour cloning and by AWR, and DQN's by CQL; the shared parameters stay bitwise
// identical on every rank, and training again from the same seed gives the same parameters
// (determinism is promised for one rank count: the minibatches of a rank hold its own agents'
// rows).
#include <gtest/gtest.h>

#include <string>

#include "agents/dqn/dqn.hpp"
#include "agents/mappo/mappo.hpp"
#include "agents/offline/policy_fit.hpp"
#include "agents/offline/q_fit.hpp"
#include "bandit.hpp"
#include "io/dataset.hpp"
#include "io/trajectory.hpp"
#include "test_util.hpp"

using namespace marlsched;

namespace {

constexpr int kN = 4, kW = 2, kRows = 48;

/// Rank 0 writes a bandit dataset of kN agents alone; every rank gets its path.
std::string write_dataset(const dist::Comm& comm) {
  const std::string dir = test::shared_temp_dir(comm, "offline-mpi");
  const std::string path = dir + "/data.h5";
  if (comm.is_root()) {
    dist::Comm self(MPI_COMM_SELF, false);
    TrajConfig cfg;
    cfg.writer = "inline";
    TrajMeta m;
    m.spec = test::bandit_spec();
    m.algo = "test";
    m.agents_per_rank = kN;
    m.worlds = kW;
    m.rollout_steps = 8;
    TrajectoryWriter w(self, cfg, path, m);
    for (int r = 0; r < kRows; ++r) {
      TrajStep s;
      s.iteration = r / 8 + 1;
      for (int wd = 0; wd < kW; ++wd) {
        for (int a = 0; a < kN; ++a) {
          const float x = 0.1f * static_cast<float>((r + a + wd) % 5);
          s.observations.insert(s.observations.end(), {x, -x});
          s.next_observations.insert(s.next_observations.end(), {x, x});
          const int act = (r + a) % 3;
          s.actions.push_back(act);
          s.rewards.push_back(act == 2 ? 1.f : 0.f);
          s.log_probs.push_back(0.f);
          s.values.push_back(0.f);
          s.reward_components.push_back(0.f);
        }
        s.terminations.push_back(0);
        s.truncations.push_back(r % 8 == 7 ? 1 : 0);
        s.episode_ids.push_back(static_cast<std::int64_t>(r / 8) * kW + wd);
        s.episode_steps.push_back(r % 8);
      }
      w.append(s);
    }
    w.close(kRows / 8);
  }
  comm.barrier();
  return path;
}

/// The shared-parameter digest after 3 updates of each kind from `seed`.
std::uint64_t train_offline(const dist::Comm& comm, const LocalDataset& data, bool awr,
                            std::uint64_t seed) {
  MappoConfig cfg;
  cfg.actor_hidden = {8};
  cfg.critic_hidden = {8};
  const int k = kN / comm.size();
  Mappo m(cfg, test::layout(test::bandit_spec(), comm, kN, comm.rank() * k, k, 1, seed));
  PolicyFit fit(m);
  PolicyFit::AwrOptions o;
  o.minibatch = 16;
  for (int it = 0; it < 3; ++it) {
    if (awr)
      fit.awr(data, o);
    else
      fit.clone(data, 1, 16);
  }
  EXPECT_TRUE(m.shared_parameters_identical());
  return m.shared_parameter_digest();
}

/// The same for cql: the shared Q-network's digest after 3 offline updates from `seed`.
std::uint64_t train_cql(const dist::Comm& comm, const LocalDataset& data, std::uint64_t seed) {
  DqnConfig cfg;
  cfg.offline = true;
  cfg.cql_alpha = 1.0;
  cfg.hidden = {8};
  const int k = kN / comm.size();
  Dqn q(cfg, test::layout(test::bandit_spec(), comm, kN, comm.rank() * k, k, 1, seed));
  QFit fit(q);
  fit.use_dataset(data);
  for (int it = 0; it < 3; ++it) fit.update(1, 16);
  EXPECT_TRUE(q.shared_parameters_identical());
  return q.shared_parameter_digest();
}

}  // namespace

TEST(OfflineMpi, SharedParametersStayIdenticalAndRunsRepeat) {
  auto comm = dist::Comm::world();
  if (kN % comm.size() != 0) GTEST_SKIP() << kN << " agents do not split over " << comm.size();
  const auto path = write_dataset(comm);
  const int k = kN / comm.size();
  const auto data = read_dataset(comm, {path}, test::bandit_spec(), comm.rank() * k, k);
  EXPECT_EQ(data.rows, kRows * kW);
  for (const bool awr : {false, true}) {
    SCOPED_TRACE(awr ? "awr" : "bc");
    const auto a = train_offline(comm, data, awr, 5), b = train_offline(comm, data, awr, 5);
    EXPECT_EQ(a, b);
    EXPECT_NE(a, train_offline(comm, data, awr, 6));
  }
  const auto a = train_cql(comm, data, 5);
  EXPECT_EQ(a, train_cql(comm, data, 5));
  EXPECT_NE(a, train_cql(comm, data, 6));
}
