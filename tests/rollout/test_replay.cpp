#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "rollout/replay.hpp"

using namespace marlsched;

// The one replay ring of the off-policy learners: entries of any width, the oldest overwritten
// once full, size capped at the capacity.
TEST(Replay, RingKeepsTheNewestEntriesOfAnyWidth) {
  rollout::Replay rb;
  rb.init(3, 2, 2, 1);  // 3 entries: 2 floats of observation, 2 actions, 1 reward
  for (int i = 0; i < 5; ++i) {
    const float o[2] = {static_cast<float>(i), -static_cast<float>(i)};
    const float o2[2] = {static_cast<float>(i + 1), 0.f};
    const std::int64_t a[2] = {i, 10 + i};
    const float r = 0.5f * static_cast<float>(i);
    rb.push(o, a, &r, i % 2 == 1, o2);
    EXPECT_EQ(rb.size, std::min(i + 1, 3));
  }
  EXPECT_EQ(rb.head, 2);  // entries 3, 4 overwrote slots 0, 1; slot 2 holds entry 2
  EXPECT_EQ(rb.obs, (std::vector<float>{3, -3, 4, -4, 2, -2}));
  EXPECT_EQ(rb.next_obs, (std::vector<float>{4, 0, 5, 0, 3, 0}));
  EXPECT_EQ(rb.actions, (std::vector<std::int64_t>{3, 13, 4, 14, 2, 12}));
  EXPECT_EQ(rb.rewards, (std::vector<float>{1.5f, 2.f, 1.f}));
  EXPECT_EQ(rb.term, (std::vector<float>{1, 0, 0}));
  rb.init(2, 1);  // re-initialised: empty, default widths 1
  EXPECT_EQ(rb.size, 0);
  EXPECT_EQ(rb.actions.size(), 2u);
  // One action and one reward per entry (DQN's ring) go in by value.
  for (int i = 0; i < 3; ++i) {
    const float o = static_cast<float>(i), o2 = o + 1;
    rb.push(&o, std::int64_t{7 + i}, 0.25f * static_cast<float>(i), i == 2, &o2);
  }
  EXPECT_EQ(rb.size, 2);
  EXPECT_EQ(rb.obs, (std::vector<float>{2, 1}));
  EXPECT_EQ(rb.actions, (std::vector<std::int64_t>{9, 8}));
  EXPECT_EQ(rb.rewards, (std::vector<float>{0.5f, 0.25f}));
  EXPECT_EQ(rb.term, (std::vector<float>{1, 0}));
}
