// TorchScript export of MAPPO: the exported module gives the trainer's action probabilities and
// critic values on the same raw observations (to 1e-6), in libtorch here and in PyTorch (Debian's
// python3-torch, through tests/agents/check_export.py); separate actors trained on different
// ranks are gathered into one module.
#include <gtest/gtest.h>
#include <torch/script.h>

#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <map>
#include <random>

#include "agents/mappo/mappo.hpp"
#include "test_util.hpp"

using namespace marlsched;

namespace {

EnvSpec spec() {
  EnvSpec s;
  s.name = "export-test";
  s.obs_fields = {"a", "b", "c", "d", "e"};
  s.num_public = 2;
  s.action_names = {"x", "y", "z", "w"};
  s.reward_components = {"r"};
  s.episode_length = 8;
  return s;
}

/// The same with a targeted action space: n agents, each with itself and its two ring
/// neighbours as targets, two modes (6 actions), one static pair feature.
EnvSpec targeted_spec(int n) {
  EnvSpec s = spec();
  s.action_names = {"m0t0", "m0t1", "m0t2", "m1t0", "m1t1", "m1t2"};
  s.target_feature_names = {"dist"};
  for (int i = 0; i < n; ++i) {
    s.targets.push_back({i, (i + 1) % n, (i + n - 1) % n});
    s.target_features.push_back({0.f, 0.5f + 0.1f * static_cast<float>(i), 2.f});
  }
  return s;
}

struct Case {
  int agent;
  std::vector<float> obs, probs;
  float value;
};

/// Expected outputs from the learners that own each agent: `owners[a]` = (learner, local index).
std::vector<Case> expected(const std::vector<std::pair<Mappo*, int>>& owners, int n, int d, int k,
                           int cases, std::uint64_t seed) {
  std::mt19937 gen(static_cast<unsigned>(seed));
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  std::vector<Case> out;
  for (int i = 0; i < cases; ++i) {
    Case c;
    c.agent = i % n;
    for (int j = 0; j < n * d; ++j) c.obs.push_back(u(gen));
    auto [learner, local] = owners[static_cast<std::size_t>(c.agent)];
    const GlobalObs g{c.obs.data(), n, d};
    c.probs = learner->action_probs(g, local);
    // The critic's value from a training-mode act() on this one observation.
    PolicyInput in;
    in.copies = 1;
    in.num_agents = n;
    in.global = {g};
    in.episode_step = {0};
    in.local_agents = k;
    learner->set_training(true);
    c.value = learner->act(in).values[static_cast<std::size_t>(local)];
    out.push_back(std::move(c));
  }
  return out;
}

void check_in_libtorch(const std::string& path, const std::vector<Case>& cases, int n, int d) {
  auto m = torch::jit::load(path);
  for (const auto& c : cases) {
    auto obs = torch::from_blob(const_cast<float*>(c.obs.data()), {n, d}, torch::kFloat32);
    auto p = m.get_method("probs")({obs, c.agent}).toTensor();
    ASSERT_EQ(p.numel(), static_cast<std::int64_t>(c.probs.size()));
    for (std::size_t j = 0; j < c.probs.size(); ++j)
      EXPECT_NEAR(p[static_cast<std::int64_t>(j)].item<float>(), c.probs[j], 1e-6)
          << "agent " << c.agent;
    const float v = m.get_method("value")({obs, c.agent}).toTensor().item<float>();
    EXPECT_NEAR(v, c.value, 1e-5 * std::max(1.f, std::abs(c.value))) << "agent " << c.agent;
    auto out = m.forward({obs, c.agent, true}).toTuple();
    const auto greedy = out->elements()[1].toTensor().item<std::int64_t>();
    EXPECT_EQ(greedy, std::max_element(c.probs.begin(), c.probs.end()) - c.probs.begin());
  }
}

void check_in_python(const std::string& path, const std::vector<Case>& cases, int n, int d,
                     const std::string& dir) {
  const char* src = std::getenv("MARLSCHED_SOURCE_DIR");
  ASSERT_NE(src, nullptr) << "MARLSCHED_SOURCE_DIR is not set";
  const std::string data = dir + "/cases.txt";
  {
    std::ofstream f(data);
    f << std::setprecision(9) << n << ' ' << d << ' ' << cases.size() << '\n';
    for (const auto& c : cases) {
      f << c.agent;
      for (float x : c.obs) f << ' ' << x;
      f << '\n';
      for (float x : c.probs) f << x << ' ';
      f << c.value << '\n';
    }
  }
  const std::string cmd =
      "/usr/bin/python3 " + std::string(src) + "/tests/agents/check_export.py " + path + " " + data;
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

}  // namespace

TEST(Export, SharedActorMatchesTheTrainerInLibtorchAndPyTorch) {
  dist::Comm self(MPI_COMM_SELF, false);
  MappoConfig cfg;
  cfg.actor_hidden = {16, 8};
  cfg.critic_hidden = {12};
  const int n = 3, d = 5;
  Mappo m(cfg, test::layout(spec(), self, n, 0, n, 1, 11));
  const auto dir = test::temp_dir("export-shared");
  const std::string path = dir + "/policy.pt";
  Mappo::export_torchscript({&m}, path, R"({"format": "marlsched-policy"})", true);
  const auto cases = expected({{&m, 0}, {&m, 1}, {&m, 2}}, n, d, n, 9, 5);
  check_in_libtorch(path, cases, n, d);
  check_in_python(path, cases, n, d, dir);
}

TEST(Export, SeparateActorsFromSeveralRanksAreGathered) {
  dist::Comm self(MPI_COMM_SELF, false);
  MappoConfig cfg;
  cfg.share_actor = false;
  cfg.actor_hidden = {8};
  cfg.critic_hidden = {8};
  const int n = 4, d = 5, k = 2;
  // Two "ranks" of a 2 x 2 layout, as `marlsched export` loads them from a run directory.
  Mappo r0(cfg, test::layout(spec(), self, n, 0, k, 1, 3)),
      r1(cfg, test::layout(spec(), self, n, 2, k, 1, 3));
  const auto dir = test::temp_dir("export-separate");
  const std::string path = dir + "/policy.pt";
  Mappo::export_torchscript({&r0, &r1}, path, "{}", true);
  const auto cases = expected({{&r0, 0}, {&r0, 1}, {&r1, 0}, {&r1, 1}}, n, d, k, 8, 6);
  // The four actors differ (distinct initialisation per agent), so a mix-up would show.
  EXPECT_NE(cases[0].probs, cases[1].probs);
  check_in_libtorch(path, cases, n, d);
  check_in_python(path, cases, n, d, dir);
}

TEST(Export, ActorGroupsMatchTheTrainer) {
  dist::Comm self(MPI_COMM_SELF, false);
  MappoConfig cfg;
  cfg.actor_groups = {0, 1, 1, 0};  // agents 0 and 3 share an actor, 1 and 2 another
  cfg.actor_hidden = {8};
  cfg.critic_hidden = {8};
  const int n = 4, d = 5, k = 2;
  Mappo r0(cfg, test::layout(spec(), self, n, 0, k, 1, 3)),
      r1(cfg, test::layout(spec(), self, n, 2, k, 1, 3));
  const auto dir = test::temp_dir("export-groups");
  const std::string path = dir + "/policy.pt";
  Mappo::export_torchscript({&r0, &r1}, path, "{}", true);
  const auto cases = expected({{&r0, 0}, {&r0, 1}, {&r1, 0}, {&r1, 1}}, n, d, k, 8, 6);
  check_in_libtorch(path, cases, n, d);
  check_in_python(path, cases, n, d, dir);
  // Agents 1 and 2 run their group's network, agent 0 the other's: the per-agent branches of
  // the exported module carry those weights.
  auto mod = torch::jit::load(path);
  std::map<std::string, torch::Tensor> w;
  for (const auto& p : mod.named_parameters(false)) w[p.name] = p.value;
  ASSERT_TRUE(w.count("actor1_fc0_weight") && w.count("actor2_fc0_weight")) << "parameter names";
  EXPECT_TRUE(torch::equal(w["actor1_fc0_weight"], w["actor2_fc0_weight"]));
  EXPECT_TRUE(torch::equal(w["actor0_fc0_weight"], w["actor3_fc0_weight"]));
  EXPECT_FALSE(torch::equal(w["actor0_fc0_weight"], w["actor1_fc0_weight"]));
  EXPECT_EQ(r0.shared_parameter_digest(), r1.shared_parameter_digest())
      << "every rank holds every group's actor, identical";
}

TEST(Export, IppoDecentralizedCriticMatchesTheTrainer) {
  dist::Comm self(MPI_COMM_SELF, false);
  MappoConfig cfg;
  cfg.critic = CriticKind::kLocal;
  cfg.actor_hidden = {8};
  cfg.critic_hidden = {8};
  const int n = 3, d = 5;
  Mappo m(cfg, test::layout(spec(), self, n, 0, n, 1, 17));
  const auto dir = test::temp_dir("export-ippo");
  const std::string path = dir + "/policy.pt";
  Mappo::export_torchscript({&m}, path, "{}", true);
  const auto cases = expected({{&m, 0}, {&m, 1}, {&m, 2}}, n, d, n, 6, 7);
  check_in_libtorch(path, cases, n, d);
  check_in_python(path, cases, n, d, dir);
}

TEST(Export, PooledCriticMatchesTheTrainer) {
  dist::Comm self(MPI_COMM_SELF, false);
  MappoConfig cfg;
  cfg.critic = CriticKind::kPooled;
  cfg.critic_embed = 6;
  cfg.actor_hidden = {8};
  cfg.critic_hidden = {8};
  const int n = 4, d = 5;
  Mappo m(cfg, test::layout(spec(), self, n, 0, n, 1, 19));
  const auto dir = test::temp_dir("export-pooled");
  const std::string path = dir + "/policy.pt";
  Mappo::export_torchscript({&m}, path, "{}", true);
  const auto cases = expected({{&m, 0}, {&m, 1}, {&m, 2}, {&m, 3}}, n, d, n, 8, 9);
  check_in_libtorch(path, cases, n, d);
  check_in_python(path, cases, n, d, dir);
}

TEST(Export, PerTargetActorMatchesTheTrainer) {
  dist::Comm self(MPI_COMM_SELF, false);
  MappoConfig cfg;
  cfg.actor = ActorKind::kTargets;
  cfg.critic = CriticKind::kPooled;
  cfg.critic_embed = 6;
  cfg.actor_hidden = {8, 8};
  cfg.critic_hidden = {8};
  const int n = 4, d = 5;
  Mappo m(cfg, test::layout(targeted_spec(n), self, n, 0, n, 1, 23));
  const auto dir = test::temp_dir("export-targets");
  Mappo::export_torchscript({&m}, dir + "/policy.pt", "{}", true);
  const auto cases = expected({{&m, 0}, {&m, 1}, {&m, 2}, {&m, 3}}, n, d, n, 8, 29);
  check_in_libtorch(dir + "/policy.pt", cases, n, d);
  check_in_python(dir + "/policy.pt", cases, n, d, dir);
  // One scoring network per group (the per-agent branches of the module). The two learners
  // stand for two ranks without running as two: the critic that concatenates observations
  // computes their values alone, where the pooled one needs its ranks together (pool()).
  cfg.actor_groups = {0, 1, 0, 1};
  cfg.critic = CriticKind::kConcat;
  const int k = 2;
  Mappo r0(cfg, test::layout(targeted_spec(n), self, n, 0, k, 1, 31)),
      r1(cfg, test::layout(targeted_spec(n), self, n, 2, k, 1, 31));
  Mappo::export_torchscript({&r0, &r1}, dir + "/groups.pt", "{}", true);
  const auto gcases = expected({{&r0, 0}, {&r0, 1}, {&r1, 0}, {&r1, 1}}, n, d, k, 8, 37);
  check_in_libtorch(dir + "/groups.pt", gcases, n, d);
  check_in_python(dir + "/groups.pt", gcases, n, d, dir);
}
