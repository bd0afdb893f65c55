#include "envs/aset/aset.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>
#include <sstream>

#include "core/error.hpp"
#include "core/serialize.hpp"

namespace marlsched::aset {

void Config::bind(OptionBinder& b) {
  b.group("Env: edge inference clusters (aset)");
  b.add("edge-gpus", gpus, "GPUs of each edge cluster, in agent order");
  b.add("edge-rates", rates, "mean query arrivals per second at each cluster");
  b.add("edge-replicate", replicate, "cycle --edge-gpus/--edge-rates for more agents");
  b.add("metros", metros, "metro areas the clusters are spread over (round-robin)");
  b.add("metro-km", metro_km, "radius of a metro area (km)");
  b.add("region-km", region_km, "radius of the circle of metro centres (km)");
  b.add("hop-ms", hop_ms, "latency per router hop (ms)");
  b.add("route-factor", route_factor, "fibre path length over great-circle distance");
  b.add("cloud-ms", cloud_ms, "one-way latency from a cluster to the cloud (ms)");
  b.add("latency-ms", latency_ms,
        "N x N one-way latencies in ms, row = from (replaces the generated topology)");
  b.add("topology-seed", topology_seed, "seed of the generated cluster positions");
  b.add("neighbours", neighbours, "offload targets per cluster: its K nearest clusters");
  b.add("classes", classes, "application classes (one DNN model each)");
  b.add("deadline-ms", deadline_ms, "end-to-end deadline of each class (ms)");
  b.add("proc-ms", proc_ms, "processing time per query of each class on an edge GPU (ms)");
  b.add("cloud-proc-ms", cloud_proc_ms, "processing time per query of each class in the cloud");
  b.add("mix", mix, "share of each class among arrivals");
  b.add("proc-jitter", proc_jitter, "σ of the lognormal factor on processing times");
  b.add("cloud-jitter", cloud_jitter, "σ of the lognormal factor on cloud response times");
  b.add("burst-factor", burst_factor, "arrival rate multiplier during a burst");
  b.add("burst-start", burst_start, "per-interval probability that a cluster starts a burst");
  b.add("burst-end", burst_end, "per-interval probability that a burst ends");
  b.add("decision-ms", decision_ms, "decision interval Δ (ms)");
  b.add("edge-episode-steps", episode_steps, "decision intervals per episode");
  b.add("windows", windows, "exchange windows per interval (0: ceil(Δ / smallest latency), exact)");
  b.add("shares", shares, "offload shares an action can choose");
  b.add("w-fail", w_fail, "reward penalty per late or dropped query (success = +1)");
}

void Config::validate(int num_agents) const {
  const std::size_t n = gpus.size();
  MARLSCHED_REQUIRE(n > 0, "--edge-gpus: at least one cluster is needed");
  MARLSCHED_REQUIRE(rates.size() == n, "--edge-rates has " << rates.size()
                                                           << " values but --edge-gpus has " << n
                                                           << " (one per cluster)");
  for (int g : gpus)
    MARLSCHED_REQUIRE(
        g > 0 && g <= 100000,
        "--edge-gpus values must be in [1, 100000] (one simulated GPU each), got " << g);
  for (double r : rates)
    MARLSCHED_REQUIRE(r >= 0 && std::isfinite(r), "--edge-rates must be finite and >= 0");
  if (replicate)
    MARLSCHED_REQUIRE(static_cast<std::size_t>(num_agents) >= n,
                      "--edge-replicate cycles "
                          << n << " clusters over the run's agents, but the run has only "
                          << num_agents
                          << " agents (ranks x agents-per-rank), which would drop a cluster; "
                             "list at most "
                          << num_agents << " clusters or run more agents");
  else
    MARLSCHED_REQUIRE(static_cast<std::size_t>(num_agents) == n,
                      "the config defines " << n << " edge clusters but the run has " << num_agents
                                            << " agents (ranks x agents-per-rank); give one "
                                               "--edge-gpus entry per agent or --edge-replicate");
  MARLSCHED_REQUIRE(metros >= 1, "--metros must be >= 1");
  for (double v : {metro_km, region_km, hop_ms})
    MARLSCHED_REQUIRE(v >= 0 && std::isfinite(v), "--metro-km, --region-km, --hop-ms must be >= 0");
  MARLSCHED_REQUIRE(route_factor >= 1 && std::isfinite(route_factor),
                    "--route-factor must be >= 1");
  MARLSCHED_REQUIRE(cloud_ms > 0 && std::isfinite(cloud_ms), "--cloud-ms must be positive");
  if (!latency_ms.empty()) {
    const std::size_t na = static_cast<std::size_t>(num_agents);
    MARLSCHED_REQUIRE(latency_ms.size() == na * na, "--latency-ms needs " << na * na
                                                                          << " values (N x N), got "
                                                                          << latency_ms.size());
    for (std::size_t i = 0; i < na; ++i)
      for (std::size_t j = 0; j < na; ++j) {
        const double v = latency_ms[i * na + j];
        MARLSCHED_REQUIRE(std::isfinite(v) && (i == j ? v >= 0 : v > 0),
                          "--latency-ms[" << i << "][" << j << "] must be "
                                          << (i == j ? ">= 0" : "positive") << ", got " << v);
      }
  }
  MARLSCHED_REQUIRE(neighbours >= 0, "--neighbours must be >= 0");
  const std::size_t c = classes.size();
  MARLSCHED_REQUIRE(c > 0 && c <= 255, "--classes: 1 to 255 classes");
  auto per_class = [&](const std::vector<double>& v, const char* flag, bool strictly) {
    MARLSCHED_REQUIRE(v.size() == c,
                      "--" << flag << " has " << v.size() << " values but --classes has " << c);
    for (double x : v)
      MARLSCHED_REQUIRE(
          std::isfinite(x) && (strictly ? x > 0 : x >= 0),
          "--" << flag << " values must be " << (strictly ? "positive" : ">= 0") << ", got " << x);
  };
  per_class(deadline_ms, "deadline-ms", true);
  per_class(proc_ms, "proc-ms", true);
  per_class(cloud_proc_ms, "cloud-proc-ms", true);
  per_class(mix, "mix", false);
  MARLSCHED_REQUIRE(std::accumulate(mix.begin(), mix.end(), 0.0) > 0, "--mix must not be all zero");
  MARLSCHED_REQUIRE(proc_jitter >= 0 && proc_jitter < 2 && cloud_jitter >= 0 && cloud_jitter < 2,
                    "--proc-jitter and --cloud-jitter must be in [0, 2)");
  MARLSCHED_REQUIRE(burst_factor >= 0 && std::isfinite(burst_factor),
                    "--burst-factor must be >= 0");
  MARLSCHED_REQUIRE(burst_start >= 0 && burst_start <= 1 && burst_end >= 0 && burst_end <= 1,
                    "--burst-start and --burst-end are probabilities in [0, 1]");
  // The env simulates every query; bound the interval and the arrivals it holds so that a
  // typo (1e-300, 1e308) is refused here instead of running for minutes into bad_alloc.
  MARLSCHED_REQUIRE(
      decision_ms >= 1e-3 && decision_ms <= 3.6e6,
      "--decision-ms must be in [0.001, 3600000] ms (1 µs to 1 hour), got " << decision_ms);
  for (double r : rates) {
    const double per_interval = r / 1000.0 * decision_ms * std::max(1.0, burst_factor);
    MARLSCHED_REQUIRE(per_interval <= 1e6, "--edge-rates "
                                               << r << "/s over --decision-ms " << decision_ms
                                               << " (x --burst-factor " << burst_factor
                                               << ") means " << per_interval
                                               << " queries per interval at one cluster; the env "
                                                  "simulates each query and allows at most 1e6");
  }
  MARLSCHED_REQUIRE(episode_steps > 0, "--edge-episode-steps must be positive");
  MARLSCHED_REQUIRE(windows >= 0 && windows <= 10000, "--windows must be in [0, 10000]");
  MARLSCHED_REQUIRE(!shares.empty(), "--shares needs at least one value");
  for (double s : shares)
    MARLSCHED_REQUIRE(s > 0 && s <= 1, "--shares values must be in (0, 1], got " << s);
  MARLSCHED_REQUIRE(w_fail >= 0 && std::isfinite(w_fail), "--w-fail must be >= 0");
}

Topology make_topology(const Config& cfg, int n) {
  Topology t;
  t.n = n;
  t.lat.assign(static_cast<std::size_t>(n * n), 0.0);
  t.cloud.assign(static_cast<std::size_t>(n), cfg.cloud_ms);
  if (!cfg.latency_ms.empty()) {
    t.lat = cfg.latency_ms;
  } else {
    // Clusters round-robin over metro areas whose centres sit on a circle; each cluster at a
    // uniform point of its metro disk. Same metro: 2 hops (edge - metro - edge); different
    // metros: 4 hops (edge - metro - regional - metro - edge); plus fibre at 5 µs/km.
    Rng rng(derive_seed(cfg.topology_seed, {0x7090}));
    std::vector<double> x(static_cast<std::size_t>(n)), y(x.size());
    const double pi = 3.141592653589793;
    for (int i = 0; i < n; ++i) {
      const int m = i % cfg.metros;
      const double a = 2 * pi * m / cfg.metros;
      const double r = cfg.metro_km * std::sqrt(rng.uniform()), b = 2 * pi * rng.uniform();
      x[static_cast<std::size_t>(i)] =
          (cfg.metros > 1 ? cfg.region_km * std::cos(a) : 0) + r * std::cos(b);
      y[static_cast<std::size_t>(i)] =
          (cfg.metros > 1 ? cfg.region_km * std::sin(a) : 0) + r * std::sin(b);
    }
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        if (i == j) continue;
        const auto iu = static_cast<std::size_t>(i), ju = static_cast<std::size_t>(j);
        const double km = std::hypot(x[iu] - x[ju], y[iu] - y[ju]);
        const int hops = (i % cfg.metros == j % cfg.metros) ? 2 : 4;
        t.lat[iu * static_cast<std::size_t>(n) + ju] =
            hops * cfg.hop_ms + km * cfg.route_factor * 0.005;
      }
  }
  t.min_lat = std::numeric_limits<double>::infinity();
  const int k = std::min(cfg.neighbours, n - 1);
  for (int i = 0; i < n; ++i) {
    std::vector<int> others;
    for (int j = 0; j < n; ++j)
      if (j != i) {
        others.push_back(j);
        t.min_lat = std::min(t.min_lat, t.at(i, j));
      }
    std::stable_sort(others.begin(), others.end(),
                     [&](int a, int b) { return t.at(i, a) < t.at(i, b); });
    others.resize(static_cast<std::size_t>(k));
    t.nbrs.push_back(others);
  }
  return t;
}

