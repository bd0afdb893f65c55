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

}  // namespace marlsched::aset
