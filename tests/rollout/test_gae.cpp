#include <gtest/gtest.h>

#include <algorithm>

#include "rollout/gae.hpp"
#include "rollout/minibatch.hpp"

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

TEST(Gae, ARolloutsRowsAreSequencesCutWhereTheirCopyEnded) {
  // 2 copies x 2 agents, 3 steps; copy 1 ends (truncated) at step 1, copy 0 runs on.
  const int T = 3, rows = 4, k = 2;
  std::vector<float> reward(T * rows), value(T * rows), trunc(T * rows, 0.f);
  for (int i = 0; i < T * rows; ++i) {
    reward[static_cast<std::size_t>(i)] = 0.5f * static_cast<float>(i % 5);
    value[static_cast<std::size_t>(i)] = 0.1f * static_cast<float>(i);
  }
  std::vector<std::uint8_t> done(T * 2, 0);
  done[1 * 2 + 1] = 1;
  trunc[1 * rows + 2] = 7.f;  // V(terminal) of copy 1's agents at step 1
  trunc[1 * rows + 3] = 8.f;
  const std::vector<float> boot = {1.f, 2.f, 3.f, 4.f};
  std::vector<float> adv, ret;
  compute_rollout_gae({&reward, &value, &trunc, &done, T, rows, k}, boot, 0.9f, 0.8f, adv, ret);
  ASSERT_EQ(adv.size(), static_cast<std::size_t>(T * rows));
  for (int row = 0; row < rows; ++row) {  // each row against compute_gae on its own sequence
    std::vector<float> r, v, nv, a, rt;
    std::vector<std::uint8_t> end;
    for (int t = 0; t < T; ++t) {
      const auto i = static_cast<std::size_t>(t * rows + row);
      const bool dn = done[static_cast<std::size_t>(t * 2 + row / k)] != 0;
      r.push_back(reward[i]);
      v.push_back(value[i]);
      end.push_back(dn ? 1 : 0);
      nv.push_back(dn          ? trunc[i]
                   : t + 1 < T ? value[static_cast<std::size_t>((t + 1) * rows + row)]
                               : boot[static_cast<std::size_t>(row)]);
    }
    compute_gae(r, v, nv, end, 0.9f, 0.8f, a, rt);
    for (int t = 0; t < T; ++t) {
      EXPECT_EQ(adv[static_cast<std::size_t>(t * rows + row)], a[static_cast<std::size_t>(t)]);
      EXPECT_EQ(ret[static_cast<std::size_t>(t * rows + row)], rt[static_cast<std::size_t>(t)]);
    }
  }
  // Copy 1's step-1 advantage bootstraps from V(terminal), not from the next step's value.
  EXPECT_FLOAT_EQ(adv[1 * rows + 2], reward[1 * rows + 2] + 0.9f * 7.f - value[1 * rows + 2]);
}

TEST(Minibatch, UnitsStayWholeAndTheOrderIsAPermutationFixedByTheSeed) {
  Rng a(42), b(42), c(43);
  std::vector<std::int64_t> oa, ob, oc;
  shuffle_units(6, 3, a, oa);
  shuffle_units(6, 3, b, ob);
  shuffle_units(6, 3, c, oc);
  EXPECT_EQ(oa, ob);
  EXPECT_NE(oa, oc);
  auto sorted = oa;
  std::sort(sorted.begin(), sorted.end());
  for (std::int64_t i = 0; i < 18; ++i) EXPECT_EQ(sorted[static_cast<std::size_t>(i)], i);
  for (std::size_t u = 0; u < 6; ++u) {  // a unit is 3 consecutive rows starting at a multiple of 3
    EXPECT_EQ(oa[3 * u] % 3, 0);
    EXPECT_EQ(oa[3 * u + 1], oa[3 * u] + 1);
    EXPECT_EQ(oa[3 * u + 2], oa[3 * u] + 2);
  }
}