int windows_for(const Config& cfg, const Topology& topo) {
  if (cfg.windows > 0) return cfg.windows;
  if (!std::isfinite(topo.min_lat)) return 1;  // one cluster: nothing crosses
  const double w = std::ceil(cfg.decision_ms / topo.min_lat - 1e-9);
  MARLSCHED_REQUIRE(w <= 10000, "the smallest inter-cluster latency ("
                                    << topo.min_lat << " ms) needs " << w
                                    << " exchange windows per interval; raise the latencies or "
                                       "set --windows (inexact)");
  return std::max(1, static_cast<int>(w));
}

EnvSpec make_spec(const Config& cfg, int num_agents, const Topology& topo) {
  EnvSpec s;
  s.name = "aset";
  s.obs_fields = {"load", "wait", "success"};
  s.num_public = 3;
  for (const auto& c : cfg.classes) s.obs_fields.push_back("rate/" + c);
  for (const auto& c : cfg.classes) s.obs_fields.push_back("success/" + c);
  const int k = std::min(cfg.neighbours, num_agents - 1);
  for (int j = 0; j < k; ++j) s.obs_fields.push_back("nbr" + std::to_string(j + 1) + "_load");
  for (int j = 0; j < k; ++j) s.obs_fields.push_back("nbr" + std::to_string(j + 1) + "_wait");
  s.obs_fields.push_back("fwd_success");
  s.obs_fields.push_back("cloud_success");
  s.obs_fields.push_back("burst_level");
  for (const std::string cloud : {"", "cloud+"}) {
    s.action_names.push_back(cloud.empty() ? "local" : "cloud");
    for (int t = 0; t < k; ++t)
      for (double sh : cfg.shares)
        s.action_names.push_back(cloud + "nbr" + std::to_string(t + 1) + ":" +
                                 std::to_string(static_cast<int>(std::lround(sh * 100))) + "%");
  }
  s.reward_components = {"success", "late", "dropped", "forwarded", "to_cloud", "latency_ms_sum"};
  s.episode_length = cfg.episode_steps;
  s.windows = windows_for(cfg, topo);
  return s;
}

