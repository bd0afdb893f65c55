#pragma once
/// \file env.hpp
/// The environment interface. An environment is split into shards, one per agent (a data
/// center, an edge cluster). A shard never talks to another shard: work it hands to another
/// site leaves through `act()` as plain `WorkRecord`s, and the framework (src/train/world.*)
/// moves them between ranks with MPI and delivers them with `receive()`.
///
/// One decision step of a world of N shards is:
///   1. every shard `observe()`s; the framework allgathers the observations (global state);
///   2. each agent chooses an action; `act()` applies it and may emit outgoing work;
///   3. `advance()` simulates one time slot and returns the reward and its components;
///   4. the framework exchanges the outgoing work; destination shards `receive()` it.
/// An env whose shards hand work over at finer timescales than the decision slot (a discrete-
/// event simulation with network latencies) splits the slot into `EnvSpec::windows` windows:
/// between 2. and 3. the framework calls `window(w, outbox)` on every shard for w = 0..W-1 and
/// exchanges the work after every window but the last (whose work goes with step 4.). With
/// windows no longer than the smallest latency between shards, work sent in one window arrives
/// in a later one: the conservative synchronisation of parallel discrete-event simulation, exact
/// at any rank count.
/// At a step boundary no work is in flight: it sits in some shard (possibly not yet usable
/// because its transfer is still running, which the shard models itself).

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/options.hpp"
#include "core/rng.hpp"
#include "core/serialize.hpp"

namespace marlsched {

/// Static description of an environment's shards (identical for every shard of one world).
struct EnvSpec {
  std::string name;
  /// Observation field names, in order. The first `num_public` are the site's public summary
  /// that peers may use to decide (e.g. free capacity, carbon intensity, price).
  std::vector<std::string> obs_fields;
  int num_public = 0;
  /// Action meanings, in order (discrete action space).
  std::vector<std::string> action_names;
  /// Reward component names; `StepOutcome::components` follows this order. A component is a
  /// quantity per agent and step; reports show its sum over agents (a system total: GPU-hours,
  /// kWh, dollars), unless it is listed in `mean_components`.
  std::vector<std::string> reward_components;
  /// Components that are rates or ratios (a utilisation in [0, 1]), whose system value is their
  /// mean over agents (and over steps in evaluations), not their sum: reports show them as
  /// "mean_<name>" (component_label).
  std::vector<std::string> mean_components;
  /// Steps per episode (episodes end by truncation).
  int episode_length = 0;
  /// Exchange windows per step (see the file comment); 1: work moves once per step.
  int windows = 1;
  /// A factored action space (optional): action = (h0·n1 + h1)·n2 + h2 ..., n_i =
  /// action_heads[i], whose product is num_actions(); empty: one head.
  std::vector<int> action_heads;
  /// With action_heads: head 0 is a long-timescale decision that the env applies only at
  /// episode steps that are multiples of long_every (the other heads act every step).
  int long_every = 1;
  /// A targeted action space (optional): the actions are modes x T targets, action = m·T + t,
  /// where target t of agent i is the agent targets[i][t] (geodc: run here and overflow to
  /// target t, or defer and send to it; an agent is one of its own targets). Every agent has the
  /// same T. Heuristics read it to find an agent's options; a per-target actor (MAPPO
  /// --actor targets) scores each (mode, target) pair from the agent's observation and the
  /// target's features, so that its size does not depend on the agent count. With
  /// action_heads as well, every head is such a (mode, target) decision, for one class of work
  /// (geodc --action-classes). Empty: none.
  std::vector<std::vector<int>> targets;
  /// Static features of each (agent, target) pair (e.g. the transfer time between their
  /// regions): target_features[i] holds T x target_feature_names.size() floats, target-major.
  std::vector<std::string> target_feature_names;
  std::vector<std::vector<float>> target_features;
  /// Privileged fields (optional): what a shard knows of its episode's future exogenous inputs
  /// (arrivals still to come, the true carbon and prices ahead), in order. Never part of an
  /// observation: a learner may train a critic on them (MAPPO --critic-privileged), which acting
  /// never reads, so that its value estimates need not guess what the episode's own randomness
  /// will bring. Empty: the env offers none.
  std::vector<std::string> privileged_fields;

