#include <gtest/gtest.h>

#include <algorithm>

#include "agents/dqn/dqn.hpp"
#include "agents/mappo/mappo.hpp"
#include "agents/registry.hpp"
#include "core/error.hpp"

using namespace marlsched;

TEST(Registry, EveryLearnerIsOneRowOfTheTable) {
  const auto& names = learner_names();
  for (const char* n : {"mappo", "ippo", "dqn", "tsdqn", "es"})
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  LearnerConfigs cfg;
  EXPECT_THROW(cfg.validate("nope"), ConfigError);
  EnvSpec spec;
  spec.episode_length = 96;
  EXPECT_EQ(cfg.rollout_steps("ippo", spec), cfg.get<MappoConfig>().rollout_steps);
  EXPECT_EQ(cfg.rollout_steps("tsdqn", spec), cfg.get<DqnConfig>().rollout_steps);
  EXPECT_EQ(cfg.rollout_steps("es", spec), 96);  // one whole episode per iteration
  cfg.check_copies("mappo", 3);
  cfg.check_copies("es", 4);
  EXPECT_THROW(cfg.check_copies("es", 3), ConfigError);  // antithetic pairs
  EXPECT_THROW(cfg.check_copies("es", 0), ConfigError);
}