std::string latency_bin_key(const std::string& cls, int bin) {
  char b[8];
  std::snprintf(b, sizeof b, "%02d", bin);
  return "latency_bin/" + cls + "/" + b;
}

namespace {
constexpr std::uint32_t kArrive = 0, kDone = 1, kResult = 2;
constexpr std::uint8_t kPending = 0, kServed = 1, kDropped = 2;
struct Later {  // min-heap on (time, sequence)
  bool operator()(const Event& a, const Event& b) const {
    return a.t > b.t || (a.t == b.t && a.seq > b.seq);
  }
};
}  // namespace

Shard::Shard(std::shared_ptr<const Config> cfg, std::shared_ptr<const EnvSpec> spec,
             std::shared_ptr<const Topology> topo, int agent)
    : cfg_holder_(std::move(cfg)),
      cfg_(*cfg_holder_),
      spec_(std::move(spec)),
      topo_(std::move(topo)),
      agent_(agent),
      n_(topo_->n),
      c_(static_cast<int>(cfg_.classes.size())),
      k_(static_cast<int>(topo_->nbrs[static_cast<std::size_t>(agent)].size())) {
  const auto site = static_cast<std::size_t>(agent) % cfg_.gpus.size();
  gpus_ = cfg_.gpus[site];
  rate_per_ms_ = cfg_.rates[site] / 1000.0;
  nominal_per_step_ = std::max(1e-9, rate_per_ms_ * cfg_.decision_ms);
  const double total = std::accumulate(cfg_.mix.begin(), cfg_.mix.end(), 0.0);
  double acc = 0;
  for (double m : cfg_.mix) {
    mix_cdf_.push_back(acc += m / total);
    cls_nominal_.push_back(std::max(1e-9, nominal_per_step_ * m / total));
  }
  mix_cdf_.back() = 1.0;
  // Which classes each target can serve in time (round trip plus processing within the
  // deadline): the K neighbours, then the cloud.
  for (int t = 0; t <= k_; ++t)
    for (int c = 0; c < c_; ++c) {
      const auto cu = static_cast<std::size_t>(c);
      double need;
      if (t < k_) {
        const int j = topo_->nbrs[static_cast<std::size_t>(agent)][static_cast<std::size_t>(t)];
        need = topo_->at(agent, j) + topo_->at(j, agent) + cfg_.proc_ms[cu];
      } else {
        need = 2 * topo_->cloud[static_cast<std::size_t>(agent)] + cfg_.cloud_proc_ms[cu];
      }
      feasible_.push_back(need <= cfg_.deadline_ms[cu] ? 1 : 0);
    }
  out_.resize(n_);
  cls_arrived_.assign(static_cast<std::size_t>(c_), 0.0);
  cls_success_ = cls_late_ = cls_dropped_ = cls_arrived_;
  hist_.assign(static_cast<std::size_t>(c_ * latency::kBins), 0.0);
  cls_latency_.assign(static_cast<std::size_t>(c_), 0.0);
  reset(0, 0);
}

