#include <gtest/gtest.h>

#include "rollout/gae.hpp"

using namespace marlsched;

// Hand-computed reference: γ = 0.9, λ = 0.5.
TEST(Gae, MatchesHandComputation) {
  const std::vector<float> r = {1, 0, 2}, v = {0.5f, 1.0f, 0.2f}, nv = {1.0f, 0.2f, 0.4f};
  const std::vector<std::uint8_t> end = {0, 0, 0};
  std::vector<float> a, ret;
  compute_gae(r, v, nv, end, 0.9f, 0.5f, a, ret);
  const float d2 = 2 + 0.9f * 0.4f - 0.2f;  // 2.16
  const float d1 = 0 + 0.9f * 0.2f - 1.0f;  // -0.82
  const float d0 = 1 + 0.9f * 1.0f - 0.5f;  // 1.4
  const float a2 = d2, a1 = d1 + 0.45f * a2, a0 = d0 + 0.45f * a1;
  EXPECT_FLOAT_EQ(a[2], a2);
  EXPECT_FLOAT_EQ(a[1], a1);
  EXPECT_FLOAT_EQ(a[0], a0);
  EXPECT_FLOAT_EQ(ret[0], a0 + 0.5f);
}

TEST(Gae, EpisodeEndCutsTheRecursionAndTruncationBootstraps) {
  // Step 1 ends an episode. With termination the caller passes next_value 0; with truncation it
  // passes V(terminal) = 3. Step 0's advantage must not see step 2 in either case.
  const std::vector<float> r = {1, 1, 5}, v = {0, 0, 0};
  std::vector<float> a_term, a_trunc, ret;
  compute_gae(r, v, {0.f, 0.f, 0.f}, {0, 1, 0}, 1.0f, 1.0f, a_term, ret);
  compute_gae(r, v, {0.f, 3.f, 0.f}, {0, 1, 0}, 1.0f, 1.0f, a_trunc, ret);
  EXPECT_FLOAT_EQ(a_term[1], 1.0f);
  EXPECT_FLOAT_EQ(a_term[0], 2.0f);
  EXPECT_FLOAT_EQ(a_trunc[1], 4.0f);
  EXPECT_FLOAT_EQ(a_trunc[0], 5.0f);
  EXPECT_FLOAT_EQ(a_term[2], 5.0f);
}

TEST(RunningMoments, BatchMergeEqualsDirect) {
  std::vector<double> x = {1, 2, 3, 4, 10, -2, 7};
  RunningMoments m;
  m.update(3, 1 + 2 + 3, 1 + 4 + 9);
  m.update(4, 4 + 10 - 2 + 7, 16 + 100 + 4 + 49);
  double mean = 0, var = 0;
  for (double v : x) mean += v;
  mean /= x.size();
  for (double v : x) var += (v - mean) * (v - mean);
  var /= x.size();
  EXPECT_NEAR(m.mean, mean, 1e-12);
  EXPECT_NEAR(m.var(), var, 1e-9);
  EXPECT_EQ(m.count, 7);
}
