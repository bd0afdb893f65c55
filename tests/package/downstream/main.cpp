// A user's program built against the installed library: one world of the geodc env on one
// rank, driven by a heuristic baseline for one episode.
#include <iostream>

#include "agents/baselines/heuristics.hpp"
#include "dist/comm.hpp"
#include "envs/registry.hpp"
#include "geodc/geodc.hpp"
#include "train/world.hpp"

int main(int argc, char** argv) {
  using namespace marlsched;
  dist::Session session(&argc, &argv);
  auto comm = dist::Comm::world();
  geodc::Config cfg;
  cfg.validate(4);
  auto factory = find_env("geodc").make_factory(cfg, 4);
  World world(*factory, comm, 4, 1, 7);
  auto policy = make_heuristic("least-loaded", world.spec(), 7, 0);
  world.reset();
  std::vector<int> actions;
  double total = 0;
  for (int t = 0; t < cfg.episode_slots; ++t) {
    policy->act(world.policy_input(), actions);
    world.step(actions);
    for (int a = 0; a < 4; ++a) total += world.reward(0, a);
  }
  std::cout << "episode utility " << total << "\ndownstream ok" << std::endl;
  return world.done(0) ? 0 : 1;
}