void Shard::clear_acc() {
  acc_ = Acc{};
  acc_.arrived.assign(static_cast<std::size_t>(c_), 0.0);
  acc_.success = acc_.late = acc_.dropped = acc_.arrived;
}

void Shard::reset(std::uint64_t /*world_seed*/, std::uint64_t shard_seed) {
  abandoned_ += static_cast<double>(heap_.size());
  heap_.clear();
  out_.clear();
  rng_.seed(shard_seed);
  exo_.seed(derive_seed(shard_seed, {0xE40}));
  clock_ = step_start_ = 0;
  step_ = 0;
  target_ = -1;
  share_ = 0;
  cloud_ = false;
  // The burst chain starts in its stationary distribution.
  const double p_burst = cfg_.burst_start + cfg_.burst_end > 0
                             ? cfg_.burst_start / (cfg_.burst_start + cfg_.burst_end)
                             : 0.0;
  burst_ = exo_.uniform() < p_burst;
  serial_ = 0;
  seq_ = 0;
  free_at_.assign(static_cast<std::size_t>(gpus_), 0.0);
  clear_acc();
  last_ = acc_;
  ewma_success_.assign(static_cast<std::size_t>(c_), 1.0);
  ewma_fwd_ = ewma_cloud_ = 1.0;
  nbr_load_.assign(static_cast<std::size_t>(k_), 0.f);
  nbr_wait_.assign(static_cast<std::size_t>(k_), 0.f);
  next_arrival_ = 0;
  next_arrival();
}

double Shard::jitter(double sigma) {
  return sigma > 0 ? std::exp(sigma * rng_.normal() - 0.5 * sigma * sigma) : 1.0;
}

void Shard::next_arrival() {
  const double rate = rate_per_ms_ * (burst_ ? cfg_.burst_factor : 1.0);
  if (rate <= 0) {
    next_arrival_ = std::numeric_limits<double>::infinity();
    return;
  }
  double u = exo_.uniform();
  while (u <= 0) u = exo_.uniform();
  next_arrival_ += -std::log(u) / rate;
}

void Shard::push(double t, std::uint32_t type, const Query& q) {
  heap_.push_back(Event{t, seq_++, q, type, 0});
  std::push_heap(heap_.begin(), heap_.end(), Later{});
}

