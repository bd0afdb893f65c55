/// \file entry.cpp
/// MASAC's and MADDPG's rows of the learner table: one off-policy learner (agents/masac), the
/// --sac options group.

#include "agents/masac/masac.hpp"
#include "agents/registry.hpp"

namespace marlsched::learners {

namespace {

class MasacFamily final : public LearnerFamily {
 public:
  MasacFamily(std::string name, bool maddpg, std::string description)
      : name_(std::move(name)), description_(std::move(description)), maddpg_(maddpg) {}
  std::string name() const override { return name_; }
  std::string description() const override { return description_; }
  std::vector<OptionsMaker> options() const override { return {options_of<MasacConfig>()}; }
  void validate(const LearnerConfigs& c) const override { c.get<MasacConfig>().validate(); }
  int rollout_steps(const LearnerConfigs& c, const EnvSpec&) const override {
    return c.get<MasacConfig>().rollout_steps;
  }
  double team_reward(const LearnerConfigs& c) const override {
    return c.get<MasacConfig>().team_reward;
  }
  std::unique_ptr<Learner> make(const LearnerConfigs& c, const LearnerLayout& l) const override {
    return std::make_unique<Masac>(c.with_device<MasacConfig>(), l, maddpg_);
  }
  void export_policy(const std::vector<const Learner*>& ranks, const std::string& path,
                     const std::string& metadata, bool with_critic) const override {
    MARLSCHED_REQUIRE(!with_critic, "--critic: " << name_
                                                 << "'s critics take the other agents' actions, "
                                                    "so they are not exported; the policy is");
    Masac::export_torchscript(learners_as<Masac>(ranks), path, metadata);
  }

 private:
  std::string name_, description_;
  bool maddpg_;
};

}  // namespace

std::unique_ptr<LearnerFamily> masac() {
  return std::make_unique<MasacFamily>(
      "masac", false,
      "multi-agent soft actor-critic: discrete actions, replay, centralised critics");
}

std::unique_ptr<LearnerFamily> maddpg() {
  return std::make_unique<MasacFamily>(
      "maddpg", true, "multi-agent DDPG: Gumbel-softmax actors, replay, centralised critics");
}

}  // namespace marlsched::learners
