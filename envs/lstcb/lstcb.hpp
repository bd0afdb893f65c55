#pragma once
/// \file lstcb.hpp
/// Energy-efficient edge inference with long/short-timescale cooperative batching ("lstcb"),
/// after LSTCB (Zheng et al., INFOCOM 2026) and ACBatch (Yang et al., INFOCOM 2025). Neither
/// paper's text is public: docs/envs/lstcb.md documents every modelling choice.
///
/// One shard = one edge server with one GPU = one agent, simulated event by event:
///  * requests arrive as a Poisson stream whose rate level changes over long windows (a Markov
///    chain over --levels) and, in bursty mode, doubles in short bursts;
///  * the GPU runs one batch at a time; a batch of b requests at relative clock f takes
///    (a + c·b) / f ms and draws P_static + P_dyn·f³ W (idle: P_idle), from the batch profile of
///    the model on the GPU (data/lstcb/batch_profiles.csv, written by `marlsched gen-data`);
///  * long-timescale decision (every --window-slots slots): maximum batch size, GPU clock, and
///    the share of new requests steered to the least loaded neighbour (cooperation);
///  * short-timescale decision (every slot): wait for a full batch, dispatch on a timeout
///    (full batch or oldest request waited --timeout-ms), dispatch whenever the GPU is free,
///    dispatch at the last moment that meets the SLO (slack), one request at a time, or dispatch
///    or slack while handing the queue beyond one batch to neighbour k.
/// The action is factored (EnvSpec::action_heads = {long, short}, long_every = window slots).
/// Requests handed to a neighbour cross ranks as work records, in exchange windows no longer
/// than the link latency (exact, as in envs/aset). A request meets its SLO when its answer
/// reaches its origin (link latency back) within --slo-ms of its arrival.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/env.hpp"
#include "core/rng.hpp"
#include "core/work_batch.hpp"

namespace marlsched::lstcb {

/// Latency and power of one DNN model on one GPU: a batch of b at relative clock f takes
/// (a_ms + c_ms·b) / f and draws p_static + p_dyn·f³ watts; an idle GPU draws p_idle.
struct Profile {
  std::string model, gpu;
  double a_ms = 0, c_ms = 0, p_idle = 0, p_static = 0, p_dyn = 0;
  std::string source;
  double batch_ms(int b, double f) const { return (a_ms + c_ms * b) / f; }
  double busy_watts(double f) const { return p_static + p_dyn * f * f * f; }
};

/// The profiles compiled in (the same rows as data/lstcb/batch_profiles.csv).
const std::vector<Profile>& builtin_profiles();
/// CSV with header model,gpu,a_ms,c_ms_per_item,p_idle_w,p_static_w,p_dyn_w,source.
std::string profiles_csv(const std::vector<Profile>& ps);
/// Reads such a CSV; throws InputError naming the file and line on malformed rows.
std::vector<Profile> load_profiles(const std::string& path);

struct Config : EnvConfig {
  std::vector<double> rates{260, 180, 260, 180};  ///< peak requests/s per server
  bool replicate = false;
  std::string profile = "googlenet/titan-x";  ///< model/gpu from the profile table
  std::string profile_file;                   ///< a batch profile CSV (default: built in)
  double slo_ms = 50;
  double slo_guard_ms = 0;  ///< the slack mode aims at slo - guard (a safety margin)
  double link_ms = 2;       ///< one-way latency between neighbouring servers
  int neighbours = 2;       ///< cooperating neighbours per server (ring order: i+1, i-1, i+2, ...)
  std::vector<int> max_batches{1, 4, 8, 16, 32};
  std::vector<double> freqs{0.6, 0.8, 1.0};  ///< relative GPU clocks
  std::vector<double> steer{0.0, 0.25};      ///< shares of new requests sent to a neighbour
  double timeout_ms = 10;
  double slot_ms = 5;
  int window_slots = 40;
  int episode_windows = 10;
  std::vector<double> levels{0.35, 0.65, 1.0};  ///< rate levels (× peak), one per window
  double level_switch = 0.3;                    ///< per window: probability to change level
  bool bursty = true;
  double burst_factor = 2.0, burst_start = 0.02, burst_end = 0.1;  ///< per slot
  double w_energy = 0.02;  ///< reward penalty per joule (rewards O(1) per slot: DQN fits them)
  double w_slo = 1.0;      ///< reward penalty per SLO violation (50 J worth)

