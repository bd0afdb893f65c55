#include "train/behaviour.hpp"

#include <cmath>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>

#include "core/error.hpp"
#include "core/file.hpp"

namespace marlsched {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}

double behaviour_log_prob(ActionLaw law, int a, int chosen, double epsilon, int num_actions) {
  const double uniform = 1.0 / num_actions;
  switch (law) {
    case ActionLaw::kDeterministic:
      return std::log((a == chosen ? 1.0 - epsilon : 0.0) + epsilon * uniform);
    case ActionLaw::kUniform:
      return std::log(uniform);
    case ActionLaw::kUnknown:
      break;
  }
  return kNaN;
}

BehaviourLearner::BehaviourLearner(std::unique_ptr<Policy> policy, const Learner* learner,
                                   bool greedy, double epsilon, int num_actions)
    : policy_(std::move(policy)),
      learner_(learner),
      law_(learner ? (greedy ? ActionLaw::kDeterministic : ActionLaw::kUnknown)
                   : policy_->action_law()),
      epsilon_(epsilon),
      num_actions_(num_actions) {
  MARLSCHED_CHECK(policy_ && num_actions_ > 0, "a behaviour policy needs a policy and actions");
  MARLSCHED_REQUIRE(epsilon_ >= 0.0 && epsilon_ <= 1.0,
                    "--epsilon must be in [0, 1], got " << epsilon_);
}

std::string BehaviourLearner::name() const {
  std::ostringstream os;
  os << policy_->name();
  if (epsilon_ > 0) os << " (epsilon " << epsilon_ << ")";
  return os.str();
}

ActionLaw BehaviourLearner::action_law() const {
  return epsilon_ > 0 || law_ == ActionLaw::kUnknown ? ActionLaw::kUnknown : law_;
}

Decisions BehaviourLearner::act(const PolicyInput& in) {
  // A sampling learner's own log π of what it chose, the only law it exposes.
  const bool own = learner_ && law_ == ActionLaw::kUnknown && epsilon_ == 0.0;
  std::vector<float> own_logp;
  if (own) {
    auto* learner = dynamic_cast<Learner*>(policy_.get());
    MARLSCHED_CHECK(learner == learner_, "the behaviour's learner is not its policy");
    Decisions d = learner->act(in);
    chosen_ = std::move(d.actions);
    own_logp = std::move(d.log_probs);
  } else {
    policy_->act(in, chosen_);
  }
  const auto rows = static_cast<std::size_t>(in.copies * in.local_agents);
  MARLSCHED_CHECK(chosen_.size() == rows, "the behaviour policy gave a wrong number of actions");
  MARLSCHED_CHECK(!own || own_logp.size() == rows, "the learner gave no log-probabilities");
  Decisions out;
  auto& actions = out.actions;
  auto& logp = out.log_probs;
  actions.resize(rows);
  logp.resize(rows);
  out.values.assign(rows, static_cast<float>(kNaN));
  for (std::size_t r = 0; r < rows; ++r) {
    const int c = static_cast<int>(r) / in.local_agents;
    const int agent = in.first_agent + static_cast<int>(r) % in.local_agents;
    int a = chosen_[r];
    if (epsilon_ > 0 && in.draw(c, agent, kBehaviourCoinStream) < epsilon_)
      a = in.draw_below(c, agent, kBehaviourActionStream, num_actions_);
    actions[r] = a;
    logp[r] =
        own ? own_logp[r]
            : static_cast<float>(behaviour_log_prob(law_, a, chosen_[r], epsilon_, num_actions_));
  }
  return out;
}

UpdateStats BehaviourLearner::update(const PolicyInput&) {
  UpdateStats st;
  st.stepped = false;  // nothing learns
  return st;
}

std::string BehaviourLearner::file_text() const {
  return "marlsched-behaviour 1\n" + name() + "\n";
}

void BehaviourLearner::save(const std::string& path) const {
  write_file_atomic(path, file_text());
}

void BehaviourLearner::load(const std::string& path) {
  std::ifstream in(path);
  MARLSCHED_REQUIRE_INPUT(in, "cannot read the behaviour policy file '" << path << "'");
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  MARLSCHED_REQUIRE_INPUT(text == file_text(), "'" << path
                                                   << "' was written for another behaviour "
                                                      "policy than "
                                                   << name());
}

}  // namespace marlsched
