#pragma once
/// \file aset.hpp
/// Edge inference scheduling ("aset"): DNN inference queries over a pool of distributed edge
/// clusters and a cloud, after ASET (Castellano et al., arXiv 2301.13618; ICDCS-W 2025). The
/// papers' topology, models and workloads are not public: docs/envs/aset.md documents every
/// modelling choice made here and why.
///
/// One shard = one edge cluster = one agent, and a discrete-event simulation of it:
///  * queries of C application classes (each a DNN model with a deadline of milliseconds)
///    arrive at each cluster as a Poisson stream whose rate switches between a normal and a
///    burst level (a two-state Markov-modulated Poisson process, per cluster);
///  * a cluster serves queries FCFS on its GPUs (any GPU runs any model); a query is admitted
///    only if its expected completion, plus the way back to its ingress, meets its deadline,
///    otherwise it is dropped (and its ingress told);
///  * per decision interval the agent picks where its new queries go: whether the cloud takes
///    every query it can serve in time, and which share of the others goes to one of its K
///    nearest clusters (or none). A query is only sent where the round trip plus processing can
///    meet its deadline. Action h·(1 + K·S) + b: h = 1 with the cloud; b = 0 no neighbour,
///    b = 1 + t·S + s: share s of --shares to neighbour t (nearest first);
///  * a query sent to another cluster is a work record that crosses ranks through the
///    framework's exchange; its result (or drop notice) travels back the same way. The decision
///    interval is split into exchange windows no longer than the smallest inter-cluster latency
///    (EnvSpec::windows), so every record arrives in the future of its destination and the
///    distributed simulation is exact (conservative PDES with the network latency as
///    lookahead). With fewer windows (--windows) a record can arrive in the past of its
///    destination: it is then handled at the window start, at most Δ/W − L_min late, and the
///    counters late_deliveries / late_delivery_ms account for it;
///  * success: the result reaches the ingress within the class deadline. Each query ends in
///    exactly one of success, late, dropped (or abandoned when its episode ends in flight).

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/env.hpp"
#include "core/latency_histogram.hpp"
#include "core/rng.hpp"
#include "core/work_batch.hpp"

namespace marlsched::aset {

struct Config : EnvConfig {
  // Clusters (one per agent, in agent order).
  std::vector<int> gpus{6, 4, 6, 4};              ///< GPUs (servers) per cluster
  std::vector<double> rates{800, 540, 800, 540};  ///< mean queries/s per cluster
  bool replicate = false;  ///< cycle gpus/rates when the run has more agents than entries

  // Topology (one-way latencies, generated; see docs/envs/aset.md), or given.
  int metros = 2;                  ///< clusters are spread round-robin over this many metro areas
  double metro_km = 25;            ///< radius of a metro area
  double region_km = 150;          ///< radius of the circle the metro centres sit on
  double hop_ms = 0.5;             ///< switching/queueing per router hop
  double route_factor = 1.5;       ///< fibre path length / great-circle distance
  double cloud_ms = 20;            ///< one-way latency from any cluster to the cloud
  std::vector<double> latency_ms;  ///< N×N one-way latencies (row = from); overrides the model
  std::uint64_t topology_seed = 7;
  int neighbours = 2;  ///< K: offload targets per cluster (its K nearest clusters)

  // Applications: one DNN model each.
  std::vector<std::string> classes{"mobilenet-v2", "yolov5n", "resnet50", "ssd-resnet34"};
  std::vector<double> deadline_ms{10, 15, 40, 80};
  std::vector<double> proc_ms{1.5, 3.0, 6.0, 12.0};       ///< per query on an edge GPU
  std::vector<double> cloud_proc_ms{0.8, 1.5, 3.0, 6.0};  ///< per query in the cloud
  std::vector<double> mix{0.3, 0.3, 0.25, 0.15};          ///< share of each class in arrivals
  double proc_jitter = 0.1;    ///< σ of the lognormal factor on processing times
  double cloud_jitter = 0.15;  ///< σ of the lognormal factor on the cloud response time

  // Bursts: per cluster, per decision interval.
  double burst_factor = 3.0;  ///< arrival rate multiplier while bursting
  double burst_start = 0.01;  ///< probability to enter a burst
  double burst_end = 0.05;    ///< probability to leave it

  // Time.
  double decision_ms = 10;  ///< Δ: decision interval
  int episode_steps = 200;
  int windows = 0;  ///< exchange windows per interval; 0: ceil(Δ / smallest latency), exact

  // Actions and reward.
  std::vector<double> shares{0.25, 0.5, 1.0};  ///< offload shares an action can pick
  double w_fail = 1.0;  ///< reward = (successes − w_fail·failures) / nominal queries per interval

