#pragma once
/// \file geodc.hpp
/// Geo-distributed AIGC data centers ("geodc"): the system model of Zhang et al., "Sustainable
/// AIGC Workload Scheduling of Geo-Distributed Data Centers: A Multi-Agent Reinforcement
/// Learning Approach" (GLOBECOM 2023, arXiv 2304.07948), completed from Green-DCC
/// (HewlettPackard/green-dcc) where the paper's public text is silent. docs/envs/geodc.md lists
/// every modelling choice and where it comes from.
///
/// One shard = one data center = one agent. Each slot (default 15 min) the agent picks one of
/// 2N discrete actions for its queue (N = number of sites):
///   a = k      (k < N):  start every queued job that fits now, earliest deadline first; the jobs
///                        that do not fit are forwarded to site k (k == self: they wait here);
///   a = N + k:           defer: start only jobs that must start now to meet their deadline; all
///                        other waiting jobs are forwarded to site k (k == self: they wait here).
/// With --site-neighbours K > 0 the targets are the site itself and K neighbours instead of every
/// site (2(K+1) actions whatever N is: a = m(K+1) + t, t = 0 the site itself, t = 1..K its
/// neighbours in ring order i+1, i-1, i+2, i-2, ...), which keeps the action space, and a policy
/// over it, independent of the number of sites. EnvSpec::targets holds each agent's list either
/// way. Forwarded jobs travel as records through the framework's MPI exchange; their transfer time
/// (data size / inter-region throughput + RTT) delays when they may start at the destination,
/// and the transfer energy (0.06 kWh/GB, Green-DCC) is charged at the origin's price and carbon.

#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/env.hpp"
#include "core/rng.hpp"
#include "envs/geodc/traces.hpp"
#include "envs/geodc/workload.hpp"

namespace marlsched::geodc {

/// Environment configuration (all options are also flags; see `marlsched train --help`).
/// Bounds of the physical options (Config::validate; docs/envs/geodc.md, "Ranges").
constexpr int kMaxGpus = 1000000;             ///< GPUs per site
constexpr double kMaxArrivalRate = 100000.0;  ///< jobs per hour per site
constexpr int kMaxAllTargets = 4096;          ///< agents with --site-neighbours 0

struct Config : EnvConfig {
  // Sites: one entry per data center (agent), in agent order.
  std::vector<std::string> sites{"US-CAL-CISO", "DE-LU", "SG", "JP-TK"};
  std::vector<std::string> regions{"US", "EU", "AP", "AP"};
  std::vector<double> utc_offsets{-8, 1, 8, 9};
  std::vector<int> gpus{64, 48, 32, 48};
  std::vector<double> pue{1.2, 1.3, 1.5, 1.4};
  std::vector<double> arrival_rates{3.5, 3.5, 3.2, 4.0};  ///< mean jobs per hour per site
  bool replicate_sites = false;  ///< cycle the site list when there are more agents than sites

  // Time.
  int slot_minutes = 15;
  int episode_slots = 96;

  // Power model.
  double idle_watts = 60.0;                       ///< per idle GPU
  std::vector<double> busy_watts{250, 300, 350};  ///< per busy GPU, by job type
  double transfer_kwh_per_gb = 0.06;

  // Workload.
  std::string workload = "synthetic";  ///< "synthetic" or "alibaba"
  std::string workload_file;           ///< pai_task_table CSV for "alibaba"
  std::vector<double> type_mix{0.45, 0.35, 0.20};
  std::vector<double> slack_tiers{1.1, 1.5, 2.0};
  std::vector<double> slack_probs{0.3, 0.4, 0.3};
  double diurnal_amplitude = 0.5;
  double diurnal_peak_hour = 14.0;  ///< local time of the arrival peak
  int max_queue = 128;
  int max_hops = 1;
  /// Forwarding targets per site: 0 = every site (2N actions, the paper's layout); K > 0 = the
  /// site itself and its K ring neighbours (2(K+1) actions).
  int neighbours = 0;
  /// Decisions per job class (docs/envs/geodc.md, "Job classes"): "none" = one (mode, target)
  /// for the whole queue; "type" = one per job type (GAN, MLM, SD); "slack" = one per slack left
  /// now (under 1 h, 1-4 h, more). With classes the action is a factored space of one (mode,
  /// target) head per class (EnvSpec::action_heads).
  std::string action_classes = "none";

