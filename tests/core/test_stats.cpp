#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/latency_histogram.hpp"
#include "core/stats.hpp"

using namespace marlsched;

TEST(Stats, StudentTQuantilesMatchTables) {
  // Two-sided 95 % critical values (any statistics table).
  EXPECT_NEAR(stats::student_t_quantile(0.975, 1), 12.7062, 1e-3);
  EXPECT_NEAR(stats::student_t_quantile(0.975, 4), 2.7764, 1e-3);
  EXPECT_NEAR(stats::student_t_quantile(0.975, 9), 2.2622, 1e-3);
  EXPECT_NEAR(stats::student_t_quantile(0.975, 30), 2.0423, 1e-3);
  EXPECT_NEAR(stats::student_t_quantile(0.5, 7), 0.0, 1e-6);
  EXPECT_NEAR(stats::student_t_quantile(0.025, 4), -2.7764, 1e-3);
  EXPECT_NEAR(stats::student_t_cdf(2.7764, 4), 0.975, 1e-4);
}

TEST(Stats, TIntervalUsesTheSeedCount) {
  const std::vector<double> x = {1, 2, 3, 4, 5};  // mean 3, sd sqrt(2.5)
  const auto i = stats::t_interval(x);
  const double h = 2.7764 * std::sqrt(2.5) / std::sqrt(5.0);
  EXPECT_NEAR(i.lo, 3 - h, 1e-3);
  EXPECT_NEAR(i.hi, 3 + h, 1e-3);
  const auto one = stats::t_interval({7});
  EXPECT_EQ(one.lo, 7);
  EXPECT_EQ(one.hi, 7);
}

TEST(Stats, InterquartileMean) {
  EXPECT_DOUBLE_EQ(stats::iqm({1, 2, 3, 4}), 2.5);                  // the middle two
  EXPECT_DOUBLE_EQ(stats::iqm({100, 2, 3, -50, 4, 5, 6, 7}), 4.5);  // 3, 4, 5, 6
  EXPECT_DOUBLE_EQ(stats::iqm({1, 2, 3}), (0.25 * 1 + 2 + 0.25 * 3) / 1.5);
}

TEST(Stats, BootstrapIntervalsAndPairedDifferences) {
  // Policy a beats b by exactly 1 on every episode of every seed; episodes vary a lot.
  stats::Scores b = {{0, 10, 20, 30, 40, 50, 60, 70}};
  stats::Scores a;
  for (int s = 0; s < 5; ++s) {
    a.push_back(b[0]);
    for (auto& v : a.back()) v += 1;
  }
  const auto paired = stats::bootstrap_interval(a, &b, stats::Statistic::kMean, 2000, 1);
  EXPECT_NEAR(paired.lo, 1.0, 1e-9);  // pairing removes the episodes' spread
  EXPECT_NEAR(paired.hi, 1.0, 1e-9);
  const auto alone = stats::bootstrap_interval(a, nullptr, stats::Statistic::kMean, 2000, 1);
  EXPECT_LT(alone.lo, 36.0);  // the mean 36 with the episodes' spread around it
  EXPECT_GT(alone.hi, 36.0);
  EXPECT_GT(alone.hi - alone.lo, 20.0);
  EXPECT_DOUBLE_EQ(stats::probability_of_improvement(a, b), 1.0);
  EXPECT_DOUBLE_EQ(stats::probability_of_improvement(b, a), 0.0);
  EXPECT_DOUBLE_EQ(stats::probability_of_improvement(b, b), 0.5);
  EXPECT_DOUBLE_EQ(stats::statistic(a, stats::Statistic::kMean), 36.0);
}

// Latency quantiles are bin bounds at the R10 preferred numbers (issue 23): a 50 ms objective
// is a bin edge, so "p99 <= 50" is exact; a quantile above the last edge is +inf, not a cap.
TEST(LatencyHistogram, QuantilesAreR10BinEdgesAndTheLastBinIsOpen) {
  EXPECT_EQ(latency::bin_upper(0), 0.1);
  EXPECT_EQ(latency::bin_upper(1), 0.125);
  EXPECT_EQ(latency::bin_upper(10), 1.0);
  EXPECT_EQ(latency::bin_upper(27), 50.0);
  EXPECT_EQ(latency::bin_upper(39), 800.0);
  EXPECT_TRUE(std::isinf(latency::bin_upper(40)));
  for (int b = 1; b < latency::kBins - 1; ++b) {
    EXPECT_GT(latency::bin_upper(b), latency::bin_upper(b - 1));
    EXPECT_LE(latency::bin_upper(b), latency::bin_upper(b - 1) * 1.28) << b;
  }
  // A latency falls in the first bin whose edge is at least it; edges belong to their bin.
  EXPECT_EQ(latency::bin(0.0), 0);
  EXPECT_EQ(latency::bin(0.1), 0);
  EXPECT_EQ(latency::bin(0.11), 1);
  EXPECT_EQ(latency::bin(50.0), 27);
  EXPECT_EQ(latency::bin(50.01), 28);
  EXPECT_EQ(latency::bin(800.0), 39);
  EXPECT_EQ(latency::bin(5000.0), 40);
  EXPECT_EQ(latency::bin(std::numeric_limits<double>::infinity()), 40);
  for (double ms = 0.05; ms < 2000; ms *= 1.01) {
    const int b = latency::bin(ms);
    ASSERT_LE(ms, latency::bin_upper(b)) << ms;
    if (b > 0) {
      ASSERT_GT(ms, latency::bin_upper(b - 1)) << ms;
    }
  }
  std::vector<double> h(latency::kBins, 0.0);
  h[static_cast<std::size_t>(latency::bin(12.0))] = 990;
  h[static_cast<std::size_t>(latency::bin(49.0))] = 10;
  EXPECT_EQ(latency::quantile_upper(h, 0.99), 12.5);
  EXPECT_EQ(latency::quantile_upper(h, 0.995), 50.0);
  h[40] = 100;
  EXPECT_TRUE(std::isinf(latency::quantile_upper(h, 0.99)));
}
