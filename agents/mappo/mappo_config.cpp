#include "agents/mappo/mappo.hpp"
#include "core/error.hpp"

namespace marlsched {

void MappoConfig::bind(OptionBinder& b) {
  b.group("Agent: MAPPO");
  b.add("lr-actor", lr_actor, "actor learning rate (Adam)").learning_rate();
  b.add("lr-critic", lr_critic, "critic learning rate (Adam)").learning_rate();
  b.add("gamma", gamma, "discount factor").greater_than(0).at_most(1);
  b.add("gae-lambda", gae_lambda, "GAE λ").in(0, 1);
  b.add("clip", clip, "PPO clipping ε").positive();
  b.add("epochs", epochs, "PPO epochs per update").at_least(1);
  b.add("minibatches", minibatches, "minibatches per epoch (per rank)").at_least(1);
  b.add("entropy-coef", entropy_coef, "entropy bonus coefficient").at_least(0);
  b.add("value-coef", value_coef, "value loss coefficient").positive();
  b.add("huber-delta", huber_delta, "Huber loss δ for the value loss").positive();
  b.add("max-grad-norm", max_grad_norm, "global gradient norm clip (actor and critic separately)")
      .positive();
  b.add("actor-hidden", actor_hidden, "actor hidden layer sizes").positive();
  b.choice(
      "actor", actor, {{"mlp", ActorKind::kMlp}, {"targets", ActorKind::kTargets}},
      "actor: mlp (own observation, every site's public fields and the agent id; grows with the "
      "agent count) or targets (one network scores each (mode, target) of the env's targeted "
      "actions, e.g. geodc, from the own observation and the target's features; size "
      "independent of the agent count)");
  b.add("critic-hidden", critic_hidden, "critic hidden layer sizes").positive();
  b.choice(
      "critic", critic, {{"concat", CriticKind::kConcat}, {"pooled", CriticKind::kPooled}},
      "critic input: concat (every agent's observation and the agent id; grows with the agent "
      "count) or pooled (own observation and the mean of a shared per-agent embedding, which the "
      "ranks exchange as one fixed-size sum per step; size "
      "independent of the agent count)");
  b.add(
      "critic-privileged", critic_privileged,
      "with --critic concat: the critic also reads every agent's privileged fields (the env's "
      "hindsight of the episode ahead, e.g. geodc's arrivals to come and true carbon and prices), "
      "gathered during training only; the actors never see them");
  b.add("critic-embed", critic_embed, "embedding width of the pooled critic").at_least(1);
  b.add("share-actor", share_actor, "one actor shared by all agents (with agent-id input)");
  b.add("actor-groups", actor_groups,
        "group of each agent, in agent order (0, 1, ...): one actor per group, shared by its "
        "agents across ranks (heterogeneous agents); empty: --share-actor decides");
  b.add("value-norm", value_norm, "normalise value targets with running moments");
  b.add("overlap-grads", overlap_grads,
        "start the critic's gradient allreduce (MPI_Iallreduce) before the actor's backward pass, "
        "so that they may overlap; off: blocking allreduces (MPI_Allreduce) after both, faster "
        "where the MPI library has no asynchronous progress");
  b.add("team-reward", team_reward,
        "β in reward = (1-β)·own + β·team (every agent, or --team-scope targets)")
      .in(0, 1);
  b.add("rollout-steps", rollout_steps, "environment steps per update").at_least(1);
  b.add("common-episodes", common_episodes,
        "copies per group that run the same episodes (common random numbers); above 1 the "
        "actor's advantage is centred on the group's other copies' at the same step and agent "
        "(--envs-per-rank a multiple of it; fixed-length episodes)")
      .in(1, 1024);
  b.add("imitate", imitate,
        "warm start: a heuristic baseline (e.g. least-loaded) whose action in every state the "
        "policy visits the actor also learns, by cross-entropy, for the first "
        "--imitate-iterations updates (DAgger-style; empty: none)");
  b.add("imitate-iterations", imitate_iterations,
        "updates over which the imitation weight falls linearly from --imitate-coef to 0")
      .at_least(0);
  b.add("imitate-coef", imitate_coef, "initial weight of the imitation loss").at_least(0);
  b.add("base-policy", base_policy,
        "a baseline of the env that the actor departs from: its logits gain --base-margin on the "
        "baseline's action in every state (residual policy; empty: none)");
  b.add("base-margin", base_margin, "logit added to the --base-policy baseline's action")
      .positive();
}

const char* critic_name(CriticKind k) {
  switch (k) {
    case CriticKind::kConcat:
      return "concat";
    case CriticKind::kPooled:
      return "pooled";
    case CriticKind::kLocal:
      return "local";
  }
  return "?";
}

void MappoConfig::validate() const {
  check_declared(*this);
  MARLSCHED_REQUIRE(!actor_hidden.empty() && !critic_hidden.empty(),
                    "--actor-hidden and --critic-hidden need at least one layer");
  MARLSCHED_REQUIRE(!critic_privileged || critic == CriticKind::kConcat,
                    "--critic-privileged extends the concat critic's input; --critic "
                        << critic_name(critic)
                        << " has none (IPPO's critic reads the actor's input): use "
                        << "--algo mappo --critic concat");
  MARLSCHED_REQUIRE(imitate.empty() || imitate_iterations > 0,
                    "--imitate " << imitate << " needs --imitate-iterations > 0");
}

void MappoConfig::check_env(const EnvSpec& spec) const {
  MARLSCHED_REQUIRE(actor != ActorKind::kTargets || spec.num_targets() > 0,
                    "--actor targets needs an env with a targeted action space (geodc); '"
                        << spec.name << "' has none: use --actor mlp");
  MARLSCHED_REQUIRE(actor != ActorKind::kTargets || spec.num_heads() == 1,
                    "--actor targets scores one (mode, target) decision per agent; this env's "
                    "actions take one per class of work (geodc --action-classes): use --actor "
                    "mlp, whose actor scores every action, or --algo es, which scores each "
                    "class's decision");
  MARLSCHED_REQUIRE(!critic_privileged || spec.privileged_dim() > 0,
                    "--critic-privileged needs an env with privileged fields (geodc); '"
                        << spec.name << "' has none");
  MARLSCHED_REQUIRE(common_episodes == 1 || spec.episode_length > 0,
                    "--common-episodes " << common_episodes << " compares copies step by step "
                                         << "within one episode; env '" << spec.name
                                         << "' declares no fixed episode length");
}

}  // namespace marlsched