  void bind(OptionBinder& b) override;
  void validate(int num_agents) const override;
  int defined_agents() const override { return replicate ? 0 : static_cast<int>(rates.size()); }
  int episode_slots() const { return window_slots * episode_windows; }
};

/// The profile a config selects (from --profile-file or the built-in table).
Profile select_profile(const Config& cfg);
EnvSpec make_spec(const Config& cfg, int num_agents);

struct Request {
  double t0 = 0;     ///< arrival at its origin server (ms since episode start)
  double enter = 0;  ///< arrival at the server holding it
  std::uint64_t id = 0;
  std::int32_t origin = 0;
  std::int32_t hops = 0;
};
struct Wire {
  double t_at = 0;
  Request r;
};

class Shard final : public marlsched::Shard {
 public:
  Shard(std::shared_ptr<const Config> cfg, std::shared_ptr<const EnvSpec> spec, Profile profile,
        int agent, int num_agents);
  const EnvSpec& spec() const override { return *spec_; }
  void reset(std::uint64_t world_seed, std::uint64_t shard_seed) override;
  void observe(float* out) const override;
  void act(int action, const GlobalObs& global, std::vector<WorkRecord>& outbox) override;
  void window(int w, std::vector<WorkRecord>& outbox) override;
  StepOutcome advance() override;
  void receive(const WorkRecord& record) override;
  std::map<std::string, double> counters() const override;
  std::vector<std::byte> save_state() const override;
  void load_state(const std::vector<std::byte>& state) override;

  /// Little's law terms since construction: ∫N(t)dt (ms), the summed time in this server of
  /// requests that left it, and the time so far of those still here; area = left + here.
  struct Little {
    double area_ms, left_ms, here_ms;
  };
  Little little() const;
  std::uint64_t events() const { return events_; }

 private:
  /// The state that save_state() writes and load_state() reads, one list for both directions
  /// (core/serialize.hpp's StateWriter and StateReader).
  template <class Self, class IO>
  static void state_fields(Self& s, IO& io);
  void next_arrival();
  void arrival(double t);
  void enqueue(const Request& r, double t);
  void try_dispatch(double t);
  void complete(double t);
  void integrate(double t);
  void send(int dest, double t, Request r);
  double next_timeout() const;
  /// Slack mode: the latest start of the batch that would go now (up to the cap) at which its
  /// most urgent request still meets the SLO at its origin.
  double slack_start() const;
  /// The largest prefix of the queue (at most bmax) that, started at t at clock f, answers
  /// every member by SLO - guard (0 when not even one request).
  std::size_t slack_prefix(double t, std::size_t bmax, double f) const;
  /// Slack mode: the size and clock of the batch that starts at t (see lstcb.cpp).
  std::pair<std::size_t, double> slack_plan(double t, std::size_t bmax) const;

  std::shared_ptr<const Config> cfg_holder_;
  const Config& cfg_;
  std::shared_ptr<const EnvSpec> spec_;
  Profile prof_;
  int agent_, n_, k_;
  std::vector<int> nbrs_;
  double peak_per_ms_;
  std::vector<double> clocks_;  // --freqs, ascending (the slack mode's boost)
  Rng rng_;                     // decisions: steering draws
  Rng exo_;  // the workload: arrivals, rate levels, bursts (identical under every policy)
  // Decisions in force.
  int batch_cap_ = 1, mode_ = 2, overflow_to_ = -1;  // mode: wait, timeout, dispatch, slack, single
  double freq_ = 1, steer_ = 0;
  int steer_to_ = -1;
  std::vector<float> nbr_load_;
  // Exogenous state.
  int level_ = 0;
  bool burst_ = false;
  double next_arrival_ = 0;
  // Server state.
  double clock_ = 0, slot_start_ = 0, last_t_ = 0;
  int slot_ = 0;
  std::vector<Request> queue_;  // FIFO (front = oldest), as a vector with a head index
  std::size_t head_ = 0;
  std::vector<Request> batch_;
  double busy_until_ = 0, batch_freq_ = 1;
  WorkBatches out_;          // work for other agents, this window
  std::vector<Wire> inbox_;  // requests from neighbours, min-heap on (time, id)
  std::uint64_t serial_ = 0;
  // Per slot, last slot, per window.
  double s_energy_ = 0, s_served_ = 0, s_viol_ = 0, s_steered_ = 0, s_latency_ = 0, s_busy_ = 0,
         s_arrived_ = 0;
  double last_util_ = 0, last_arrived_ = 0, last_energy_ = 0;
  double w_served_ = 0, w_viol_ = 0, last_window_viol_ = 0;
  // Cumulative.
  double arrived_ = 0, entered_ = 0, served_ = 0, violations_ = 0, steered_ = 0, received_ = 0,
         abandoned_ = 0, energy_j_ = 0, busy_ms_ = 0, sim_ms_ = 0, latency_sum_ = 0, area_ms_ = 0,
         left_ms_ = 0, batches_ = 0, late_deliveries_ = 0;
  std::vector<double> hist_;
  std::uint64_t events_ = 0;  // arrivals, deliveries, completions, timeouts processed
};

/// Energy per inference, SLO violation rate, mean and p99 latency, GPU utilisation, throughput
/// per server, mean batch size, and Little's law terms (L, λ, W) from the summed counters.
std::vector<std::pair<std::string, double>> summarize(const std::map<std::string, double>& c);

}  // namespace marlsched::lstcb
