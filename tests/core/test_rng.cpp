#include <gtest/gtest.h>

#include <set>

#include "core/rng.hpp"

using namespace marlsched;

TEST(Rng, DerivedSeedsAreDistinctAndStable) {
  std::set<std::uint64_t> seen;
  for (std::uint64_t c = 0; c < 8; ++c)
    for (std::uint64_t a = 0; a < 8; ++a) seen.insert(derive_seed(1, {c, a}));
  EXPECT_EQ(seen.size(), 64u);
  EXPECT_EQ(derive_seed(1, {2, 3}), derive_seed(1, {2, 3}));
  EXPECT_NE(derive_seed(1, {2, 3}), derive_seed(1, {3, 2}));
  EXPECT_NE(derive_seed(1, {2, 3}), derive_seed(2, {2, 3}));
}

TEST(Rng, SameSeedSameStream) {
  Rng a(42), b(42);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.next_u64(), b.next_u64());
}

TEST(Rng, PoissonAndUniformMoments) {
  Rng r(7);
  for (double mean : {0.3, 4.0, 50.0}) {
    double s = 0;
    const int n = 20000;
    for (int i = 0; i < n; ++i) s += static_cast<double>(r.poisson(mean));
    EXPECT_NEAR(s / n, mean, 4 * std::sqrt(mean / n) + 0.02) << "mean " << mean;
  }
  double u = 0;
  for (int i = 0; i < 10000; ++i) {
    const double x = r.uniform();
    ASSERT_GE(x, 0.0);
    ASSERT_LT(x, 1.0);
    u += x;
  }
  EXPECT_NEAR(u / 10000, 0.5, 0.02);
}
