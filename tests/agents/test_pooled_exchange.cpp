// MAPPO's pooled critic across ranks (run at 1, 2 and 4 ranks): each rank embeds only its own
// agents, and the ranks exchange per-(step, copy) sums of the embeddings, and in the update those
// sums' gradients, never another agent's observation. Yet the values it computes, and what its
// update learns, equal those of one process that holds every agent and pools all embeddings
// itself. EmbeddingPool, the collective itself, is tested last.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "agents/mappo/embedding_pool.hpp"
#include "agents/mappo/mappo.hpp"
#include "bandit.hpp"
#include "core/error.hpp"

using namespace marlsched;

namespace {

constexpr int kAgents = 4, kCopies = 2, kSteps = 6;

MappoConfig pooled_config(ActorKind actor = ActorKind::kMlp) {
  MappoConfig cfg;
  cfg.actor = actor;
  cfg.critic = CriticKind::kPooled;
  cfg.critic_embed = 8;
  cfg.critic_hidden = {16};
  cfg.actor_hidden = {8};
  cfg.rollout_steps = kSteps;
  cfg.epochs = 2;
  cfg.minibatches = 3;
  cfg.lr_critic = 3e-3;  // large enough that one update moves the values well past the tolerance
  return cfg;
}

/// Random global observations of every copy, the same on every rank (fixed seed).
struct Globals {
  std::vector<std::vector<float>> obs;  // [copy][agent * obs_dim]
  std::vector<GlobalObs> view() {
    std::vector<GlobalObs> g;
    for (auto& o : obs) g.push_back(GlobalObs{o.data(), kAgents, 2});
    return g;
  }
};
Globals draw(std::mt19937& gen) {
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  Globals g;
  g.obs.resize(kCopies);
  for (auto& o : g.obs)
    for (int j = 0; j < kAgents * 2; ++j) o.push_back(u(gen));
  return g;
}

PolicyInput input_of(const EnvSpec& spec, Globals& g, int first, int k) {
  PolicyInput in;
  in.spec = &spec;
  in.copies = kCopies;
  in.num_agents = kAgents;
  in.first_agent = first;
  in.local_agents = k;
  in.global = g.view();
  in.episode_step.assign(kCopies, 0);
  return in;
}

/// The values of `split` (agents first .. first+k-1) equal those `whole` gives the same agents.
void expect_same_values(const Decisions& split, const Decisions& whole, int first, int k,
                        const char* when) {
  const auto& vs = split.values;
  const auto& vw = whole.values;
  ASSERT_EQ(vs.size(), static_cast<std::size_t>(kCopies * k));
  ASSERT_EQ(vw.size(), static_cast<std::size_t>(kCopies * kAgents));
  for (int c = 0; c < kCopies; ++c)
    for (int kk = 0; kk < k; ++kk) {
      const float a = vs[static_cast<std::size_t>(c * k + kk)];
      const float b = vw[static_cast<std::size_t>(c * kAgents + first + kk)];
      EXPECT_NEAR(a, b, 2e-5 * std::max(1.f, std::abs(b)))
          << when << ": copy " << c << ", agent " << first + kk;
    }
}

/// Trains the pooled critic split over the ranks and in one process holding every agent, on the
/// same observations and rewards, and compares their values before and after the update.
void expect_split_equals_whole(const EnvSpec& spec, const MappoConfig& cfg) {
  const auto world = dist::Comm::world();
  const dist::Comm self(MPI_COMM_SELF, false);
  const int k = kAgents / world.size(), first = world.rank() * k;
  // The same seed: both start from the same critic (and the split one broadcasts rank 0's).
  Mappo split(cfg, test::layout(spec, world, kAgents, first, k, kCopies, 5));
  Mappo whole(cfg, test::layout(spec, self, kAgents, 0, kAgents, kCopies, 5));
  std::mt19937 gen(17);
  StepFeedback fs, fw;  // the split learner's feedback (its agents) and the whole one's
  fs.reward.resize(static_cast<std::size_t>(kCopies * k));
  fw.reward.resize(static_cast<std::size_t>(kCopies * kAgents));
  fs.done = fw.done = std::vector<char>(kCopies, 0);
  fs.truncated = fw.truncated = std::vector<char>(kCopies, 0);
  fs.terminal = fw.terminal = std::vector<GlobalObs>(kCopies);
  Globals g = draw(gen), terminal;
  float before = 0;  // a value before the update, to see that the update moved it
  for (int t = 0; t < kSteps; ++t) {
    auto in_s = input_of(spec, g, first, k), in_w = input_of(spec, g, 0, kAgents);
    split.set_training(true);
    whole.set_training(true);
    const Decisions ds = split.act(in_s), dw = whole.act(in_w);
    expect_same_values(ds, dw, first, k, "rollout");
    if (t == 0) before = dw.values[0];
    // Rewards that do not depend on the (differently sampled) actions, so that both critics
    // see the same returns; copy 0 is truncated at step 3, which bootstraps from its terminal
    // observation (another pooled exchange inside record()).
    for (int c = 0; c < kCopies; ++c)
      for (int ag = 0; ag < kAgents; ++ag) {
        const float r =
            std::sin(0.7f * static_cast<float>(t * kAgents + ag) + static_cast<float>(c));
        fw.reward[static_cast<std::size_t>(c * kAgents + ag)] = r;
        if (ag >= first && ag < first + k)
          fs.reward[static_cast<std::size_t>(c * k + ag - first)] = r;
      }
    const char end = t == 3 ? 1 : 0;
    fs.done[0] = fw.done[0] = fs.truncated[0] = fw.truncated[0] = end;
    g = draw(gen);
    if (end) {
      terminal = draw(gen);
      fs.terminal[0] = fw.terminal[0] = terminal.view()[0];
    }
    split.record(fs);
    whole.record(fw);
  }
  auto last_s = input_of(spec, g, first, k), last_w = input_of(spec, g, 0, kAgents);
  split.update(last_s);
  whole.update(last_w);
  EXPECT_TRUE(split.shared_parameters_identical());
  // After the update (its encoder gradients reached this rank's agents only through the
  // exchanged embedding gradients), the critics still agree on fresh observations.
  Globals fresh = draw(gen);
  std::mt19937 again(17);  // the first step's observations, to compare with `before`
  Globals first_obs = draw(again);
  Decisions dw;
  for (Globals* obs : {&fresh, &first_obs}) {
    auto in_s = input_of(spec, *obs, first, k), in_w = input_of(spec, *obs, 0, kAgents);
    const Decisions ds = split.act(in_s);
    dw = whole.act(in_w);
    expect_same_values(ds, dw, first, k, "after the update");
  }
  EXPECT_GT(std::abs(dw.values[0] - before), 1e-3) << "the update did not move the critic";
}

}  // namespace

