// Baselines of the coop test task (envs/coop): `follow-leader` plays the known optimum (the
// leader's public signal), `random` the chance level 1/A.
#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "envs/baselines.hpp"

namespace marlsched {

namespace {
class CoopHeuristic final : public Policy {
 public:
  CoopHeuristic(std::string name, bool follow, std::uint64_t seed)
      : name_(std::move(name)), follow_(follow), stream_(seed) {}
  std::string name() const override { return name_; }
  ActionLaw action_law() const override {
    return follow_ ? ActionLaw::kDeterministic : ActionLaw::kUniform;
  }
  void act(const PolicyInput& in, std::vector<int>& actions) override {
    const int A = in.spec->num_actions();
    actions.resize(static_cast<std::size_t>(in.copies * in.local_agents));
    for (int c = 0; c < in.copies; ++c) {
      const int leader =
          static_cast<int>(std::lround(in.global[static_cast<std::size_t>(c)].row(0)[0] * (A - 1)));
      for (int k = 0; k < in.local_agents; ++k)
        actions[static_cast<std::size_t>(c * in.local_agents + k)] =
            follow_ ? leader : in.draw_below(c, in.first_agent + k, stream_, A);
    }
  }

 private:
  std::string name_;
  bool follow_;
  std::uint64_t stream_;  ///< PolicyInput::draw stream of the random rule
};
}  // namespace

const std::vector<std::string>& coop_heuristic_names() {
  static const std::vector<std::string> names = {"random", "follow-leader"};
  return names;
}

std::unique_ptr<Policy> make_coop_heuristic(const std::string& name, const EnvSpec& /*spec*/,
                                            std::uint64_t seed) {
  const auto& names = coop_heuristic_names();
  if (std::find(names.begin(), names.end(), name) == names.end()) return nullptr;
  return std::make_unique<CoopHeuristic>(name, name == "follow-leader", seed);
}

}  // namespace marlsched
