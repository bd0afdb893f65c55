#pragma once
/// \file coop.hpp
/// `coop`: a tiny cooperative task with a known optimum, for testing learners (not a model of any
/// system). Each step every agent draws a signal in {0, ..., A-1}, published as its first
/// observation field (public) with a private noise field. Agent 0 is the leader: every agent is
/// paid 1 when its action equals the leader's signal of this step, else 0. So an agent must read
/// the leader's public field; the optimum is 1 per agent-step (the `follow-leader` baseline), a
/// random policy earns 1/A. With the team reward (MAPPO's default β = 1) the agents share what
/// they earn.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/env.hpp"
#include "core/rng.hpp"

namespace marlsched::coop {

struct Config : EnvConfig {
  int actions = 3;  ///< A
  int steps = 8;    ///< episode length
  void bind(OptionBinder& b) override;
  void validate(int num_agents) const override;
};

EnvSpec make_spec(const Config& cfg);

class Shard final : public marlsched::Shard {
 public:
  Shard(std::shared_ptr<const EnvSpec> spec, int agent);
  const EnvSpec& spec() const override { return *spec_; }
  void reset(std::uint64_t world_seed, std::uint64_t shard_seed) override;
  void observe(float* out) const override;
  void act(int action, const GlobalObs& global, std::vector<WorkRecord>& outbox) override;
  StepOutcome advance() override;
  void receive(const WorkRecord& record) override;
  std::map<std::string, double> counters() const override;
  std::vector<std::byte> save_state() const override;
  void load_state(const std::vector<std::byte>& state) override;

 private:
  /// The state that save_state() writes and load_state() reads, one list for both directions
  /// (core/serialize.hpp's StateWriter and StateReader).
  template <class Self, class IO>
  static void state_fields(Self& s, IO& io);
  void draw();
  std::shared_ptr<const EnvSpec> spec_;
  int agent_, actions_;
  Rng rng_;
  int signal_ = 0, step_ = 0;
  double noise_ = 0, match_ = 0, matches_ = 0, decisions_ = 0;
};

}  // namespace marlsched::coop
