#include <gtest/gtest.h>

#include "envs/baselines.hpp"
#include "envs/geodc/geodc.hpp"
#include "envs/registry.hpp"
#include "train/world.hpp"

using namespace marlsched;

namespace {
constexpr int kAgents = 4;

struct Outcome {
  std::map<std::string, double> counters;
  double reward = 0;
};

/// Runs `episodes` episodes of round-robin (which forwards a lot) and returns global totals.
Outcome run(const dist::Comm& comm, int agents_per_rank, int copies, int episodes) {
  geodc::Config cfg;
  cfg.episode_slots = 48;
  auto factory = find_env("geodc").make_factory(cfg, kAgents);
  World w(*factory, comm, agents_per_rank, copies, 21);
  auto policy = make_heuristic("round-robin", w.spec(), 0);
  Outcome o;
  w.reset();
  std::vector<int> actions;
  for (int step = 0; step < episodes * cfg.episode_slots; ++step) {
    policy->act(w.policy_input(), actions);
    w.step(actions);
    for (int c = 0; c < w.copies(); ++c)
      for (int a = 0; a < w.num_agents(); ++a) o.reward += w.reward(c, a);
    const auto t = w.global_counters();
    EXPECT_EQ(t.at("arrived"), t.at("completed") + t.at("dropped") + t.at("discarded_at_reset") +
                                   t.at("queued") + t.at("running"))
        << "jobs lost or duplicated at step " << step;
    EXPECT_EQ(t.at("forwarded"), t.at("received"));
  }
  o.counters = w.global_counters();
  return o;
}
}  // namespace

TEST(World, ResultsDoNotDependOnHowAgentsArePlacedOnRanks) {
  auto comm = dist::Comm::world();
  ASSERT_EQ(kAgents % comm.size(), 0) << "run with 1, 2 or 4 ranks";
  const Outcome dist_run = run(comm, kAgents / comm.size(), 2, 2);
  dist::Comm self(MPI_COMM_SELF, false);
  const Outcome serial = run(self, kAgents, 2, 2);
  EXPECT_GT(dist_run.counters.at("forwarded"), 0);
  EXPECT_EQ(dist_run.counters, serial.counters);
  EXPECT_FLOAT_EQ(static_cast<float>(dist_run.reward), static_cast<float>(serial.reward));
}

TEST(World, EpisodesEndTogetherAndResetWithTerminalObservations) {
  auto comm = dist::Comm::world();
  geodc::Config cfg;
  cfg.episode_slots = 5;
  auto factory = find_env("geodc").make_factory(cfg, kAgents);
  World w(*factory, comm, kAgents / comm.size(), 1, 3);
  w.reset();
  const std::vector<int> local(static_cast<std::size_t>(w.local_agents()), 0);
  std::vector<int> acts(local.size());
  for (int k = 0; k < w.local_agents(); ++k)
    acts[static_cast<std::size_t>(k)] = w.first_agent() + k;
  for (int t = 1; t <= 5; ++t) {
    w.step(acts);
    EXPECT_EQ(w.done(0), t == 5);
  }
  EXPECT_TRUE(w.truncated(0));
  const int progress = w.spec().obs_index("progress");
  EXPECT_FLOAT_EQ(w.terminal_obs(0).row(0)[progress], 1.0f);  // slot 5 of 5
  EXPECT_FLOAT_EQ(w.obs(0).row(0)[progress], 0.0f);           // new episode
  EXPECT_EQ(w.episode_step(0), 0);
}

TEST(World, CommonEpisodesGiveCopiesOfAGroupTheSameEpisodes) {
  // ES's antithetic pairs: copies 2j and 2j+1 run the same arrivals and traces, episode after
  // episode; the same actions then give the same rewards, other pairs other episodes.
  auto comm = dist::Comm::world();
  geodc::Config cfg;
  cfg.episode_slots = 6;
  auto factory = find_env("geodc").make_factory(cfg, kAgents);
  World w(*factory, comm, kAgents / comm.size(), 4, 9);
  w.set_common_episodes(2);
  w.reset();
  auto policy = make_heuristic("least-loaded", w.spec(), 0);
  std::vector<int> actions;
  double pair_gap = 0, other_gap = 0;
  for (int step = 0; step < 3 * cfg.episode_slots; ++step) {
    for (int a = 0; a < w.num_agents(); ++a)
      for (int f = 0; f < w.spec().obs_dim(); ++f) {
        EXPECT_EQ(w.obs(0).row(a)[f], w.obs(1).row(a)[f]) << "step " << step;
        EXPECT_EQ(w.obs(2).row(a)[f], w.obs(3).row(a)[f]) << "step " << step;
        other_gap += std::abs(w.obs(0).row(a)[f] - w.obs(2).row(a)[f]);
      }
    policy->act(w.policy_input(), actions);
    w.step(actions);
    for (int a = 0; a < w.num_agents(); ++a) pair_gap += std::abs(w.reward(0, a) - w.reward(1, a));
  }
  EXPECT_EQ(pair_gap, 0.0);
  EXPECT_GT(other_gap, 0.0);
}