void Shard::observe(float* out) const {
  const double cap = gpus_ * cfg_.decision_ms;
  const double min_free = free_at_.front();
  double fin = 0, ok = 0;
  for (int c = 0; c < c_; ++c) {
    const auto cu = static_cast<std::size_t>(c);
    fin += last_.success[cu] + last_.late[cu] + last_.dropped[cu];
    ok += last_.success[cu];
  }
  int i = 0;
  out[i++] = static_cast<float>(last_.work_ms / cap);
  out[i++] = static_cast<float>(std::max(0.0, min_free - clock_) / cfg_.decision_ms);
  out[i++] = static_cast<float>(fin > 0 ? ok / fin : 1.0);
  for (int c = 0; c < c_; ++c)
    out[i++] = static_cast<float>(last_.arrived[static_cast<std::size_t>(c)] /
                                  cls_nominal_[static_cast<std::size_t>(c)]);
  for (int c = 0; c < c_; ++c)
    out[i++] = static_cast<float>(ewma_success_[static_cast<std::size_t>(c)]);
  for (int j = 0; j < k_; ++j) out[i++] = nbr_load_[static_cast<std::size_t>(j)];
  for (int j = 0; j < k_; ++j) out[i++] = nbr_wait_[static_cast<std::size_t>(j)];
  out[i++] = static_cast<float>(ewma_fwd_);
  out[i++] = static_cast<float>(ewma_cloud_);
  double arrived = 0;
  for (double a : last_.arrived) arrived += a;
  out[i++] = static_cast<float>(arrived / nominal_per_step_);
}

void Shard::act(int action, const GlobalObs& global, std::vector<WorkRecord>& /*outbox*/) {
  const int na = spec_->num_actions();
  MARLSCHED_REQUIRE(action >= 0 && action < na,
                    "aset action " << action << " out of range [0, " << na << ")");
  const int half = na / 2, s = static_cast<int>(cfg_.shares.size());
  cloud_ = action >= half;
  const int b = action % half;
  target_ = b == 0 ? -1 : (b - 1) / s;
  share_ = b == 0 ? 0.0 : cfg_.shares[static_cast<std::size_t>((b - 1) % s)];
  // Neighbour load as exchanged (the allgathered public fields of this step).
  if (global.data != nullptr)
    for (int j = 0; j < k_; ++j) {
      const float* row =
          global.row(topo_->nbrs[static_cast<std::size_t>(agent_)][static_cast<std::size_t>(j)]);
      nbr_load_[static_cast<std::size_t>(j)] = row[0];
      nbr_wait_[static_cast<std::size_t>(j)] = row[1];
    }
}

void Shard::send(int dest, double t_at, const Query& q) {
  out_.append(dest, Wire{t_at, q});
}

void Shard::local_arrival(double t) {
  const double u = exo_.uniform();
  int c = 0;
  while (c + 1 < c_ && u >= mix_cdf_[static_cast<std::size_t>(c)]) ++c;
  Query q;
  q.t0 = t;
  q.id = (static_cast<std::uint64_t>(agent_) << 40) | serial_++;
  q.ingress = agent_;
  q.cls = static_cast<std::uint8_t>(c);
  arrived_ += 1;
  cls_arrived_[static_cast<std::size_t>(c)] += 1;
  acc_.arrived[static_cast<std::size_t>(c)] += 1;
  if (cloud_ && feasible_[static_cast<std::size_t>(k_ * c_ + c)]) {
    // The cloud: elastic, answers after its round trip and processing.
    q.via = 2;
    to_cloud_ += 1;
    acc_.to_cloud += 1;
    const double resp =
        (2 * topo_->cloud[static_cast<std::size_t>(agent_)] + cfg_.cloud_proc_ms[q.cls]) *
        jitter(cfg_.cloud_jitter);
    q.status = kServed;
    push(t + resp, kResult, q);
    return;
  }
  if (target_ >= 0 && feasible_[static_cast<std::size_t>(target_ * c_ + c)] &&
      (share_ >= 1.0 || rng_.uniform() < share_)) {
    const int j = topo_->nbrs[static_cast<std::size_t>(agent_)][static_cast<std::size_t>(target_)];
    q.via = 1;
    forwarded_ += 1;
    acc_.forwarded += 1;
    send(j, t + topo_->at(agent_, j), q);
    return;
  }
  admit(q, t);
}

void Shard::admit(Query q, double t) {
  // free_at_ is a min-heap of the GPUs' free times: FCFS takes the earliest free GPU.
  const double start = std::max(t, free_at_.front());
  const double back = q.ingress == agent_ ? 0.0 : topo_->at(agent_, q.ingress);
  const auto cu = static_cast<std::size_t>(q.cls);
  if (start + cfg_.proc_ms[cu] + back - q.t0 > cfg_.deadline_ms[cu]) {
    q.status = kDropped;  // cannot make its deadline: rejected now, the ingress is told
    if (q.ingress == agent_)
      finish(q, t);
    else
      send(q.ingress, t + back, q);
    return;
  }
  const double service = cfg_.proc_ms[cu] * jitter(cfg_.proc_jitter);
  std::pop_heap(free_at_.begin(), free_at_.end(), std::greater<>{});
  free_at_.back() = start + service;
  std::push_heap(free_at_.begin(), free_at_.end(), std::greater<>{});
  acc_.work_ms += service;
  push(start + service, kDone, q);
}

