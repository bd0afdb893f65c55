#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "dist/comm.hpp"

using namespace marlsched;

TEST(Comm, AllgatherPlacesEveryRankInOrder) {
  auto comm = dist::Comm::world();
  std::vector<float> mine = {static_cast<float>(comm.rank()), 10.f + comm.rank(), -1.f};
  std::vector<float> all(3 * static_cast<std::size_t>(comm.size()));
  comm.allgather(mine.data(), 3, all.data());
  for (int r = 0; r < comm.size(); ++r) {
    EXPECT_EQ(all[static_cast<std::size_t>(3 * r)], static_cast<float>(r));
    EXPECT_EQ(all[static_cast<std::size_t>(3 * r + 1)], 10.f + r);
  }
}

TEST(Comm, AlltoallvMovesVariableSizeRecords) {
  auto comm = dist::Comm::world();
  const int me = comm.rank(), n = comm.size();
  dist::Exchange x;
  for (int round = 0; round < 2; ++round) {  // the second reuses the buffers
    // Rank r sends (r + d + round) % 3 bytes of value r*16 + d to rank d (some are empty).
    std::vector<std::size_t> bytes(static_cast<std::size_t>(n));
    for (int d = 0; d < n; ++d) bytes[static_cast<std::size_t>(d)] = (me + d + round) % 3;
    x.layout(bytes);
    for (int d = 0; d < n; ++d)
      std::fill_n(x.send.begin() + x.sdispl[static_cast<std::size_t>(d)],
                  bytes[static_cast<std::size_t>(d)], static_cast<std::byte>(me * 16 + d));
    comm.alltoallv(x);
    for (int s = 0; s < n; ++s) {
      const auto si = static_cast<std::size_t>(s);
      ASSERT_EQ(x.rcount[si], (s + me + round) % 3);
      for (int i = 0; i < x.rcount[si]; ++i)
        EXPECT_EQ(x.recv[static_cast<std::size_t>(x.rdispl[si] + i)],
                  static_cast<std::byte>(s * 16 + me));
    }
  }
  dist::Exchange wrong;
  wrong.layout({});
  EXPECT_THROW(comm.alltoallv(wrong), Error);
}

TEST(Comm, ReductionsAgree) {
  auto comm = dist::Comm::world();
  double v[2] = {1.0, static_cast<double>(comm.rank())};
  comm.allreduce_sum(v, 2);
  EXPECT_EQ(v[0], comm.size());
  EXPECT_EQ(v[1], comm.size() * (comm.size() - 1) / 2.0);
  EXPECT_EQ(comm.allreduce_max(comm.rank()), comm.size() - 1);
  EXPECT_EQ(comm.allreduce_min(comm.rank()), 0);
}

TEST(Comm, MpiErrorsBecomeExceptions) {
  auto comm = dist::Comm::world();
  float x = 0;
  // An invalid root is an MPI error; with MPI_ERRORS_RETURN it must surface as MpiError.
  EXPECT_THROW(comm.bcast(&x, 1, comm.size() + 5), MpiError);
}

// The nonblocking allreduce hands back an owned request: wait() completes it, a moved-from
// request is inactive, and destroying an active one waits (the buffer is complete afterwards).
TEST(Comm, NonblockingAllreduceOwnsItsRequest) {
  auto comm = dist::Comm::world();
  const int n = comm.size();
  std::vector<float> a(64, 1.0f), b(64, static_cast<float>(comm.rank()));
  dist::Request ra = comm.iallreduce_sum(a.data(), 64);
  EXPECT_TRUE(ra.active());
  dist::Request moved = std::move(ra);
  EXPECT_FALSE(ra.active());
  moved.wait();
  EXPECT_FALSE(moved.active());
  moved.wait();  // completing twice is a no-op
  for (float v : a) ASSERT_EQ(v, static_cast<float>(n));
  { dist::Request rb = comm.iallreduce_sum(b.data(), 64); }  // its destructor waited
  for (float v : b) ASSERT_EQ(v, static_cast<float>(n * (n - 1) / 2));
}

TEST(Comm, NodeRankCountsTheRanksOfOneNode) {
  auto comm = dist::Comm::world();
  const int local = comm.node_rank();
  EXPECT_GE(local, 0);
  EXPECT_LT(local, comm.size());
  // The test job runs on one machine: the node-local ranks are 0..size-1, each once.
  std::vector<int> all(static_cast<std::size_t>(comm.size()));
  comm.allgather(&local, 1, all.data());
  std::sort(all.begin(), all.end());
  for (int r = 0; r < comm.size(); ++r) EXPECT_EQ(all[static_cast<std::size_t>(r)], r);
}

TEST(Comm, DupIsASeparateCommunicatorOverTheSameRanks) {
  auto comm = dist::Comm::world();
  auto other = comm.dup();
  EXPECT_EQ(other.rank(), comm.rank());
  EXPECT_EQ(other.size(), comm.size());
  int cmp = MPI_UNEQUAL;
  MPI_Comm_compare(comm.raw(), other.raw(), &cmp);
  EXPECT_EQ(cmp, MPI_CONGRUENT);  // same group and order, another context
  EXPECT_EQ(other.allreduce_max(other.rank()), comm.size() - 1);
}

TEST(Comm, CoresPerRankSharesTheAffinityMaskAmongTheRanksUsingIt) {
  auto comm = dist::Comm::world();
  const double c = comm.cores_per_rank();
  cpu_set_t mine;
  CPU_ZERO(&mine);
  ASSERT_EQ(sched_getaffinity(0, sizeof mine, &mine), 0);
  // At least one share of one core, at most the whole mask.
  EXPECT_GE(c, 1.0 / comm.size());
  EXPECT_LE(c, static_cast<double>(CPU_COUNT(&mine)));
  EXPECT_TRUE(dist::thread_multiple()) << "the MPI test main asks for MPI_THREAD_MULTIPLE";
}
