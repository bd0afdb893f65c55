#include "envs/lstcb/lstcb.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "core/csv.hpp"
#include "core/error.hpp"
#include "core/latency_histogram.hpp"
#include "core/serialize.hpp"

namespace marlsched::lstcb {

namespace {
const char* kSource =
    "latency: weishengchong/Embedded-Deep-Learning README (Caffe forward pass, mean of 100 "
    "iterations), batch 1 and 64 fitted as a + c*b; power: idle and board power from the vendor "
    "specifications, busy power p_static + p_dyn*f^3 over the relative clock f (DVFS, as in "
    "Zeus) [assumption]";
}  // namespace

const std::vector<Profile>& builtin_profiles() {
  // Titan X (Maxwell, 250 W board power, about 15 W idle); Jetson TX1 (FP16, about 10 W).
  static const std::vector<Profile> p = {
      {"googlenet", "titan-x", 6.6317, 0.97143, 15, 60, 190, kSource},
      {"alexnet", "titan-x", 2.1683, 0.33175, 15, 60, 190, kSource},
      {"vgg16", "titan-x", 7.3048, 4.69524, 15, 60, 190, kSource},
      {"googlenet", "jetson-tx1", 10.7556, 12.94444, 1.5, 3, 7, kSource},
      {"alexnet", "jetson-tx1", 11.6317, 3.76825, 1.5, 3, 7, kSource},
  };
  return p;
}

std::string profiles_csv(const std::vector<Profile>& ps) {
  std::ostringstream os;
  os << "model,gpu,a_ms,c_ms_per_item,p_idle_w,p_static_w,p_dyn_w,source\n";
  os.precision(10);
  for (const auto& p : ps)
    os << p.model << ',' << p.gpu << ',' << p.a_ms << ',' << p.c_ms << ',' << p.p_idle << ','
       << p.p_static << ',' << p.p_dyn << ",\"" << p.source << "\"\n";
  return os.str();
}

std::vector<Profile> load_profiles(const std::string& path) {
  const auto t = csv::read(path, true);
  const std::vector<std::string> want = {"model",    "gpu",        "a_ms",    "c_ms_per_item",
                                         "p_idle_w", "p_static_w", "p_dyn_w", "source"};
  MARLSCHED_REQUIRE_INPUT(t.header == want, path << ": expected the header "
                                                 << "model,gpu,a_ms,c_ms_per_item,p_idle_w,"
                                                    "p_static_w,p_dyn_w,source");
  std::vector<Profile> out;
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    MARLSCHED_REQUIRE_INPUT(t.rows[r].size() == want.size(),
                            path << ":" << t.line_numbers[r] << ": expected " << want.size()
                                 << " fields, got " << t.rows[r].size());
    Profile p{t.rows[r][0],
              t.rows[r][1],
              csv::parse_double(t, r, 2),
              csv::parse_double(t, r, 3),
              csv::parse_double(t, r, 4),
              csv::parse_double(t, r, 5),
              csv::parse_double(t, r, 6),
              t.rows[r][7]};
    MARLSCHED_REQUIRE_INPUT(
        p.a_ms >= 0 && p.c_ms > 0 && p.p_idle >= 0 && p.p_static >= 0 && p.p_dyn >= 0,
        path << ":" << t.line_numbers[r]
             << ": latencies and powers must be >= 0 (c_ms_per_item > 0)");
    out.push_back(p);
  }
  MARLSCHED_REQUIRE_INPUT(!out.empty(), path << ": no profile rows");
  return out;
}

Profile select_profile(const Config& cfg) {
  const auto ps = cfg.profile_file.empty() ? builtin_profiles() : load_profiles(cfg.profile_file);
  std::string known;
  for (const auto& p : ps) {
    if (p.model + "/" + p.gpu == cfg.profile) return p;
    known += (known.empty() ? "" : ", ") + p.model + "/" + p.gpu;
  }
  MARLSCHED_THROW(ConfigError,
                  "--profile: no batch profile '" << cfg.profile << "' (known: " << known << ")");
}

