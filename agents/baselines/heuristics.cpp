#include "agents/baselines/heuristics.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "core/error.hpp"

namespace marlsched {

namespace {

enum class Kind {
  kRandom,
  kRoundRobin,
  kLocal,
  kLeastLoaded,
  kLowestCarbon,
  kLowestPrice,
  kWaitAwhile,
  kGreenFit,
  kFixedOverflow
};

/// The deferral threshold of `wait-awhile` when its name gives none: the best of the grid
/// {0, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3} on training seeds (bench/tune_deferral.sh; evaluation
/// seeds were not used; docs/results.md has the table).
constexpr double kWaitAwhileThreshold = 0.3;
/// The free-GPU share that `green-fit` asks of an overflow target when its name gives none: the
/// best of the grid {0, 0.05, 0.1, 0.2, 0.3} on training seeds (bench/tune_deferral.sh).
constexpr double kGreenFitMinFree = 0.05;
/// The site that `fixed-overflow` sends to when its name gives none: the best agent index on
/// training seeds (bench/tune_deferral.sh; for the default sites 0, US-CAL-CISO: the largest
/// site, with the lowest PUE and carbon intensity).
constexpr double kFixedOverflowSite = 0;

class Heuristic final : public Policy {
 public:
  Heuristic(const std::string& name, Kind kind, const EnvSpec& spec, std::uint64_t seed,
            double threshold)
      : name_(name),
        kind_(kind),
        rng_(seed),
        threshold_(threshold),
        free_(spec.obs_index("free_gpu_frac")),
        carbon_(spec.obs_index("carbon")),
        price_(spec.obs_index("price")),
        carbon_trend_(kind == Kind::kWaitAwhile ? spec.obs_index("carbon_trend") : -1),
        // (threshold_ is green-fit's minimum free share, wait-awhile's deferral threshold)
        price_trend_(kind == Kind::kWaitAwhile ? spec.obs_index("price_trend") : -1) {}

  std::string name() const override { return name_; }

  // Every rule picks a (mode, target) of the agent's targets (EnvSpec::targets): mode 0 runs
  // what fits here and overflows the rest to the target, mode 1 defers and sends to it.
  void act(const PolicyInput& in, std::vector<int>& actions) override {
    const EnvSpec& spec = *in.spec;
    const int T = spec.num_targets();
    MARLSCHED_CHECK(T > 0 && spec.num_actions() == 2 * T,
                    "heuristics expect the geodc action layout (run or defer x targets)");
    actions.resize(static_cast<std::size_t>(in.copies * in.local_agents));
    for (int c = 0; c < in.copies; ++c) {
      const GlobalObs& g = in.global[static_cast<std::size_t>(c)];
      for (int k = 0; k < in.local_agents; ++k) {
        const int self = in.first_agent + k;
        const auto& tg = spec.targets[static_cast<std::size_t>(self)];
        const int me = static_cast<int>(std::find(tg.begin(), tg.end(), self) - tg.begin());
        auto obs = [&](int t) { return g.row(tg[static_cast<std::size_t>(t)]); };  // target t's
        // Least-loaded placement: run what fits here, overflow to the other target with the
        // most free GPUs.
        auto least_loaded = [&] {
          int best = me;
          float most = -1.f;
          for (int t = 0; t < T; ++t)
            if (t != me && obs(t)[free_] > most) {
              most = obs(t)[free_];
              best = t;
            }
          return best;
        };
        int a = me;
        switch (kind_) {
          case Kind::kRandom:
            a = static_cast<int>(rng_.below(static_cast<std::uint64_t>(2 * T)));
            break;
          case Kind::kRoundRobin: {
            const int t = (in.episode_step[static_cast<std::size_t>(c)] + self) % T;
            a = t == me ? me : T + t;
            break;
          }
          case Kind::kLocal:
            a = me;
            break;
          case Kind::kLeastLoaded:
            a = least_loaded();
            break;
          case Kind::kGreenFit: {
            // Run what fits here; overflow to the other target whose energy is cheapest in the
            // reward's terms among those with at least the threshold's share of GPUs free (else
            // the least-loaded one).
            a = least_loaded();
            double best = 0;
            bool found = false;
            for (int t = 0; t < T; ++t)
              if (t != me && obs(t)[free_] >= threshold_ &&
                  (!found || energy_weight(obs(t)) < best)) {
                best = energy_weight(obs(t));
                a = t;
                found = true;
              }
            break;
          }
          case Kind::kFixedOverflow: {
            // Run what fits here; overflow always to one chosen site (while it is a target and
            // not the site itself; else least-loaded): static spill-over routing.
            const auto it = std::find(tg.begin(), tg.end(), static_cast<int>(threshold_));
            const int t = static_cast<int>(it - tg.begin());
            a = it != tg.end() ? t : least_loaded();
            break;
          }
          case Kind::kWaitAwhile:
            // Wait (defer here: only jobs that must start now start) while the coming hours'
            // energy is cheaper in the reward's terms by more than the threshold; otherwise
            // least-loaded placement.
            a = defer_gain(obs(me)) > threshold_ ? T + me : least_loaded();
            break;
          case Kind::kLowestCarbon:
          case Kind::kLowestPrice: {
            const int f = kind_ == Kind::kLowestCarbon ? carbon_ : price_;
            int best = me;
            for (int t = 0; t < T; ++t)
              if (obs(t)[f] < obs(best)[f]) best = t;
            a = best == me ? me : T + best;
            break;
          }
        }
        actions[static_cast<std::size_t>(c * in.local_agents + k)] = a;
      }
    }
  }

