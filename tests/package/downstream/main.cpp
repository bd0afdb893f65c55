// A user's program built against the installed library: one world of the geodc env on one
// rank, driven by a heuristic baseline for one episode; then, given an exported policy
// (`marlsched export`), it loads it with torch::jit::load and lets it choose the actions of
// another episode.
#include <torch/script.h>

#include <cmath>
#include <iostream>

#include "dist/comm.hpp"
#include "envs/baselines.hpp"
#include "envs/geodc/geodc.hpp"
#include "envs/registry.hpp"
#include "train/world.hpp"

int main(int argc, char** argv) {
  using namespace marlsched;
  dist::Session session(&argc, &argv);
  auto comm = dist::Comm::world();
  geodc::Config cfg;
  cfg.validate(4);
  auto factory = find_env("geodc").make_factory(cfg, 4);
  World world(*factory, comm, 4, 1, 7);
  auto policy = make_heuristic("least-loaded", world.spec(), 7);
  world.reset();
  std::vector<int> actions;
  double total = 0;
  for (int t = 0; t < cfg.episode_slots; ++t) {
    policy->act(world.policy_input(), actions);
    world.step(actions);
    for (int a = 0; a < 4; ++a) total += world.reward(0, a);
  }
  std::cout << "episode utility " << total << std::endl;
  if (!world.done(0)) return 1;
  if (argc > 1) {  // the exported policy decides every agent's action from raw observations
    auto policy_module = torch::jit::load(argv[1]);
    const int n = world.num_agents(), d = world.spec().obs_dim();
    world.reset();
    total = 0;
    for (int t = 0; t < cfg.episode_slots; ++t) {
      const GlobalObs g = world.obs(0);
      auto obs = torch::from_blob(const_cast<float*>(g.data), {n, d}, torch::kFloat32);
      actions.assign(static_cast<std::size_t>(n), 0);
      for (int a = 0; a < n; ++a) {
        auto out = policy_module.forward({obs, a, true}).toTuple();
        const auto probs = out->elements()[0].toTensor();
        if (std::abs(probs.sum().item<float>() - 1.f) > 1e-5) return 2;
        actions[static_cast<std::size_t>(a)] =
            static_cast<int>(out->elements()[1].toTensor().item<std::int64_t>());
      }
      world.step(actions);
      for (int a = 0; a < n; ++a) total += world.reward(0, a);
    }
    std::cout << "exported policy (" << policy_module.attr("metadata").toStringRef().size()
              << " bytes of metadata): episode utility " << total << std::endl;
  }
  std::cout << "downstream ok" << std::endl;
  return 0;
}