TEST(PooledCriticAcrossRanks, ValuesAndUpdatesEqualOneProcessHoldingEveryAgent) {
  if (kAgents % dist::Comm::world().size() != 0) GTEST_SKIP() << "needs a rank count dividing 4";
  expect_split_equals_whole(test::bandit_spec(), pooled_config());
}

TEST(PooledCriticAcrossRanks, WithThePerTargetActorTheHeadReadsTheNeighbourhoodToo) {
  if (kAgents % dist::Comm::world().size() != 0) GTEST_SKIP() << "needs a rank count dividing 4";
  expect_split_equals_whole(test::targeted_bandit_spec(kAgents),
                            pooled_config(ActorKind::kTargets));
}

TEST(PooledCriticAcrossRanks, RanksThatDoNotHoldEveryAgentAreRefused) {
  // Two learners on one process, each with half of the agents, cannot pool: the check that the
  // ranks of the communicator hold all agents stops the first exchange.
  const dist::Comm self(MPI_COMM_SELF, false);
  const auto spec = test::bandit_spec();
  Mappo half(pooled_config(), test::layout(spec, self, kAgents, 0, kAgents / 2, kCopies, 5));
  std::mt19937 gen(3);
  Globals g = draw(gen);
  auto in = input_of(spec, g, 0, kAgents / 2);
  std::vector<int> a;
  half.set_training(true);
  EXPECT_THROW(half.act(in, a), Error);
}

TEST(EmbeddingPool, TheMeanOverEveryRanksAgentsIsTheSameOnEveryRank) {
  const auto comm = dist::Comm::world();
  const int k = 2, n = k * comm.size(), groups = 3, width = 5;
  const EmbeddingPool pool(comm, k, n, torch::kCPU);
  // Rank r's sum for group g, column c: (r + 1) * (g + 1) + c.
  auto S = torch::empty({groups, width});
  for (int g = 0; g < groups; ++g)
    for (int c = 0; c < width; ++c) S[g][c] = static_cast<float>((comm.rank() + 1) * (g + 1) + c);
  double t_comm = 0;
  const auto P = pool.mean(S, &t_comm);
  ASSERT_EQ(P.sizes(), S.sizes());
  EXPECT_FALSE(P.requires_grad());
  const double ranks_sum = comm.size() * (comm.size() + 1) / 2.0;  // sum of (r + 1)
  for (int g = 0; g < groups; ++g)
    for (int c = 0; c < width; ++c)
      EXPECT_FLOAT_EQ(P[g][c].item<float>(),
                      static_cast<float>((ranks_sum * (g + 1) + comm.size() * c) / n));
  EXPECT_GE(t_comm, 0.0);
  EXPECT_EQ(S[0][0].item<float>(), static_cast<float>(comm.rank() + 1));  // input untouched
}
