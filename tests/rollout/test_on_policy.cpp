#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "rollout/on_policy.hpp"

using namespace marlsched;

// The on-policy rollout storage: steps appended step-major, GAE reading them as stored, and
// cleared for the next rollout.
TEST(OnPolicyBuffer, AppendsStepsStepMajorAndFeedsGae) {
  rollout::OnPolicyBuffer b;
  // Two copies of one agent; actor inputs of width 2, critic inputs of width 1.
  b.append({1, 2, 3, 4}, {5, 6}, {0, 1}, {-0.5f, -1.f}, {0.25f, 0.5f}, {1, 2}, {0, 1}, {0, 0.75f});
  b.append({7, 8, 9, 10}, {11, 12}, {1, 0}, {-2.f, -3.f}, {1.f, 2.f}, {3, 4}, {1, 0}, {0, 0});
  EXPECT_EQ(b.steps, 2);
  EXPECT_EQ(b.x, (std::vector<float>{1, 2, 3, 4, 7, 8, 9, 10}));
  EXPECT_EQ(b.c, (std::vector<float>{5, 6, 11, 12}));
  EXPECT_EQ(b.act, (std::vector<std::int64_t>{0, 1, 1, 0}));
  EXPECT_EQ(b.done, (std::vector<std::uint8_t>{0, 1, 1, 0}));
  EXPECT_EQ(b.trunc_value, (std::vector<float>{0, 0.75f, 0, 0}));
  // GAE with gamma = 1, lambda = 1 over what it stored: returns are reward sums up to an
  // episode's end (plus V(terminal) where truncated, plus the bootstrap after the last step).
  std::vector<float> adv, ret;
  compute_rollout_gae(b.sequences(2, 1), {10.f, 20.f}, 1.f, 1.f, adv, ret);
  ASSERT_EQ(ret.size(), 4u);
  EXPECT_FLOAT_EQ(ret[0], 1 + 3);      // copy 0: its episode ends at step 1 (terminated)
  EXPECT_FLOAT_EQ(ret[1], 2 + 0.75f);  // copy 1: truncated at step 0, V(terminal) = 0.75
  EXPECT_FLOAT_EQ(ret[2], 3);
  EXPECT_FLOAT_EQ(ret[3], 4 + 20);  // copy 1: bootstrapped after the last step
  EXPECT_FLOAT_EQ(adv[0], ret[0] - 0.25f);
  b.clear();
  EXPECT_EQ(b.steps, 0);
  EXPECT_TRUE(b.x.empty() && b.c.empty() && b.act.empty() && b.logp.empty() && b.value.empty() &&
              b.reward.empty() && b.trunc_value.empty() && b.done.empty());
}
