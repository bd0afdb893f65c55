#include "envs/geodc/geodc.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include "core/csv.hpp"
#include "core/error.hpp"
#include "core/serialize.hpp"

namespace marlsched::geodc {

void Config::bind(OptionBinder& b) {
  b.group("Env: geo-distributed data centers (geodc)");
  b.add("sites", sites, "grid zone of each data center, in agent order");
  b.add("regions", regions, "macro-region of each site: sets transfer throughput")
      .one_of({"US", "EU", "AP", "SA"})
      .elements_of(sites, "site");
  b.add("utc-offsets", utc_offsets,
        "local time offset of each site in hours (arrival diurnal shape)")
      .in(-12, 14)
      .elements_of(sites, "site");  // the world's time zones run from UTC-12 to UTC+14
  // Physical ranges (docs/envs/geodc.md, "Ranges"): the largest AI data centers hold about
  // 1e5 GPUs; PUE runs from 1 (ideal) to about 3; each arrival is simulated as a job.
  b.add("gpus", gpus, "GPU capacity of each site").in(1, kMaxGpus).elements_of(sites, "site");
  b.add("pue", pue, "power usage effectiveness of each site").in(1, 5).elements_of(sites, "site");
  b.add("arrival-rates", arrival_rates,
        "mean job arrivals per hour at each site (each job is simulated)")
      .in(0, kMaxArrivalRate)
      .elements_of(sites, "site");
  b.add("replicate-sites", replicate_sites,
        "cycle the site lists when the run has more agents than sites");
  b.add("slot-minutes", slot_minutes, "length of a decision slot in minutes (dividing 60)");
  b.add("episode-slots", episode_slots, "slots per episode").in(1, 100000);
  b.add("idle-watts", idle_watts, "power of an idle GPU (W)").in(0, 1e4);
  b.add("busy-watts", busy_watts,
        "power of a busy GPU (W; at least --idle-watts) for gan-ft, mlm-ft, sd-ft jobs")
      .in(0, 1e4);
  b.add("transfer-kwh-per-gb", transfer_kwh_per_gb, "network energy per GB forwarded").in(0, 100);
  b.add("workload", workload, "job source").one_of({"synthetic", "alibaba"});
  b.add("workload-file", workload_file, "pai_task_table CSV (cluster-trace-gpu-v2020) for alibaba");
  b.add("type-mix", type_mix, "probabilities of gan-ft, mlm-ft, sd-ft jobs").at_least(0);
  b.add("slack-tiers", slack_tiers,
        "deadline slack multipliers κ (deadline = arrival + κ·duration)")
      .at_least(1);
  b.add("slack-probs", slack_probs, "probability of each slack tier").at_least(0);
  b.add("diurnal-amplitude", diurnal_amplitude, "relative amplitude of the daily arrival cycle")
      .in(0, 1);
  b.add("diurnal-peak-hour", diurnal_peak_hour, "local hour of peak arrivals")
      .at_least(0)
      .less_than(24);
  b.add("max-queue", max_queue, "queue capacity per site; arrivals beyond it are dropped")
      .in(1, 1000000);
  b.add("max-hops", max_hops, "how many times a job may be forwarded").in(0, 1000);
  b.add("site-neighbours", neighbours,
        "forwarding targets per site: 0 = every site (2N actions); K = the site itself and its K "
        "ring neighbours i+1, i-1, i+2, ... (2(K+1) actions, independent of the site count)")
      .at_least(0);
  b.add("action-classes", action_classes,
        "decisions per job class: none (one (mode, target) for the queue), type (one per job "
        "type: gan-ft, mlm-ft, sd-ft) or slack (one per slack left: under 1 h, 1-4 h, more); "
        "with classes an action is one (mode, target) per class, (2T)^3 actions")
      .one_of({"none", "type", "slack"});
  b.add("carbon-files", carbon_files, "Electricity Maps hourly CSV per site (default: synthetic)");
  b.add("price-files", price_files, "hourly price CSV per site (default: synthetic)");
  b.choice("carbon-column", carbon_column,
           {{"lca", CarbonColumn::kLifecycle}, {"direct", CarbonColumn::kDirect}},
           "carbon intensity column");
  b.add("fx", fx,
        "exchange rates to USD, CUR=rate; they override or add to the built-in 2023 means "
        "(docs/envs/geodc.md lists them)");
  b.add("trace-repair", trace_repair,
        "repairs of real trace files, any of drop-duplicates (a repeated hour with the same "
        "value), average-duplicates (repeated with other values: their mean), fill-gaps (one "
        "missing hour: the mean of its neighbours); none: refuse them");
  b.add("trace-start", trace_start,
        "time that episodes' start offsets count from (ISO 8601; UTC unless it has an offset)");
  b.add("trace-days", trace_days, "episodes start uniformly within this many days of trace-start")
      .in(1, 36600);
  b.add("trace-seed", trace_seed, "seed of the synthetic traces (the data, not the run)");
  b.add("max-carbon", max_carbon,
        "largest carbon intensity a trace may hold (gCO2eq/kWh); larger values are refused as a "
        "unit or file error")
      .positive();
  b.add("max-price", max_price,
        "largest price magnitude a trace may hold (USD/MWh, after --fx); larger values are "
        "refused as a unit or file error")
      .positive();
  // Rewards are float32 in the learners and trajectories: a weight that scales an episode's
  // hundreds of GPU-hours, dollars or kilograms beyond float range is refused here, not found as
  // an infinite reward later.
  b.add("w-work", w_work, "reward per GPU-hour completed within deadline").in(-1e6, 1e6);
  b.add("w-util", w_util, "reward per unit GPU utilisation").in(-1e6, 1e6);
  b.add("w-cost", w_cost, "penalty per USD of energy").in(-1e6, 1e6);
  b.add("w-carbon", w_carbon, "penalty per kg CO2eq").in(-1e6, 1e6);
  b.add("w-sla", w_sla, "penalty per SLA violation").in(-1e6, 1e6);
}

namespace {
const char* kRegions[] = {"US", "EU", "AP", "SA"};
// Inter-region throughput (Mbps) and RTT (ms): AWS measurements of Persico et al. (GLOBECOM
// 2016) as used by Green-DCC's network_delay.py. Pairs the source does not give (AP->US, EU<->AP,
// EU->SA) take the reverse or the nearest given value. Same region: 1 Gbps, no RTT.
const double kMbps[4][4] = {
    {1000, 160, 50, 100}, {160, 1000, 50, 75}, {50, 50, 1000, 45}, {90, 75, 40, 1000}};
const double kRttMs[4][4] = {
    {0, 70, 240, 120}, {70, 0, 190, 180}, {240, 190, 0, 350}, {120, 180, 350, 0}};

/// The built-in rates with --fx's entries over them.
std::map<std::string, double> parse_fx(const std::vector<std::string>& fx) {
  std::map<std::string, double> out = builtin_fx();
  for (const auto& s : fx) {
    const auto eq = s.find('=');
    MARLSCHED_REQUIRE(eq != std::string::npos && eq > 0,
                      "--fx: expected CUR=rate, got '" << s << "'");
    double v = 0;
    try {
      v = std::stod(s.substr(eq + 1));
    } catch (...) {
      MARLSCHED_THROW(ConfigError, "--fx: bad rate in '" << s << "'");
    }
    MARLSCHED_REQUIRE(v > 0 && std::isfinite(v), "--fx: rate must be positive in '" << s << "'");
    out[s.substr(0, eq)] = v;
  }
  return out;
}

template <class T>
void require_per_site(const std::vector<T>& v, std::size_t n, const char* flag) {
  MARLSCHED_REQUIRE(v.size() == n, "--" << flag << " has " << v.size() << " values but --sites has "
                                        << n << " (one per site)");
}

}  // namespace

int region_index(const std::string& r) {
  for (int i = 0; i < 4; ++i)
    if (r == kRegions[i]) return i;
  return -1;
}

double region_mbps(int from, int to) {
  return kMbps[from][to];
}

double region_rtt_ms(int from, int to) {
  return kRttMs[from][to];
}

std::int64_t trace_start_hour(const Config& c) {
  std::int64_t s = 0;
  MARLSCHED_REQUIRE(csv::parse_datetime(c.trace_start, s),
                    "--trace-start: expected an ISO 8601 time such as '2023-01-01 00:00' or "
                    "'2023-01-01T00:00-06:00', got '"
                        << c.trace_start << "'");
  return s / 3600;
}

namespace {

/// A trace file must hold the hour that episodes count from, at least one whole episode, and
/// every hour an episode may start at (--trace-days from --trace-start); an episode that runs
/// past the file's end continues from its first hour.
void check_coverage(const HourlySeries& s, const std::string& path, std::int64_t t0,
                    int episode_hours, int trace_days) {
  const auto n = static_cast<std::int64_t>(s.values.size());
  if (t0 < s.start_hour || t0 >= s.start_hour + n) {
    // A file that starts a few hours after --trace-start is often one whose clock is local
    // time: say how its timestamps were read, so that the user fixes the clock, not the data.
    std::string clock;
    if (t0 < s.start_hour && s.start_hour - t0 < 24) {
      clock = s.has_offset && s.offset_minutes != 0
                  ? ". Its timestamps are local time (" + csv::format_utc_offset(s.offset_minutes) +
                        "): its first, '" + s.first_stamp + "', is " +
                        csv::format_datetime(s.start_hour * 3600) + " UTC"
                  : ". Its timestamps are read as UTC" +
                        std::string(s.has_offset ? "" : " (they carry no offset)") +
                        "; if the file is in local time, write the offsets into its timestamps "
                        "(ISO 8601, e.g. '2023-01-01 00:00:00-06:00')";
      clock += "; or start at --trace-start '" + csv::format_datetime(s.start_hour * 3600) +
               "' (UTC), the first hour it covers";
    }
    MARLSCHED_THROW(InputError, path << " covers " << csv::format_datetime(s.start_hour * 3600)
                                     << " to "
                                     << csv::format_datetime((s.start_hour + n - 1) * 3600)
                                     << " UTC; --trace-start " << csv::format_datetime(t0 * 3600)
                                     << " UTC is outside it" << clock);
  }
  if (n < episode_hours)
    MARLSCHED_THROW(InputError, path << " holds " << n << " hours, shorter than one episode ("
                                     << episode_hours
                                     << " hours: --episode-slots x --slot-minutes)");
  // Episodes start within --trace-days of --trace-start: every start must lie in the file (an
  // episode that runs past the file's last hour continues from its first, as a year wraps to
  // its own January; a start beyond it would silently reuse data from elsewhere).
  const std::int64_t last_start = t0 + static_cast<std::int64_t>(trace_days) * 24 - 1;
  if (last_start >= s.start_hour + n)
    MARLSCHED_THROW(InputError,
                    path << " ends at " << csv::format_datetime((s.start_hour + n - 1) * 3600)
                         << ", but --trace-days " << trace_days << " from --trace-start "
                         << csv::format_datetime(t0 * 3600) << " starts episodes up to "
                         << csv::format_datetime(last_start * 3600) << ": give --trace-days "
                         << (s.start_hour + n - t0) / 24 << " or less");
}
/// Every value of a trace file lies within ±`limit` (issue 42): a value beyond it is a unit or
/// file error that would train to nonsense rewards; refused with its file and line.
void check_range(const HourlySeries& s, double limit, const char* what, const char* unit,
                 const char* flag) {
  for (std::size_t i = 0; i < s.values.size(); ++i)
    if (std::abs(s.values[i]) > limit) {
      std::ostringstream os;
      os << s.source;
      if (i < s.lines.size()) os << ":" << s.lines[i];
      os << ": " << s.values[i] << " " << unit << " is beyond the plausible range of " << what
         << " (" << flag << " " << limit << "): a unit or file error? (raise " << flag
         << " if the scenario means it)";
      MARLSCHED_THROW(InputError, os.str());
    }
}

}  // namespace

void Config::keep_sites(std::size_t n) {
  auto keep = [n](auto& v) {
    if (v.size() > n) v.resize(n);
  };
  keep(sites);
  keep(regions);
  keep(utc_offsets);
  keep(gpus);
  keep(pue);
  keep(arrival_rates);
  keep(carbon_files);
  keep(price_files);
}

void Config::validate(int num_agents) const {
  check_declared(*this);
  const std::size_t n = sites.size();
  MARLSCHED_REQUIRE(n > 0, "--sites: at least one data center is needed");
  require_per_site(regions, n, "regions");
  require_per_site(utc_offsets, n, "utc-offsets");
  require_per_site(gpus, n, "gpus");
  require_per_site(pue, n, "pue");
  require_per_site(arrival_rates, n, "arrival-rates");
  if (replicate_sites) {
    // Cycling never drops a site: with fewer agents than sites the run would silently leave
    // zones out while config.toml still lists them.
    MARLSCHED_REQUIRE(static_cast<std::size_t>(num_agents) >= n,
                      "--replicate-sites cycles "
                          << n << " sites over the run's agents, but the run has only "
                          << num_agents
                          << " agents (ranks x agents-per-rank), which would drop a site; list "
                             "at most "
                          << num_agents << " sites or run more agents");
  } else {
    MARLSCHED_REQUIRE(static_cast<std::size_t>(num_agents) == n,
                      "the config defines "
                          << n << " data centers but the run has " << num_agents
                          << " agents (ranks x agents-per-rank); give one site per "
                             "agent or --replicate-sites");
  }
  MARLSCHED_REQUIRE(slot_minutes > 0 && 60 % slot_minutes == 0,
                    "--slot-minutes must divide 60, got " << slot_minutes);
  MARLSCHED_REQUIRE(busy_watts.size() == kNumJobTypes,
                    "--busy-watts needs " << kNumJobTypes << " values (gan-ft, mlm-ft, sd-ft)");
  for (double w : busy_watts)
    MARLSCHED_REQUIRE(w >= idle_watts, "--busy-watts values must be at least --idle-watts ("
                                           << idle_watts << "), got " << w);
  MARLSCHED_REQUIRE(workload != "alibaba" || !workload_file.empty(),
                    "--workload alibaba needs --workload-file (a pai_task_table CSV)");
  MARLSCHED_REQUIRE(workload == "alibaba" || workload_file.empty(),
                    "--workload-file is read only with --workload alibaba (the workload is "
                        << workload << "): give --workload alibaba, or leave the file out");
  auto check_probs = [](const std::vector<double>& p, std::size_t k, const char* flag) {
    MARLSCHED_REQUIRE(p.size() == k, "--" << flag << " needs " << k << " values, got " << p.size());
    double s = 0;
    for (double v : p) s += v;
    // Probabilities, not weights: a mix that does not sum to 1 is a typo more often than not.
    MARLSCHED_REQUIRE(std::abs(s - 1) <= 1e-6,
                      "--" << flag << " are probabilities and must sum to 1, got " << s);
  };
  check_probs(type_mix, kNumJobTypes, "type-mix");
  MARLSCHED_REQUIRE(!slack_tiers.empty(), "--slack-tiers needs at least one value");
  check_probs(slack_probs, slack_tiers.size(), "slack-probs");
  // Every site is every agent's target with --site-neighbours 0: the action space and the spec
  // grow with the square of the agent count.
  MARLSCHED_REQUIRE(neighbours > 0 || num_agents <= kMaxAllTargets,
                    num_agents << " agents with --site-neighbours 0 (every site a target) make "
                               << 2 * static_cast<long long>(num_agents)
                               << " actions per agent; above " << kMaxAllTargets
                               << " agents give --site-neighbours K (2(K+1) actions)");
  MARLSCHED_REQUIRE(neighbours < std::max(num_agents, 1), "--site-neighbours must be in [0, "
                                                              << std::max(num_agents, 1) - 1
                                                              << "] with " << num_agents
                                                              << " agents, got " << neighbours);
  if (action_classes != "none") {
    const long long T = neighbours > 0 ? neighbours + 1 : num_agents;
    MARLSCHED_REQUIRE(8 * T * T * T <= kMaxClassActions,
                      "--action-classes " << action_classes << " with " << T
                                          << " targets per site makes " << 8 * T * T * T
                                          << " actions per agent (one (mode, target) per class); "
                                             "at most "
                                          << kMaxClassActions
                                          << ": give --site-neighbours K with K <= 19");
  }
  MARLSCHED_REQUIRE(
      carbon_files.empty() || carbon_files.size() == n,
      "--carbon-files needs one file per site (" << n << "), got " << carbon_files.size());
  MARLSCHED_REQUIRE(
      price_files.empty() || price_files.size() == n,
      "--price-files needs one file per site (" << n << "), got " << price_files.size());
  parse_fx(fx);
  TraceRepair::parse(trace_repair);
  trace_start_hour(*this);
}

EnvSpec make_spec(const Config& cfg, int num_agents) {
  EnvSpec s;
  s.name = "geodc";
  s.obs_fields = {"free_gpu_frac", "carbon",      "price",      "queue_load", "utilization",
                  "queue_fill",    "urgent_frac", "mean_slack", "inbound",    "carbon_trend",
                  "price_trend",   "hour_sin",    "hour_cos",   "progress"};
  s.num_public = 4;
  s.privileged_fields = {"arrivals_1h", "arrivals_4h", "arrivals_8h", "carbon_12h", "price_12h"};
  // Target t's name: the site itself when every site is a target (the same for every agent),
  // else its place in the agent's neighbourhood.
  const int T = cfg.neighbours == 0 ? num_agents : cfg.neighbours + 1;
  auto target_name = [&](int t) {
    if (cfg.neighbours == 0)
      return std::to_string(t) + ":" + cfg.sites[static_cast<std::size_t>(cfg.site_of(t))];
    return t == 0 ? std::string("self") : "nbr" + std::to_string(t);
  };
  std::vector<std::string> decisions;
  for (const char* mode : {"run-fit/overflow->", "defer/send->"})
    for (int t = 0; t < T; ++t) decisions.push_back(mode + target_name(t));
  const int C = cfg.num_action_classes();
  if (C == 1) {
    s.action_names = decisions;
  } else {
    // One (mode, target) head per job class, class 0 the most significant.
    static const char* kTypeNames[] = {"gan", "mlm", "sd"};
    static const char* kSlackNames[] = {"slack<1h", "slack1-4h", "slack>4h"};
    const char** names = cfg.action_classes == "type" ? kTypeNames : kSlackNames;
    s.action_heads.assign(static_cast<std::size_t>(C), 2 * T);
    int total = 1;
    for (int c = 0; c < C; ++c) total *= 2 * T;
    std::vector<int> d(static_cast<std::size_t>(C));
    for (int a = 0; a < total; ++a) {
      decode_action(a, C, T, d.data());
      std::string name;
      for (int c = 0; c < C; ++c)
        name += (c ? " " : "") + std::string(names[c]) + ":" +
                decisions[static_cast<std::size_t>(d[static_cast<std::size_t>(c)])];
      s.action_names.push_back(std::move(name));
    }
  }
  // Each (agent, target) pair's transfer time in minutes per GB (0 for the agent itself).
  s.target_feature_names = {"transfer_min_per_gb"};
  for (int i = 0; i < num_agents; ++i) {
    s.targets.push_back(targets_of(i, num_agents, cfg.neighbours));
    const int r0 = region_index(cfg.regions[static_cast<std::size_t>(cfg.site_of(i))]);
    std::vector<float> f;
    for (int j : s.targets.back()) {
      const int r1 = region_index(cfg.regions[static_cast<std::size_t>(cfg.site_of(j))]);
      f.push_back(j == i ? 0.f : static_cast<float>(8000.0 / region_mbps(r0, r1) / 60.0));
    }
    s.target_features.push_back(std::move(f));
  }
  s.reward_components = {"goodput_gpu_h",   "utilization", "energy_kwh",
                         "energy_cost_usd", "carbon_kg",   "sla_violations"};
  s.mean_components = {"utilization"};  // each site's busy share of its GPUs
  s.episode_length = cfg.episode_slots;
  return s;
}

int Config::action_class(const Job& job, int slot) const {
  if (action_classes == "none") return 0;
  if (action_classes == "type")
    return std::clamp(static_cast<int>(job.type), 0, kNumJobClasses - 1);
  // Slack left now: the slots by which its start may still slip (0: it must start now).
  const double hours = std::max(0, job.deadline - job.remaining + 1 - slot) * slot_hours();
  return hours < 1.0 ? 0 : hours < 4.0 ? 1 : 2;
}

void decode_action(int action, int heads, int T, int* decisions) {
  for (int c = heads - 1; c >= 0; --c) {
    decisions[c] = action % (2 * T);
    action /= 2 * T;
  }
}

int encode_action(const int* decisions, int heads, int T) {
  int a = 0;
  for (int c = 0; c < heads; ++c) a = a * 2 * T + decisions[c];
  return a;
}

std::vector<int> targets_of(int agent, int num_agents, int neighbours) {
  std::vector<int> t;
  if (neighbours == 0) {
    for (int j = 0; j < num_agents; ++j) t.push_back(j);
    return t;
  }
  t.push_back(agent);
  for (int d = 1; static_cast<int>(t.size()) <= neighbours; ++d)
    for (int j : {(agent + d) % num_agents, ((agent - d) % num_agents + num_agents) % num_agents})
      if (static_cast<int>(t.size()) <= neighbours && std::find(t.begin(), t.end(), j) == t.end())
        t.push_back(j);
  return t;
}

std::vector<std::shared_ptr<const SiteData>> load_sites(const Config& cfg, int num_agents) {
  const auto fx = parse_fx(cfg.fx);
  const auto repair = TraceRepair::parse(cfg.trace_repair);
  const std::int64_t t0 = trace_start_hour(cfg);
  const int episode_hours = (cfg.episode_slots * cfg.slot_minutes + 59) / 60;
  const int hours = cfg.trace_days * 24 + episode_hours + 48;
  std::vector<TraceTask> all;
  if (cfg.workload == "alibaba") {
    all = load_pai_task_table(cfg.workload_file);
    if (all.empty())
      MARLSCHED_THROW(InputError, cfg.workload_file
                                      << ": no usable task (status Terminated with plan_gpu > 0)");
  }
  // Traces are loaded once per site; agents of one site share them (with replicated sites
  // several agents map to one site). Trace workloads give each agent its own task list.
  std::vector<std::shared_ptr<const SiteData>> per_site(cfg.sites.size());
  auto site_traces = [&](std::size_t si) -> const std::shared_ptr<const SiteData>& {
    if (!per_site[si]) {
      auto d = std::make_shared<SiteData>();
      if (cfg.carbon_files.empty())
        d->carbon =
            synth_carbon(zone_profile(cfg.sites[si]), t0, hours, derive_seed(cfg.trace_seed, {si}));
      else {
        d->carbon = load_carbon_csv(cfg.carbon_files[si], cfg.carbon_column, repair);
        check_coverage(d->carbon, cfg.carbon_files[si], t0, episode_hours, cfg.trace_days);
        check_range(d->carbon, cfg.max_carbon, "carbon intensities", "gCO2eq/kWh", "--max-carbon");
      }
      if (cfg.price_files.empty())
        d->price =
            synth_price(zone_profile(cfg.sites[si]), t0, hours, derive_seed(cfg.trace_seed, {si}));
      else {
        d->price = load_price_csv(cfg.price_files[si], fx, repair);
        check_coverage(d->price, cfg.price_files[si], t0, episode_hours, cfg.trace_days);
        check_range(d->price, cfg.max_price, "prices", "USD/MWh", "--max-price");
      }
      per_site[si] = d;
    }
    return per_site[si];
  };
  std::vector<std::shared_ptr<const SiteData>> out;
  for (int a = 0; a < num_agents; ++a) {
    const auto& traces = site_traces(static_cast<std::size_t>(cfg.site_of(a)));
    if (cfg.workload != "alibaba") {
      out.push_back(traces);
      continue;
    }
    // Tasks go to agents by a stable hash of the job name; the trace clock wraps.
    auto d = std::make_shared<SiteData>(*traces);
    d->trace_t0 = all.front().start_time;
    d->trace_span = std::max<std::int64_t>(1, all.back().start_time - d->trace_t0 + 1);
    for (const auto& t : all)
      if (static_cast<int>(std::hash<std::string>{}(t.job_name) %
                           static_cast<std::size_t>(num_agents)) == a)
        d->tasks.push_back(t);
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<std::string> input_notes(const Config& cfg,
                                     const std::vector<std::shared_ptr<const SiteData>>& sites) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (std::size_t a = 0; a < sites.size(); ++a) {
    const std::string& name = cfg.sites[static_cast<std::size_t>(cfg.site_of(static_cast<int>(a)))];
    for (const HourlySeries* s : {&sites[a]->carbon, &sites[a]->price})
      if (!s->source.empty() && !s->zone.empty() && s->zone != name &&
          seen.insert("zone:" + s->source).second)
        out.push_back("warning: " + s->source + " holds zone " + s->zone +
                      ", but it is given for site " + name +
                      " (the trace files follow the order of --sites)");
  }
  for (const auto& site : sites)
    for (const HourlySeries* s : {&site->carbon, &site->price}) {
      if (s->source.empty() || !seen.insert(s->source).second) continue;
      if (!s->repairs.empty()) out.push_back(s->source + ": --trace-repair " + s->repairs);
      if (s->currency.empty() || s->currency == "USD") continue;
      const bool given = std::any_of(cfg.fx.begin(), cfg.fx.end(), [&](const std::string& e) {
        return e.rfind(s->currency + "=", 0) == 0;
      });
      std::ostringstream o;
      o << s->source << ": prices in " << s->currency << "/MWh, converted at " << s->to_usd
        << " USD per " << s->currency
        << (given ? " (--fx)" : " (built-in 2023 mean; --fx " + s->currency + "=RATE to change)");
      out.push_back(o.str());
    }
  return out;
}

}  // namespace marlsched::geodc