  void bind(OptionBinder& b) override;
  void validate(int num_agents) const override;
  int defined_agents() const override { return replicate ? 0 : static_cast<int>(gpus.size()); }
};

/// One-way latencies between clusters and to the cloud, and each cluster's offload targets.
struct Topology {
  int n = 0;
  std::vector<double> lat;             ///< [from * n + to], ms
  std::vector<double> cloud;           ///< per cluster, ms
  std::vector<std::vector<int>> nbrs;  ///< K nearest other clusters, nearest first
  double min_lat = 0;                  ///< smallest inter-cluster latency (inf for n = 1)
  double at(int from, int to) const { return lat[static_cast<std::size_t>(from * n + to)]; }
};

Topology make_topology(const Config& cfg, int num_agents);
/// Exchange windows per decision interval for a config and topology.
int windows_for(const Config& cfg, const Topology& topo);
EnvSpec make_spec(const Config& cfg, int num_agents, const Topology& topo);

/// Query state as it travels (also the work record payload, one per query).
struct Query {
  double t0 = 0;         ///< arrival at its ingress (ms since the episode start)
  std::uint64_t id = 0;  ///< ingress << 40 | serial: unique per episode
  std::int32_t ingress = 0;
  std::uint8_t cls = 0;
  std::uint8_t status = 0;  ///< 0 pending, 1 served (result), 2 dropped (notice)
  std::uint8_t via = 0;     ///< 0 local, 1 another cluster, 2 cloud
  std::uint8_t pad = 0;
};

struct Event {
  double t = 0;
  std::uint64_t seq = 0;  ///< ties in time go in insertion order: deterministic
  Query q;
  std::uint32_t type = 0;  ///< 0 arrive (to be admitted), 1 done (service ends), 2 result
  std::uint32_t pad = 0;
};

/// One query on the wire (a work record's payload is a sequence of these): its time at the
/// destination and its state.
struct Wire {
  double t_at = 0;
  Query q;
};

/// Counter name of a class's latency histogram bin (core/latency_histogram.hpp).
std::string latency_bin_key(const std::string& cls, int bin);

class Shard final : public marlsched::Shard {
 public:
  Shard(std::shared_ptr<const Config> cfg, std::shared_ptr<const EnvSpec> spec,
        std::shared_ptr<const Topology> topo, int agent);

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

  /// Discrete events processed (arrivals, admissions, completions, results).
  std::uint64_t events() const { return events_; }

 private:
  /// The state that save_state() writes and load_state() reads, one list for both directions
  /// (core/serialize.hpp's StateWriter and StateReader).
  template <class Self, class IO>
  static void state_fields(Self& s, IO& io);
  struct Acc {  // one decision interval at this ingress
    std::vector<double> arrived, success, late, dropped;
    double latency = 0, forwarded = 0, to_cloud = 0, work_ms = 0;
    double fwd_ok = 0, fwd_n = 0, cloud_ok = 0, cloud_n = 0;
  };
  void push(double t, std::uint32_t type, const Query& q);
  void next_arrival();
  void local_arrival(double t);
  void admit(Query q, double t);
  void finish(const Query& q, double t);
  void send(int dest, double t_at, const Query& q);
  void clear_acc();
  double jitter(double sigma);

  std::shared_ptr<const Config> cfg_holder_;
  const Config& cfg_;
  std::shared_ptr<const EnvSpec> spec_;
  std::shared_ptr<const Topology> topo_;
  int agent_, n_, c_, k_, gpus_;
  double rate_per_ms_, nominal_per_step_;
  std::vector<double> cls_nominal_;  // expected arrivals per interval of each class
  std::vector<double> mix_cdf_;
  std::vector<char> feasible_;  // [target (K nbrs, cloud)][class]
  Rng rng_;                     // decisions and service: routing draws, processing and cloud jitter
  Rng exo_;  // the workload: arrivals, classes, bursts (identical under every policy)
  // Clock and decision.
  double clock_ = 0, step_start_ = 0;
  int step_ = 0, target_ = -1;  // -1: none, else the neighbour (0..K-1) that gets share_
  double share_ = 0;
  bool cloud_ = false;  // cloud-feasible queries go to the cloud
  bool burst_ = false;
  double next_arrival_ = 0;
  std::uint64_t serial_ = 0, seq_ = 0;
  std::vector<double> free_at_;  // min-heap of GPU free times
  std::vector<Event> heap_;
  WorkBatches out_;  // work for other agents, this window
  // Observation state.
  Acc acc_, last_;
  std::vector<double> ewma_success_;
  double ewma_fwd_ = 1, ewma_cloud_ = 1;
  std::vector<float> nbr_load_, nbr_wait_;
  // Cumulative counters.
  double arrived_ = 0, success_ = 0, late_ = 0, dropped_ = 0, abandoned_ = 0, forwarded_ = 0,
         received_ = 0, to_cloud_ = 0, latency_sum_ = 0, late_deliveries_ = 0,
         late_delivery_ms_ = 0;
  std::vector<double> cls_arrived_, cls_success_, cls_late_, cls_dropped_, cls_latency_;
  std::vector<double> hist_;  // [class][latency::bin]
  std::uint64_t events_ = 0;
};

/// Success rate, drop rate, late rate, mean and p99 latency, overall and per class
/// ("success_rate/<class>" ...), from the summed counters of every shard.
std::vector<std::pair<std::string, double>> summarize(const Config& cfg,
                                                      const std::map<std::string, double>& c);

}  // namespace marlsched::aset