void Shard::finish(const Query& q, double t) {
  const auto cu = static_cast<std::size_t>(q.cls);
  bool ok = false;
  if (q.status == kDropped) {
    dropped_ += 1;
    cls_dropped_[cu] += 1;
    acc_.dropped[cu] += 1;
  } else {
    const double lat = t - q.t0;
    latency_sum_ += lat;
    acc_.latency += lat;
    cls_latency_[cu] += lat;
    hist_[cu * latency::kBins + static_cast<std::size_t>(latency::bin(lat))] += 1;
    ok = lat <= cfg_.deadline_ms[cu] + 1e-9;
    if (ok) {
      success_ += 1;
      cls_success_[cu] += 1;
      acc_.success[cu] += 1;
    } else {
      late_ += 1;
      cls_late_[cu] += 1;
      acc_.late[cu] += 1;
    }
  }
  if (q.via == 1) {
    acc_.fwd_n += 1;
    acc_.fwd_ok += ok ? 1 : 0;
  } else if (q.via == 2) {
    acc_.cloud_n += 1;
    acc_.cloud_ok += ok ? 1 : 0;
  }
}

void Shard::window(int w, std::vector<WorkRecord>& outbox) {
  const int W = spec_->windows;
  const double t_end =
      w + 1 == W ? step_start_ + cfg_.decision_ms : step_start_ + cfg_.decision_ms * (w + 1) / W;
  for (;;) {
    const double te = heap_.empty() ? std::numeric_limits<double>::infinity() : heap_.front().t;
    const double ta = next_arrival_;
    if (std::min(te, ta) >= t_end) break;
    ++events_;
    if (ta < te) {
      local_arrival(ta);
      next_arrival();
      continue;
    }
    std::pop_heap(heap_.begin(), heap_.end(), Later{});
    const Event ev = heap_.back();
    heap_.pop_back();
    if (ev.type == kArrive) {
      admit(ev.q, ev.t);
    } else if (ev.type == kDone) {
      if (ev.q.ingress == agent_) {
        finish(ev.q, ev.t);
      } else {
        Query q = ev.q;
        q.status = kServed;
        send(q.ingress, ev.t + topo_->at(agent_, q.ingress), q);
      }
    } else {
      finish(ev.q, ev.t);
    }
  }
  clock_ = t_end;
  out_.flush(outbox);
}

void Shard::receive(const WorkRecord& record) {
  for (Wire w : WorkBatches::items<Wire>(record, "aset")) {
    if (w.t_at < clock_) {  // only with fewer windows than exactness needs
      late_deliveries_ += 1;
      late_delivery_ms_ += clock_ - w.t_at;
      w.t_at = clock_;
    }
    if (w.q.status == kPending) {
      received_ += 1;
      push(w.t_at, kArrive, w.q);
    } else {
      push(w.t_at, kResult, w.q);
    }
  }
}

StepOutcome Shard::advance() {
  StepOutcome o;
  double ok = 0, fail = 0;
  for (int c = 0; c < c_; ++c) {
    const auto cu = static_cast<std::size_t>(c);
    ok += acc_.success[cu];
    fail += acc_.late[cu] + acc_.dropped[cu];
    const double fin = acc_.success[cu] + acc_.late[cu] + acc_.dropped[cu];
    if (fin > 0) ewma_success_[cu] = 0.7 * ewma_success_[cu] + 0.3 * acc_.success[cu] / fin;
  }
  if (acc_.fwd_n > 0) ewma_fwd_ = 0.7 * ewma_fwd_ + 0.3 * acc_.fwd_ok / acc_.fwd_n;
  if (acc_.cloud_n > 0) ewma_cloud_ = 0.7 * ewma_cloud_ + 0.3 * acc_.cloud_ok / acc_.cloud_n;
  o.reward = (ok - cfg_.w_fail * fail) / nominal_per_step_;
  double late = 0, dropped = 0;
  for (int c = 0; c < c_; ++c) {
    late += acc_.late[static_cast<std::size_t>(c)];
    dropped += acc_.dropped[static_cast<std::size_t>(c)];
  }
  o.components = {ok, late, dropped, acc_.forwarded, acc_.to_cloud, acc_.latency};
  last_ = acc_;
  clear_acc();
  // The burst chain moves once per interval; arrivals already drawn past the interval keep
  // their time (memorylessness makes the switch exact at the next draw).
  const bool was = burst_;
  burst_ = burst_ ? !(exo_.uniform() < cfg_.burst_end) : exo_.uniform() < cfg_.burst_start;
  step_ += 1;
  step_start_ = step_ * cfg_.decision_ms;
  clock_ = step_start_;
  if (burst_ != was) {  // redraw the next arrival at the new rate from the interval start
    next_arrival_ = step_start_;
    next_arrival();
  }
  o.truncated = step_ >= cfg_.episode_steps;
  return o;
}

