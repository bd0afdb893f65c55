#include "agents/masac/masac.hpp"
#include "core/error.hpp"

namespace marlsched {

void MasacConfig::bind(OptionBinder& b) {
  b.group("Agent: multi-agent soft actor-critic (masac)");
  b.add("sac-lr-actor", lr_actor, "actor learning rate (Adam)");
  b.add("sac-lr-critic", lr_critic, "critic learning rate (Adam)");
  b.add("sac-lr-alpha", lr_alpha, "temperature learning rate (Adam, on log α)");
  b.add("sac-gamma", gamma, "discount factor");
  b.add("sac-tau", tau, "Polyak rate of the target critics per gradient step");
  b.add("sac-actor-hidden", actor_hidden, "actor hidden layer sizes");
  b.add("sac-critic-hidden", critic_hidden, "critic hidden layer sizes");
  b.add("sac-buffer", buffer, "replay capacity in (step, env copy) entries per rank");
  b.add("sac-batch", batch, "(entry, agent) samples per gradient step per rank");
  b.add("sac-warmup", warmup, "replay entries before learning starts");
  b.add("sac-updates", updates, "gradient steps per iteration");
  b.add("sac-target-entropy", target_entropy,
        "target policy entropy as a fraction of log(number of actions)");
  b.add("sac-init-alpha", init_alpha, "initial temperature α");
  b.add("sac-max-grad-norm", max_grad_norm, "global gradient norm clip (actor and critics)");
  b.add("sac-team-reward", team_reward,
        "β in reward = (1-β)·own + β·team (every agent, or --team-scope targets)");
  b.add("sac-rollout-steps", rollout_steps, "environment steps per iteration");
}

void MasacConfig::validate() const {
  require_learning_rate(lr_actor, "sac-lr-actor");
  require_learning_rate(lr_critic, "sac-lr-critic");
  require_learning_rate(lr_alpha, "sac-lr-alpha");
  require_positive(init_alpha, "sac-init-alpha");
  require_positive(max_grad_norm, "sac-max-grad-norm");
  MARLSCHED_REQUIRE(gamma >= 0 && gamma < 1, "--sac-gamma must be in [0, 1), got " << gamma);
  MARLSCHED_REQUIRE(tau > 0 && tau <= 1, "--sac-tau must be in (0, 1], got " << tau);
  for (const auto* h : {&actor_hidden, &critic_hidden}) {
    MARLSCHED_REQUIRE(!h->empty(), "--sac-actor-hidden and --sac-critic-hidden need a layer");
    for (int w : *h) MARLSCHED_REQUIRE(w > 0, "--sac-*-hidden sizes must be positive");
  }
  MARLSCHED_REQUIRE(batch >= 1, "--sac-batch must be >= 1, got " << batch);
  MARLSCHED_REQUIRE(warmup >= 1 && warmup <= buffer,
                    "--sac-warmup must be between 1 and --sac-buffer, got " << warmup);
  MARLSCHED_REQUIRE(updates >= 0, "--sac-updates must be >= 0");
  MARLSCHED_REQUIRE(
      target_entropy >= 0 && target_entropy < 1,
      "--sac-target-entropy is a fraction of log(actions) in [0, 1), got " << target_entropy);
  MARLSCHED_REQUIRE(team_reward >= 0 && team_reward <= 1, "--sac-team-reward must be in [0, 1]");
  MARLSCHED_REQUIRE(rollout_steps >= 1, "--sac-rollout-steps must be >= 1");
}

}  // namespace marlsched