  // Traces.
  std::vector<std::string> carbon_files;                  ///< one per site; empty: synthetic
  std::vector<std::string> price_files;                   ///< one per site; empty: synthetic
  CarbonColumn carbon_column = CarbonColumn::kLifecycle;  ///< --carbon-column lca or direct
  std::vector<std::string> fx;                            ///< CUR=rate over builtin_fx()
  std::vector<std::string> trace_repair;                  ///< TraceRepair names; empty: strict
  std::string trace_start = "2023-01-01 00:00";
  int trace_days = 365;
  std::uint64_t trace_seed = 2023;
  /// Plausible ranges of trace values (issue 42): a value beyond them is a unit or file error
  /// (the dirtiest grids run near 1,200 gCO2eq/kWh; day-ahead price caps are a few thousand
  /// USD/MWh), refused with its file and line. Raise them where a scenario means it.
  double max_carbon = 5000.0;  ///< gCO2eq/kWh
  double max_price = 1e5;      ///< |USD/MWh|

  // Reward weights: r = w_work·goodput + w_util·util − w_cost·cost − w_carbon·carbon − w_sla·viol.
  double w_work = 0.1;    ///< per GPU-hour of work completed within its deadline
  double w_util = 1.0;    ///< per unit of GPU utilisation in the slot
  double w_cost = 1.0;    ///< per USD of energy
  double w_carbon = 0.5;  ///< per kg CO2eq
  double w_sla = 1.0;     ///< per SLA violation (missed deadline or dropped job)

  void bind(OptionBinder& b) override;
  void validate(int num_agents) const override;
  /// Keeps the first `n` sites of every per-site list (for runs with fewer agents than the
  /// listed sites, which --replicate-sites refuses rather than drop a site silently).
  void keep_sites(std::size_t n);
  int defined_agents() const override {
    return replicate_sites ? 0 : static_cast<int>(sites.size());
  }
  /// Index into the site lists for an agent.
  int site_of(int agent) const { return agent % static_cast<int>(sites.size()); }
  double slot_hours() const { return slot_minutes / 60.0; }
  /// Job classes of the action space: 1 ("none") or kNumJobClasses.
  int num_action_classes() const { return action_classes == "none" ? 1 : kNumJobClasses; }
  /// The class of `job` at `slot` under --action-classes (0 with "none").
  int action_class(const Job& job, int slot) const;
  static constexpr int kNumJobClasses = 3;
};

/// The largest action space --action-classes may make ((2T)^3 actions per agent).
constexpr int kMaxClassActions = 1 << 16;

/// One agent's action decoded: the (mode, target) decision of each job class, each m·T + t.
/// `action` is the env's flat index: ((d0·2T) + d1)·2T + d2 for three classes (EnvSpec's
/// action_heads order), d0 alone without classes.
void decode_action(int action, int heads, int T, int* decisions);
/// The flat action of per-class decisions (decode_action's inverse).
int encode_action(const int* decisions, int heads, int T);

/// Per-site data shared by all shards of that site on a rank (traces, trace workload).
struct SiteData {
  HourlySeries carbon;
  HourlySeries price;
  std::vector<TraceTask> tasks;  ///< for workload = "alibaba": this site's tasks
  std::int64_t trace_t0 = 0, trace_span = 1;
};

/// The inter-region network: the index of a region name (US, EU, AP, SA; -1 for another), and
/// the throughput (Mbps) and round-trip time (ms) between two regions' indices.
int region_index(const std::string& region);
double region_mbps(int from, int to);
double region_rtt_ms(int from, int to);

/// --trace-start as whole hours since the Unix epoch (ConfigError when it does not parse).
std::int64_t trace_start_hour(const Config& c);

/// Builds the spec (observation fields, actions, reward components) for `num_agents` sites.
EnvSpec make_spec(const Config& cfg, int num_agents);

/// The forwarding targets of `agent` (see --site-neighbours): every agent in index order, or the
/// agent itself followed by its `neighbours` nearest agents in ring order (+1, -1, +2, -2, ...).
std::vector<int> targets_of(int agent, int num_agents, int neighbours);

/// Loads (or synthesises) the traces of every site once; shards then share them.
std::vector<std::shared_ptr<const SiteData>> load_sites(const Config& cfg, int num_agents);

/// One line per trace file that load_sites() repaired (--trace-repair) and per price file it
/// converted to USD, in site order, each file once.
std::vector<std::string> input_notes(const Config& cfg,
                                     const std::vector<std::shared_ptr<const SiteData>>& sites);

class Shard final : public marlsched::Shard {
 public:
  Shard(std::shared_ptr<const Config> cfg, std::shared_ptr<const EnvSpec> spec,
        std::shared_ptr<const SiteData> site, int agent);