std::map<std::string, double> Shard::counters() const {
  std::map<std::string, double> m = {{"arrived", arrived_},
                                     {"success", success_},
                                     {"late", late_},
                                     {"dropped", dropped_},
                                     {"abandoned", abandoned_},
                                     {"in_system", static_cast<double>(heap_.size())},
                                     {"forwarded", forwarded_},
                                     {"received", received_},
                                     {"to_cloud", to_cloud_},
                                     {"latency_ms_sum", latency_sum_},
                                     {"late_deliveries", late_deliveries_},
                                     {"late_delivery_ms", late_delivery_ms_},
                                     {"events", static_cast<double>(events_)}};
  for (int c = 0; c < c_; ++c) {
    const auto cu = static_cast<std::size_t>(c);
    const std::string& name = cfg_.classes[cu];
    m["arrived/" + name] = cls_arrived_[cu];
    m["success/" + name] = cls_success_[cu];
    m["late/" + name] = cls_late_[cu];
    m["dropped/" + name] = cls_dropped_[cu];
    m["latency_ms_sum/" + name] = cls_latency_[cu];
    for (int b = 0; b < latency::kBins; ++b)
      m[latency_bin_key(name, b)] = hist_[cu * latency::kBins + static_cast<std::size_t>(b)];
  }
  return m;
}

namespace {
constexpr std::uint32_t kStateMagic = 0xA5E7'0001;
void put_acc(ByteWriter& w, const std::vector<double>& a) {
  w.put_vector(a);
}
}  // namespace

std::vector<std::byte> Shard::save_state() const {
  ByteWriter w;
  w.put(kStateMagic);
  w.put<std::int32_t>(agent_);
  w.put_string(write_states({&rng_, &exo_}));
  w.put(clock_);
  w.put(step_start_);
  w.put<std::int32_t>(step_);
  w.put<std::int32_t>(target_);
  w.put(share_);
  w.put<std::uint8_t>(cloud_ ? 1 : 0);
  w.put<std::uint8_t>(burst_ ? 1 : 0);
  w.put(next_arrival_);
  w.put(serial_);
  w.put(seq_);
  w.put_vector(free_at_);
  w.put_vector(heap_);
  for (const Acc* a : {&acc_, &last_}) {
    put_acc(w, a->arrived);
    put_acc(w, a->success);
    put_acc(w, a->late);
    put_acc(w, a->dropped);
    w.put_vector(std::vector<double>{a->latency, a->forwarded, a->to_cloud, a->work_ms, a->fwd_ok,
                                     a->fwd_n, a->cloud_ok, a->cloud_n});
  }
  w.put_vector(ewma_success_);
  w.put(ewma_fwd_);
  w.put(ewma_cloud_);
  w.put_vector(nbr_load_);
  w.put_vector(nbr_wait_);
  w.put_vector(std::vector<double>{arrived_, success_, late_, dropped_, abandoned_, forwarded_,
                                   received_, to_cloud_, latency_sum_, late_deliveries_,
                                   late_delivery_ms_});
  w.put_vector(cls_arrived_);
  w.put_vector(cls_success_);
  w.put_vector(cls_late_);
  w.put_vector(cls_dropped_);
  w.put_vector(hist_);
  w.put_vector(cls_latency_);
  w.put(events_);
  return w.bytes();
}

