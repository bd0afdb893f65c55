// coop: the reference env. It is the smallest env that implements the whole Shard contract
// (core/env.hpp), so it is the one to copy when adding an env. Its parts are: a Config that binds
// its own options and validates them, a spec (observations, actions, reward components), and a
// Shard that observes, acts on the allgathered observations, advances one step, counts, and
// saves and restores its complete state. tests/envs/test_coop.cpp tests each part.
#include "envs/coop/coop.hpp"

#include <cmath>

#include "core/error.hpp"
#include "core/serialize.hpp"

namespace marlsched::coop {

namespace {
constexpr std::uint32_t kMagic = 0xC0095A7Eu;  ///< first word of a saved state
}

void Config::bind(OptionBinder& b) {
  b.group("Env: cooperative signalling game (coop)");
  b.add("coop-actions", actions, "coop: actions (and signal values) per agent").at_least(2);
  b.add("coop-steps", steps, "coop: steps per episode").at_least(1);
}

void Config::validate(int num_agents) const {
  check_declared(*this);
  MARLSCHED_REQUIRE(num_agents >= 1, "coop needs at least one agent");
}

// The first `num_public` observation fields are what peers may read (the leader's signal);
// the rest is private (noise). Episodes end by truncation after cfg.steps steps.
EnvSpec make_spec(const Config& cfg) {
  EnvSpec s;
  s.name = "coop";
  s.obs_fields = {"signal", "noise"};
  s.num_public = 1;
  for (int a = 0; a < cfg.actions; ++a) s.action_names.push_back("pick" + std::to_string(a));
  s.reward_components = {"match"};
  s.episode_length = cfg.steps;
  return s;
}

Shard::Shard(std::shared_ptr<const EnvSpec> spec, int agent)
    : spec_(std::move(spec)), agent_(agent), actions_(spec_->num_actions()) {}

void Shard::draw() {
  signal_ = static_cast<int>(rng_.below(static_cast<std::uint64_t>(actions_)));
  noise_ = rng_.uniform();
}

// Every random draw comes from the shard's own stream, seeded here: the framework derives
// shard_seed from the run seed, the copy, the episode and the agent, so an episode is the same
// at every rank count. world_seed (shared by the shards of one world) is unused here.
void Shard::reset(std::uint64_t /*world_seed*/, std::uint64_t shard_seed) {
  rng_.seed(shard_seed);
  step_ = 0;
  draw();
}

void Shard::observe(float* out) const {
  out[0] = static_cast<float>(signal_) / static_cast<float>(actions_ - 1);
  out[1] = static_cast<float>(noise_);
}

// The action is scored against the leader's public field of the global observation (every
// agent's row, allgathered by the framework). An env that hands work to another shard appends
// WorkRecords to `outbox`; coop hands none.
void Shard::act(int action, const GlobalObs& global, std::vector<WorkRecord>& /*outbox*/) {
  MARLSCHED_REQUIRE(action >= 0 && action < actions_,
                    "coop action " << action << " out of range [0, " << actions_ << ")");
  MARLSCHED_CHECK(global.data != nullptr && global.num_agents >= 1, "coop needs the leader");
  const int leader = static_cast<int>(std::lround(global.row(0)[0] * (actions_ - 1)));
  match_ = action == leader ? 1.0 : 0.0;
}

// One step: the reward and its components, the counters, truncation at the episode's end, and
// the next signal.
StepOutcome Shard::advance() {
  StepOutcome o;
  o.reward = match_;
  o.components = {match_};
  matches_ += match_;
  decisions_ += 1;
  ++step_;
  o.truncated = step_ >= spec_->episode_length;
  draw();
  return o;
}

void Shard::receive(const WorkRecord& /*record*/) {
  MARLSCHED_THROW(InputError, "coop shards exchange no work");
}

std::map<std::string, double> Shard::counters() const {
  return {{"matches", matches_}, {"decisions", decisions_}};
}

// The complete dynamic state, for checkpoints: load_state(save_state()) continues exactly.
template <class Self, class IO>
void Shard::state_fields(Self& s, IO& io) {
  io.packed(s.signal_, s.step_).packed(s.noise_, s.match_, s.matches_, s.decisions_);
}

std::vector<std::byte> Shard::save_state() const {
  auto w = shard_state_writer(kMagic, agent_, {&rng_});
  state_fields(*this, w);
  return w.bytes();
}

void Shard::load_state(const std::vector<std::byte>& state) {
  auto r = shard_state_reader(state, "coop shard state", kMagic, agent_, {&rng_});
  state_fields(*this, r);
  r.finish();
}

}  // namespace marlsched::coop
