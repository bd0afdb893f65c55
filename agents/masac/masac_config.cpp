#include "agents/masac/masac.hpp"
#include "core/error.hpp"

namespace marlsched {

void MasacConfig::bind(OptionBinder& b) {
  b.group("Agent: multi-agent soft actor-critic (masac)");
  b.add("sac-lr-actor", lr_actor, "actor learning rate (Adam)").learning_rate();
  b.add("sac-lr-critic", lr_critic, "critic learning rate (Adam)").learning_rate();
  b.add("sac-lr-alpha", lr_alpha, "temperature learning rate (Adam, on log α)").learning_rate();
  b.add("sac-gamma", gamma, "discount factor").at_least(0).less_than(1);
  b.add("sac-tau", tau, "Polyak rate of the target critics per gradient step")
      .greater_than(0)
      .at_most(1);
  b.add("sac-actor-hidden", actor_hidden, "actor hidden layer sizes").positive();
  b.add("sac-critic-hidden", critic_hidden, "critic hidden layer sizes").positive();
  b.add("sac-buffer", buffer, "replay capacity in (step, env copy) entries per rank");
  b.add("sac-batch", batch, "(entry, agent) samples per gradient step per rank").at_least(1);
  b.add("sac-warmup", warmup, "replay entries before learning starts").at_least(1);
  b.add("sac-updates", updates, "gradient steps per iteration").at_least(0);
  b.add("sac-target-entropy", target_entropy,
        "target policy entropy as a fraction of log(number of actions)")
      .at_least(0)
      .less_than(1);
  b.add("sac-init-alpha", init_alpha, "initial temperature α").positive();
  b.add("sac-max-grad-norm", max_grad_norm, "global gradient norm clip (actor and critics)")
      .positive();
  b.add("sac-team-reward", team_reward,
        "β in reward = (1-β)·own + β·team (every agent, or --team-scope targets)")
      .in(0, 1);
  b.add("sac-rollout-steps", rollout_steps, "environment steps per iteration").at_least(1);
}

void MasacConfig::validate() const {
  check_declared(*this);
  MARLSCHED_REQUIRE(!actor_hidden.empty() && !critic_hidden.empty(),
                    "--sac-actor-hidden and --sac-critic-hidden need a layer");
  MARLSCHED_REQUIRE(warmup <= buffer,
                    "--sac-warmup must be between 1 and --sac-buffer, got " << warmup);
}

}  // namespace marlsched