void Shard::load_state(const std::vector<std::byte>& state) {
  ByteReader r(state.data(), state.size(), "aset shard state");
  if (r.get<std::uint32_t>() != kStateMagic || r.get<std::int32_t>() != agent_)
    MARLSCHED_THROW(InputError, "aset shard state: wrong magic or agent");
  if (!read_states(r.get_string(), {&rng_, &exo_}))
    MARLSCHED_THROW(InputError, "aset shard state: bad RNG state");
  clock_ = r.get<double>();
  step_start_ = r.get<double>();
  step_ = r.get<std::int32_t>();
  target_ = r.get<std::int32_t>();
  share_ = r.get<double>();
  cloud_ = r.get<std::uint8_t>() != 0;
  burst_ = r.get<std::uint8_t>() != 0;
  next_arrival_ = r.get<double>();
  serial_ = r.get<std::uint64_t>();
  seq_ = r.get<std::uint64_t>();
  free_at_ = r.get_vector<double>();
  heap_ = r.get_vector<Event>();
  const auto cs = static_cast<std::size_t>(c_);
  for (Acc* a : {&acc_, &last_}) {
    a->arrived = r.get_vector<double>();
    a->success = r.get_vector<double>();
    a->late = r.get_vector<double>();
    a->dropped = r.get_vector<double>();
    const auto v = r.get_vector<double>();
    if (v.size() != 8 || a->arrived.size() != cs || a->success.size() != cs ||
        a->late.size() != cs || a->dropped.size() != cs)
      MARLSCHED_THROW(InputError, "aset shard state: wrong class count");
    a->latency = v[0];
    a->forwarded = v[1];
    a->to_cloud = v[2];
    a->work_ms = v[3];
    a->fwd_ok = v[4];
    a->fwd_n = v[5];
    a->cloud_ok = v[6];
    a->cloud_n = v[7];
  }
  ewma_success_ = r.get_vector<double>();
  ewma_fwd_ = r.get<double>();
  ewma_cloud_ = r.get<double>();
  nbr_load_ = r.get_vector<float>();
  nbr_wait_ = r.get_vector<float>();
  const auto tot = r.get_vector<double>();
  if (tot.size() != 11 || free_at_.size() != static_cast<std::size_t>(gpus_) ||
      ewma_success_.size() != cs || nbr_load_.size() != static_cast<std::size_t>(k_) ||
      nbr_wait_.size() != static_cast<std::size_t>(k_))
    MARLSCHED_THROW(InputError, "aset shard state: does not match this configuration");
  arrived_ = tot[0];
  success_ = tot[1];
  late_ = tot[2];
  dropped_ = tot[3];
  abandoned_ = tot[4];
  forwarded_ = tot[5];
  received_ = tot[6];
  to_cloud_ = tot[7];
  latency_sum_ = tot[8];
  late_deliveries_ = tot[9];
  late_delivery_ms_ = tot[10];
  cls_arrived_ = r.get_vector<double>();
  cls_success_ = r.get_vector<double>();
  cls_late_ = r.get_vector<double>();
  cls_dropped_ = r.get_vector<double>();
  hist_ = r.get_vector<double>();
  cls_latency_ = r.get_vector<double>();
  events_ = r.get<std::uint64_t>();
  if (cls_arrived_.size() != cs || cls_success_.size() != cs || cls_late_.size() != cs ||
      cls_dropped_.size() != cs || hist_.size() != cs * latency::kBins || cls_latency_.size() != cs)
    MARLSCHED_THROW(InputError, "aset shard state: does not match this configuration");
  std::make_heap(heap_.begin(), heap_.end(), Later{});
  std::make_heap(free_at_.begin(), free_at_.end(), std::greater<>{});
  out_.clear();
}

std::vector<std::pair<std::string, double>> summarize(const Config& cfg,
                                                      const std::map<std::string, double>& c) {
  auto get = [&](const std::string& k) {
    const auto it = c.find(k);
    return it == c.end() ? 0.0 : it->second;
  };
  std::vector<std::pair<std::string, double>> out;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // p99 from the summed histograms of some classes.
  auto p99 = [&](const std::vector<std::string>& classes) {
    std::vector<double> h(latency::kBins, 0.0);
    for (const auto& name : classes)
      for (int b = 0; b < latency::kBins; ++b)
        h[static_cast<std::size_t>(b)] += get(latency_bin_key(name, b));
    return latency::quantile_upper(h, 0.99);
  };
  // Success, drop and late rates of finished queries, mean and p99 latency of answered ones.
  auto rates = [&](const std::string& suffix, double ok, double late, double drop, double lat,
                   double tail) {
    const double fin = ok + late + drop;
    out.emplace_back("success_rate" + suffix, fin > 0 ? ok / fin : nan);
    out.emplace_back("drop_rate" + suffix, fin > 0 ? drop / fin : nan);
    out.emplace_back("late_rate" + suffix, fin > 0 ? late / fin : nan);
    out.emplace_back("mean_latency_ms" + suffix, ok + late > 0 ? lat / (ok + late) : nan);
    out.emplace_back("p99_latency_ms" + suffix, tail);
  };
  rates("", get("success"), get("late"), get("dropped"), get("latency_ms_sum"), p99(cfg.classes));
  for (const auto& name : cfg.classes)
    rates("/" + name, get("success/" + name), get("late/" + name), get("dropped/" + name),
          get("latency_ms_sum/" + name), p99({name}));
  return out;
}

}  // namespace marlsched::aset