  const EnvSpec& spec() const override { return *spec_; }
  void reset(std::uint64_t world_seed, std::uint64_t shard_seed) override;
  void observe(float* out) const override;
  /// Hindsight of the episode ahead (EnvSpec::privileged_fields): the work that will arrive
  /// within 1, 4 and 8 hours (GPU-slots per GPU and slot of the window), and the true mean carbon
  /// and price of the next 12 hours, scaled as the observation's carbon and price.
  void privileged(float* out) const override;
  void act(int action, const GlobalObs& global, std::vector<WorkRecord>& outbox) override;
  StepOutcome advance() override;
  void receive(const WorkRecord& record) override;
  std::map<std::string, double> counters() const override;
  std::vector<std::byte> save_state() const override;
  void load_state(const std::vector<std::byte>& state) override;
  std::string describe_inputs() const override;

  // Introspection for tests.
  const std::vector<Job>& queue() const { return queue_; }
  const std::vector<Job>& running() const { return running_; }
  int slot() const { return t_; }
  int busy_gpus() const { return busy_; }
  std::int64_t epoch_hour() const;

  /// Transfer time in slots from this site to `dest` for a job of `data_gb`.
  int transfer_slots(int dest, double data_gb) const;

  /// Hindsight, for bounds: every job that arrives here in the episode that `reset(world_seed,
  /// shard_seed)` starts, by arrival slot. Arrivals do not depend on the actions (the shard's RNG
  /// draws nothing else), so these are the jobs of that episode under any policy. Leaves the
  /// shard reset to that episode's start with an empty queue.
  std::vector<Job> episode_arrivals(std::uint64_t world_seed, std::uint64_t shard_seed);
  /// Hindsight, for the bracket's feasible schedule: the jobs that will arrive here in the next
  /// `slots` slots (fewer at the episode's end), in arrival order, whatever the actions; drawn
  /// from a copy of the shard's generator, so the shard itself is unchanged.
  std::vector<Job> upcoming_arrivals(int slots) const;
  /// Price (USD/MWh) and carbon intensity (g/kWh) of this site at `slot` of the current episode.
  std::pair<double, double> energy_prices(int slot) const;
  /// The same at an absolute epoch hour (for forecasts that look back a day).
  std::pair<double, double> energy_prices_at_hour(std::int64_t epoch_hour) const;
  /// The epoch hour of `slot` of the current episode.
  std::int64_t slot_hour(int slot) const;
  /// The expected job arrivals per hour at `slot` of the current episode (the configured rate
  /// with its daily cycle): what the synthetic workload draws from, and what a planner expects.
  double arrival_rate_per_hour(int slot) const;
  // What a planner reads of the site (the MPC baselines, envs/geodc/mpc.hpp).
  const Config& config() const { return cfg_; }
  int agent() const { return agent_; }
  int capacity() const { return capacity_; }
  double pue() const { return pue_; }

 private:
  /// The state that save_state() writes and load_state() reads, one list for both directions
  /// (core/serialize.hpp's StateWriter and StateReader).
  template <class Self, class IO>
  static void state_fields(Self& s, IO& io);
  void arrivals();
  void enqueue(const Job& j);

  std::shared_ptr<const Config> cfg_holder_;
  const Config& cfg_;
  std::shared_ptr<const EnvSpec> spec_;
  std::shared_ptr<const SiteData> site_;
  int agent_, site_index_, capacity_;
  int classes_;  ///< decisions per action (--action-classes), read once
  double pue_;
  std::int64_t trace_start_hour_;  ///< --trace-start, parsed once
  Rng rng_;
  int t_ = 0;
  std::int64_t start_hour_ = 0;
  std::int64_t trace_offset_ = 0;
  std::uint64_t serial_ = 0;
  std::vector<Job> queue_, running_;
  int busy_ = 0;           ///< GPUs held by running_, kept with it (a sum over running_, not state)
  std::vector<Job> kept_;  ///< act()'s scratch for the queue it keeps (reused: no allocation)
  double pending_transfer_kwh_ = 0.0;
  /// observe()'s fields that depend on the epoch hour alone (the traces and the local clock),
  /// computed once per hour: a cache of pure functions of `hour`, not state.
  struct HourFields {
    std::int64_t hour = std::numeric_limits<std::int64_t>::min();
    float carbon = 0, price = 0, carbon_trend = 0, price_trend = 0, sin = 0, cos = 0;
  };
  mutable HourFields hour_fields_;
  // cumulative counters
  double arrived_ = 0, completed_ = 0, on_time_ = 0, dropped_ = 0, violations_ = 0, forwarded_ = 0,
         received_ = 0, discarded_ = 0;
};

}  // namespace marlsched::geodc