  int obs_dim() const { return static_cast<int>(obs_fields.size()); }
  int privileged_dim() const { return static_cast<int>(privileged_fields.size()); }
  /// Whether reward component i is reported as a mean over agents (see mean_components).
  bool component_is_mean(std::size_t i) const;
  /// The name reports give component i: its name, or "mean_<name>" for a mean component.
  std::string component_label(std::size_t i) const;
  int num_actions() const { return static_cast<int>(action_names.size()); }
  /// Index of a named observation field; throws if absent.
  int obs_index(const std::string& field) const;
  /// Targets per agent (T); 0 without a targeted action space.
  int num_targets() const { return targets.empty() ? 0 : static_cast<int>(targets[0].size()); }
  /// Decision modes per target (one head's actions / T); 0 without a targeted action space.
  int num_modes() const {
    return targets.empty()
               ? 0
               : (action_heads.empty() ? num_actions() : action_heads.back()) / num_targets();
  }
  /// Heads of a targeted action space (action_heads.size(), 1 without heads).
  int num_heads() const { return action_heads.empty() ? 1 : static_cast<int>(action_heads.size()); }
};

/// Work handed from one shard to another (a job, a query). The payload is opaque to the
/// framework; `dest` is the destination agent index within the same world.
struct WorkRecord {
  std::int32_t dest = 0;
  std::vector<std::byte> payload;
};

/// What one slot produced at one shard.
struct StepOutcome {
  double reward = 0.0;
  std::vector<double> components;  ///< follows EnvSpec::reward_components
  bool terminated = false;         ///< the MDP reached a terminal state
  bool truncated = false;          ///< the episode was cut by its time limit
};

/// Read-only view of the allgathered observations of one world: `num_agents` rows of
/// `obs_dim` floats; and, where the world gathers them (World::set_privileged), `num_agents`
/// rows of `privileged_dim` privileged fields (EnvSpec::privileged_fields).
struct GlobalObs {
  const float* data = nullptr;
  int num_agents = 0;
  int obs_dim = 0;
  const float* privileged = nullptr;
  int privileged_dim = 0;
  const float* row(int agent) const { return data + static_cast<std::ptrdiff_t>(agent) * obs_dim; }
  const float* privileged_row(int agent) const {
    return privileged + static_cast<std::ptrdiff_t>(agent) * privileged_dim;
  }
};

/// One agent's part of one environment copy.
class Shard {
 public:
  virtual ~Shard() = default;
  virtual const EnvSpec& spec() const = 0;
  /// Starts an episode. `world_seed` is identical for all shards of one world and episode
  /// (shared exogenous state such as the trace start hour); `shard_seed` is this shard's own.
  virtual void reset(std::uint64_t world_seed, std::uint64_t shard_seed) = 0;
  /// Writes `spec().obs_dim()` floats.
  virtual void observe(float* out) const = 0;
  /// Writes `spec().privileged_dim()` floats (EnvSpec::privileged_fields) for the current step;
  /// must not change the shard's state. The default writes nothing (an env without them).
  virtual void privileged(float* out) const { (void)out; }
  /// Applies the agent's decision for the current slot; appends outgoing work to `outbox`.
  virtual void act(int action, const GlobalObs& global, std::vector<WorkRecord>& outbox) = 0;
  /// Simulates window `w` (0 <= w < spec().windows) of the current slot; appends outgoing work.
  /// The default does nothing (envs that simulate the whole slot in advance()).
  virtual void window(int w, std::vector<WorkRecord>& outbox) {
    (void)w;
    (void)outbox;
  }
  /// Completes the current slot (after its windows) and returns what it produced.
  virtual StepOutcome advance() = 0;
  /// Accepts work sent by another shard during the step that just ended.
  virtual void receive(const WorkRecord& record) = 0;
  /// Cumulative counters since construction (for conservation checks and metrics).
  virtual std::map<std::string, double> counters() const = 0;
  /// Complete dynamic state (queues, in-flight work, RNG, clock, counters) for checkpoints.
  /// `load_state(save_state())` must make the shard continue exactly as the original.
  virtual std::vector<std::byte> save_state() const = 0;
  /// Restores a state written by save_state(); throws InputError if it is malformed.
  virtual void load_state(const std::vector<std::byte>& state) = 0;
  /// Where the exogenous values of the current step came from (a trace file and line), for
  /// the message that stops a run on a non-finite value; "" when the env has nothing to add.
  virtual std::string describe_inputs() const { return {}; }
};

/// Makes the shards of one environment for one run (shares loaded data between shards).
class EnvFactory {
 public:
  virtual ~EnvFactory() = default;
  virtual const EnvSpec& spec() const = 0;
  /// A shard for `agent` (0 <= agent < num_agents); one per agent and environment copy.
  virtual std::unique_ptr<Shard> make_shard(int agent) const = 0;
  /// System metrics (e.g. success rate, p99 latency) from the counters of every shard summed
  /// over ranks; evaluation tables show them after the reward components. Default: none.
  virtual std::vector<std::pair<std::string, double>> summarize(
      const std::map<std::string, double>& counters) const {
    (void)counters;
    return {};
  }
  /// One line that says how to read summarize()'s metrics where a name cannot (a quantile that
  /// is a histogram bin's bound); printed under evaluation tables. Default: none.
  virtual std::string metrics_note() const { return {}; }
  /// How the factory read its input files, one line each, where a user must know it to
  /// reproduce the run (repairs of trace files, currency conversions); rank 0 prints them and
  /// the run records them in its config.toml as comments. Default: none.
  virtual std::vector<std::string> input_notes() const { return {}; }
  /// An upper bound on the utility (the sum of every agent's rewards) of the episode whose shards
  /// reset with `world_seed` and `shard_seeds[agent]`, from hindsight knowledge of everything
  /// exogenous (arrivals, traces), e.g. a relaxation solved by an LP solver: how far from optimal
  /// a schedule can be. Serial (builds every agent's shard). Default: NaN, the env has none.
  virtual double episode_bound(std::uint64_t world_seed,
                               const std::vector<std::uint64_t>& shard_seeds) const {
    (void)world_seed;
    (void)shard_seeds;
    return std::numeric_limits<double>::quiet_NaN();
  }
};

/// Environment-specific configuration: binds its options, validates itself.
class EnvConfig {
 public:
  virtual ~EnvConfig() = default;
  virtual void bind(OptionBinder& binder) = 0;
  /// Throws ConfigError naming the bad value. `num_agents` is the run's agent count.
  virtual void validate(int num_agents) const = 0;
  /// The number of agents this config defines (e.g. one per data center), or 0 when any number
  /// fits (e.g. replicated sites). Launch helpers derive the rank count from it.
  virtual int defined_agents() const { return 0; }
};

/// The header every shard's saved state opens with: a format magic, the agent the state belongs
/// to and the states of the shard's random generators. shard_state_writer starts a state with it;
/// shard_state_reader checks it (InputError naming `what`: "geodc shard state: wrong format")
/// and restores the generators. The shard's own fields follow (StateWriter, StateReader).
StateWriter shard_state_writer(std::uint32_t magic, int agent,
                               std::initializer_list<const Rng*> rngs);
StateReader shard_state_reader(const std::vector<std::byte>& state, const std::string& what,
                               std::uint32_t magic, int agent, std::initializer_list<Rng*> rngs);

}  // namespace marlsched