 private:
  /// The relative saving of running in the next four hours instead of now: the energy's price in
  /// the reward's units (default weights: 1 per USD, 0.5 per kg CO2eq) now and over the next
  /// four hours, from the site's own price, carbon intensity and their trends (geodc scales
  /// price by 1/100 USD/MWh and carbon by 1/500 g/kWh: USD/kWh = 0.1 p, kg/kWh = 0.5 c).
  /// A site's energy price in the reward's units per kWh now (default weights, as defer_gain).
  double energy_weight(const float* o) const { return 0.1 * o[price_] + 0.25 * o[carbon_]; }

  double defer_gain(const float* own) const {
    const double usd = 0.1 * own[price_], kg = 0.5 * 0.5 * own[carbon_];
    const double now = usd + kg;
    const double later = usd * (1.0 + own[price_trend_]) + kg * (1.0 + own[carbon_trend_]);
    return now > 0 ? (now - later) / now : 0.0;
  }

  std::string name_;
  Kind kind_;
  Rng rng_;
  double threshold_;
  int free_, carbon_, price_, carbon_trend_, price_trend_;
};

const std::vector<std::string>& geodc_names() {
  static const std::vector<std::string> names = {"random",       "round-robin",   "local-only",
                                                 "least-loaded", "lowest-carbon", "lowest-price",
                                                 "wait-awhile",  "green-fit",     "fixed-overflow"};
  return names;
}

/// A name with a parameter, "wait-awhile:0.1": the base name and the value (NaN when none).
std::pair<std::string, double> split_parameter(const std::string& name) {
  const auto colon = name.find(':');
  if (colon == std::string::npos) return {name, std::nan("")};
  const std::string text = name.substr(colon + 1);
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  MARLSCHED_REQUIRE(
      !text.empty() && end == text.c_str() + text.size() && std::isfinite(v) && v >= 0,
      "baseline '" << name << "': the parameter after ':' must be a number >= 0");
  return {name.substr(0, colon), v};
}

std::unique_ptr<Policy> make_geodc(const std::string& name, const EnvSpec& spec,
                                   std::uint64_t seed) {
  static const Kind kinds[] = {Kind::kRandom,      Kind::kRoundRobin,   Kind::kLocal,
                               Kind::kLeastLoaded, Kind::kLowestCarbon, Kind::kLowestPrice,
                               Kind::kWaitAwhile,  Kind::kGreenFit,     Kind::kFixedOverflow};
  const auto [base, param] = split_parameter(name);
  const bool share = base == "wait-awhile" || base == "green-fit";
  MARLSCHED_REQUIRE(std::isnan(param) || share || base == "fixed-overflow",
                    "baseline '" << name
                                 << "': only wait-awhile, green-fit and fixed-overflow take a "
                                    "parameter");
  MARLSCHED_REQUIRE(std::isnan(param) || !share || param < 1,
                    "baseline '" << name << "': the threshold after ':' must be in [0, 1)");
  const int agents = static_cast<int>(spec.targets.size());
  MARLSCHED_REQUIRE(std::isnan(param) || base != "fixed-overflow" ||
                        (param == std::floor(param) && param < agents),
                    "baseline '" << name << "': the site after ':' must be an agent index in [0, "
                                 << agents << ")");
  const auto& names = geodc_names();
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == base)
      return std::make_unique<Heuristic>(name, kinds[i], spec, seed,
                                         !std::isnan(param)         ? param
                                         : base == "green-fit"      ? kGreenFitMinFree
                                         : base == "fixed-overflow" ? kFixedOverflowSite
                                                                    : kWaitAwhileThreshold);
  return nullptr;
}

struct BaselineSet {
  std::string env;
  const std::vector<std::string>& (*names)();
  std::unique_ptr<Policy> (*make)(const std::string&, const EnvSpec&, std::uint64_t);
};

const std::vector<BaselineSet>& baseline_table() {
  static const std::vector<BaselineSet> table = {
      {"geodc", geodc_names, make_geodc},
      {"aset", edge_heuristic_names, make_edge_heuristic},
      {"lstcb", batch_heuristic_names, make_batch_heuristic},
      {"coop", coop_heuristic_names, make_coop_heuristic}};
  return table;
}

}  // namespace

const std::vector<std::string>& heuristic_names(const std::string& env) {
  static const std::vector<std::string> all = [] {
    std::vector<std::string> v;
    for (const auto& set : baseline_table())
      for (const auto& n : set.names())
        if (std::find(v.begin(), v.end(), n) == v.end()) v.push_back(n);
    return v;
  }();
  if (env.empty()) return all;
  for (const auto& set : baseline_table())
    if (set.env == env) return set.names();
  static const std::vector<std::string> none;
  return none;
}

std::unique_ptr<Policy> make_heuristic(const std::string& name, const EnvSpec& spec,
                                       std::uint64_t seed, int rank) {
  const auto& names = heuristic_names(spec.name);
  const std::string base = spec.name == "geodc" ? split_parameter(name).first : name;
  if (std::find(names.begin(), names.end(), base) != names.end())
    for (const auto& set : baseline_table())
      if (set.env == spec.name)
        return set.make(name, spec, derive_seed(seed, {0xBA5E, static_cast<std::uint64_t>(rank)}));
  std::string known;
  for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
  MARLSCHED_THROW(ConfigError, "unknown baseline '" << name << "' for env " << spec.name
                                                    << " (known: " << known << ")");
}

}  // namespace marlsched