void Config::bind(OptionBinder& b) {
  b.group("Env: cooperative batching for edge inference (lstcb)");
  b.add("batch-rates", rates, "peak request arrivals per second at each edge server").at_least(0);
  b.add("batch-replicate", replicate, "cycle --batch-rates for more agents");
  b.add("profile", profile, "model/gpu batch profile (see data/lstcb/batch_profiles.csv)");
  b.add("profile-file", profile_file, "a batch profile CSV (default: the built-in table)");
  b.add("slo-ms", slo_ms, "latency SLO of a request (ms)").positive();
  b.add("slo-guard-ms", slo_guard_ms,
        "safety margin of the slack mode: it starts a batch so that it ends by slo - guard");
  b.add("link-ms", link_ms, "one-way latency between neighbouring servers (ms)").positive();
  b.add("batch-neighbours", neighbours, "cooperating neighbours per server (ring order)")
      .at_least(0);
  b.add("max-batches", max_batches, "maximum batch sizes the long-timescale decision chooses from")
      .in(1, 4096);
  b.add("freqs", freqs, "relative GPU clocks the long-timescale decision chooses from")
      .greater_than(0)
      .at_most(1);
  b.add("steer", steer, "shares of new requests a server may steer to its least loaded neighbour")
      .in(0, 1);
  b.add("timeout-ms", timeout_ms, "queue delay after which the timeout mode dispatches")
      .at_least(0);
  b.add("slot-ms", slot_ms, "short-timescale decision slot (ms)").positive();
  b.add("window-slots", window_slots, "slots per long-timescale window").at_least(1);
  b.add("episode-windows", episode_windows, "windows per episode").at_least(1);
  b.add("levels", levels, "arrival rate levels (x peak); one holds per window").at_least(0);
  b.add("level-switch", level_switch, "per-window probability that the rate level changes")
      .in(0, 1);
  b.add("bursty", bursty, "short bursts on top of the level (Markov-modulated)");
  b.add("batch-burst-factor", burst_factor, "rate multiplier during a burst").at_least(0);
  b.add("batch-burst-start", burst_start, "per-slot probability that a burst starts").in(0, 1);
  b.add("batch-burst-end", burst_end, "per-slot probability that a burst ends").in(0, 1);
  b.add("w-energy", w_energy, "reward penalty per joule").at_least(0);
  b.add("w-slo", w_slo, "reward penalty per SLO violation").at_least(0);
}

void Config::validate(int num_agents) const {
  check_declared(*this);
  MARLSCHED_REQUIRE(!rates.empty(), "--batch-rates: at least one server is needed");
  if (replicate)
    MARLSCHED_REQUIRE(static_cast<std::size_t>(num_agents) >= rates.size(),
                      "--batch-replicate cycles "
                          << rates.size() << " servers over the run's agents, but the run has only "
                          << num_agents
                          << " agents (ranks x agents-per-rank), which would drop a server; list "
                             "at most "
                          << num_agents << " --batch-rates or run more agents");
  else
    MARLSCHED_REQUIRE(static_cast<std::size_t>(num_agents) == rates.size(),
                      "the config defines " << rates.size() << " edge servers but the run has "
                                            << num_agents
                                            << " agents (ranks x agents-per-rank); give one "
                                               "--batch-rates entry per agent or "
                                               "--batch-replicate");
  select_profile(*this);
  MARLSCHED_REQUIRE(slo_guard_ms >= 0 && slo_guard_ms < slo_ms,
                    "--slo-guard-ms must be in [0, --slo-ms)");
  MARLSCHED_REQUIRE(!max_batches.empty(), "--max-batches needs at least one value");
  MARLSCHED_REQUIRE(!freqs.empty(), "--freqs needs at least one value");
  MARLSCHED_REQUIRE(!steer.empty(), "--steer needs at least one value");
  MARLSCHED_REQUIRE(!levels.empty(), "--levels needs at least one value");
  MARLSCHED_REQUIRE(std::ceil(slot_ms / link_ms) <= 1000,
                    "--slot-ms / --link-ms needs more than 1000 exchange windows");
}

}  // namespace marlsched::lstcb
