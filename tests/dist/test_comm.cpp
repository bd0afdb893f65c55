#include <gtest/gtest.h>

#include <numeric>

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
  // Rank r sends (r + d) % 3 bytes of value r*16 + d to rank d (some messages are empty).
  std::vector<std::vector<std::byte>> send(static_cast<std::size_t>(n));
  for (int d = 0; d < n; ++d)
    send[static_cast<std::size_t>(d)].assign(static_cast<std::size_t>((me + d) % 3),
                                             static_cast<std::byte>(me * 16 + d));
  const auto recv = comm.alltoallv(send);
  ASSERT_EQ(static_cast<int>(recv.size()), n);
  for (int s = 0; s < n; ++s) {
    ASSERT_EQ(recv[static_cast<std::size_t>(s)].size(), static_cast<std::size_t>((s + me) % 3));
    for (auto b : recv[static_cast<std::size_t>(s)])
      EXPECT_EQ(b, static_cast<std::byte>(s * 16 + me));
  }
  EXPECT_THROW(comm.alltoallv({}), Error);
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