TEST(World, PrivilegedFieldsAreGatheredWhereALearnerAsksForThem) {
  // Each agent's privileged row in every rank's view is what its shard writes, at any placement
  // on ranks; the terminal view keeps the episode's last ones. Off by default.
  auto comm = dist::Comm::world();
  geodc::Config cfg;
  cfg.episode_slots = 6;
  auto factory = find_env("geodc").make_factory(cfg, kAgents);
  World plain(*factory, comm, kAgents / comm.size(), 2, 5);
  plain.reset();
  EXPECT_EQ(plain.obs(0).privileged, nullptr);
  World w(*factory, comm, kAgents / comm.size(), 2, 5);
  w.set_privileged(true);
  w.reset();
  dist::Comm self(MPI_COMM_SELF, false);
  World serial(*factory, self, kAgents, 2, 5);
  serial.set_privileged(true);
  serial.reset();
  const int pd = w.spec().privileged_dim();
  std::vector<float> mine(static_cast<std::size_t>(pd));
  auto policy = make_heuristic("least-loaded", w.spec(), 0);
  std::vector<int> actions, serial_actions;
  double total = 0;
  for (int step = 0; step < 2 * cfg.episode_slots; ++step) {
    for (int c = 0; c < 2; ++c) {
      ASSERT_EQ(w.obs(c).privileged_dim, pd);
      for (int k = 0; k < w.local_agents(); ++k) {
        w.shard(c, k).privileged(mine.data());
        const float* row = w.obs(c).privileged_row(w.first_agent() + k);
        EXPECT_EQ(std::vector<float>(row, row + pd), mine) << "step " << step;
      }
      for (int a = 0; a < kAgents; ++a)
        for (int f = 0; f < pd; ++f) {
          EXPECT_EQ(w.obs(c).privileged_row(a)[f], serial.obs(c).privileged_row(a)[f]);
          total += w.obs(c).privileged_row(a)[f];
        }
    }
    policy->act(w.policy_input(), actions);
    w.step(actions);
    policy->act(serial.policy_input(), serial_actions);
    serial.step(serial_actions);
    if (w.done(0)) {
      for (int a = 0; a < kAgents; ++a)  // nothing arrives after the last slot
        EXPECT_EQ(w.terminal_obs(0).privileged_row(a)[2], 0.f);
    }
  }
  EXPECT_GT(total, 0.0);
}

TEST(World, EveryShardGivesAPlannerEveryRanksStateAndItActsAsOnOneRank) {
  auto comm = dist::Comm::world();
  geodc::Config cfg;
  cfg.episode_slots = 6;
  auto factory = find_env("geodc").make_factory(cfg, kAgents);
  const int k = kAgents / comm.size(), copies = 2;
  World w(*factory, comm, k, copies, 9);
  EXPECT_EQ(w.policy_input().every_shard.size(), comm.size() == 1 ? 2u * kAgents : 0u)
      << "every shard comes only where asked for, unless this rank holds every agent";
  w.set_every_shard(true);
  w.reset();
  dist::Comm self(MPI_COMM_SELF, false);
  World serial(*factory, self, kAgents, copies, 9);
  serial.reset();
  auto mpc = make_heuristic("mpc", w.spec(), 0), serial_mpc = make_heuristic("mpc", w.spec(), 0);
  std::vector<int> actions, serial_actions;
  // Through two episodes (a reset in between): every shard this rank sees, its own or a
  // replica, is in the state of the serial world's shard of that agent and copy, and the MPC
  // decides for this rank's agents what it decides for them there.
  for (int step = 0; step < 2 * cfg.episode_slots; ++step) {
    const PolicyInput in = w.policy_input(), sin = serial.policy_input();
    ASSERT_EQ(in.every_shard.size(), static_cast<std::size_t>(copies * kAgents));
    for (std::size_t i = 0; i < in.every_shard.size(); ++i)
      ASSERT_EQ(in.every_shard[i]->save_state(), sin.every_shard[i]->save_state())
          << "step " << step << ", copy " << i / kAgents << ", agent " << i % kAgents;
    mpc->act(in, actions);
    serial_mpc->act(sin, serial_actions);
    ASSERT_EQ(actions.size(), static_cast<std::size_t>(copies * k));
    for (int c = 0; c < copies; ++c)
      for (int kk = 0; kk < k; ++kk)
        EXPECT_EQ(actions[static_cast<std::size_t>(c * k + kk)],
                  serial_actions[static_cast<std::size_t>(c * kAgents + w.first_agent() + kk)])
            << "step " << step;
    w.step(actions);
    serial.step(serial_actions);
  }
  EXPECT_FLOAT_EQ(w.reward(0, 0), serial.reward(0, 0));
}
