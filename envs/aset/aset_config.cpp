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
  b.add("edge-gpus", gpus, "GPUs of each edge cluster, in agent order").in(1, 100000);
  b.add("edge-rates", rates, "mean query arrivals per second at each cluster").at_least(0);
  b.add("edge-replicate", replicate, "cycle --edge-gpus/--edge-rates for more agents");
  b.add("metros", metros, "metro areas the clusters are spread over (round-robin)").at_least(1);
  b.add("metro-km", metro_km, "radius of a metro area (km)").at_least(0);
  b.add("region-km", region_km, "radius of the circle of metro centres (km)").at_least(0);
  b.add("hop-ms", hop_ms, "latency per router hop (ms)").at_least(0);
  b.add("route-factor", route_factor, "fibre path length over great-circle distance").at_least(1);
  b.add("cloud-ms", cloud_ms, "one-way latency from a cluster to the cloud (ms)").positive();
  b.add("latency-ms", latency_ms,
        "N x N one-way latencies in ms, row = from (replaces the generated topology)");
  b.add("topology-seed", topology_seed, "seed of the generated cluster positions");
  b.add("neighbours", neighbours, "offload targets per cluster: its K nearest clusters")
      .at_least(0);
  b.add("classes", classes, "application classes (one DNN model each)");
  b.add("deadline-ms", deadline_ms, "end-to-end deadline of each class (ms)").positive();
  b.add("proc-ms", proc_ms, "processing time per query of each class on an edge GPU (ms)")
      .positive();
  b.add("cloud-proc-ms", cloud_proc_ms, "processing time per query of each class in the cloud")
      .positive();
  b.add("mix", mix, "share of each class among arrivals").at_least(0);
  b.add("proc-jitter", proc_jitter, "σ of the lognormal factor on processing times")
      .at_least(0)
      .less_than(2);
  b.add("cloud-jitter", cloud_jitter, "σ of the lognormal factor on cloud response times")
      .at_least(0)
      .less_than(2);
  b.add("burst-factor", burst_factor, "arrival rate multiplier during a burst").at_least(0);
  b.add("burst-start", burst_start, "per-interval probability that a cluster starts a burst")
      .in(0, 1);
  b.add("burst-end", burst_end, "per-interval probability that a burst ends").in(0, 1);
  // The env simulates every query; bounds on the interval and the arrivals it holds refuse a
  // typo (1e-300, 1e308) here instead of running for minutes into bad_alloc.
  b.add("decision-ms", decision_ms, "decision interval Δ (ms; 1 µs to 1 hour)").in(1e-3, 3.6e6);
  b.add("edge-episode-steps", episode_steps, "decision intervals per episode").positive();
  b.add("windows", windows, "exchange windows per interval (0: ceil(Δ / smallest latency), exact)")
      .in(0, 10000);
  b.add("shares", shares, "offload shares an action can choose").greater_than(0).at_most(1);
  b.add("w-fail", w_fail, "reward penalty per late or dropped query (success = +1)").at_least(0);
}

void Config::validate(int num_agents) const {
  check_declared(*this);
  const std::size_t n = gpus.size();
  MARLSCHED_REQUIRE(n > 0, "--edge-gpus: at least one cluster is needed");
  MARLSCHED_REQUIRE(rates.size() == n, "--edge-rates has " << rates.size()
                                                           << " values but --edge-gpus has " << n
                                                           << " (one per cluster)");
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
  const std::size_t c = classes.size();
  MARLSCHED_REQUIRE(c > 0 && c <= 255, "--classes: 1 to 255 classes");
  auto per_class = [&](const std::vector<double>& v, const char* flag) {
    MARLSCHED_REQUIRE(v.size() == c,
                      "--" << flag << " has " << v.size() << " values but --classes has " << c);
  };
  per_class(deadline_ms, "deadline-ms");
  per_class(proc_ms, "proc-ms");
  per_class(cloud_proc_ms, "cloud-proc-ms");
  per_class(mix, "mix");
  MARLSCHED_REQUIRE(std::accumulate(mix.begin(), mix.end(), 0.0) > 0, "--mix must not be all zero");
  for (double r : rates) {
    const double per_interval = r / 1000.0 * decision_ms * std::max(1.0, burst_factor);
    MARLSCHED_REQUIRE(per_interval <= 1e6, "--edge-rates "
                                               << r << "/s over --decision-ms " << decision_ms
                                               << " (x --burst-factor " << burst_factor
                                               << ") means " << per_interval
                                               << " queries per interval at one cluster; the env "
                                                  "simulates each query and allows at most 1e6");
  }
  MARLSCHED_REQUIRE(!shares.empty(), "--shares needs at least one value");
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

}  // namespace marlsched::aset
