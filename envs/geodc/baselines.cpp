/// \file baselines.cpp
/// The geodc heuristic baselines (listed in envs/baselines.hpp), its part of the env's row.

#include "envs/baselines.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "core/error.hpp"
#include "envs/geodc/mpc.hpp"

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
  kFixedOverflow,
  kGuardedOverflow
};

/// The deferral threshold of `wait-awhile` when its name gives none: the best of the grid
/// {0, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3} on training seeds (bench/tune_deferral.sh; evaluation
/// seeds were not used; docs/envs/geodc.md has the table).
constexpr double kWaitAwhileThreshold = 0.3;
/// The free-GPU share that `green-fit` asks of an overflow target when its name gives none: the
/// best of the grid {0, 0.05, 0.1, 0.2, 0.3} on training seeds (bench/tune_deferral.sh).
constexpr double kGreenFitMinFree = 0.05;
/// The site that `fixed-overflow` sends to when its name gives none: the best agent index on
/// training seeds (bench/tune_deferral.sh; for the default sites 0, US-CAL-CISO: the largest
/// site, with the lowest PUE and carbon intensity).
constexpr double kFixedOverflowSite = 0;
/// The queued demand per GPU of fixed-overflow's site above which `guarded-overflow` holds its
/// overflow at home: the best of the grid {0, 0.05, 0.1, 0.2, 0.3, 0.6, 1} on training seeds
/// (bench/tune_deferral.sh).
constexpr double kGuardedOverflowQueue = 0.1;

class Heuristic final : public Policy {
 public:
  Heuristic(const std::string& name, Kind kind, const EnvSpec& spec, std::uint64_t seed,
            double param)
      : name_(name),
        kind_(kind),
        stream_(seed),
        param_(param),
        free_(spec.obs_index("free_gpu_frac")),
        carbon_(spec.obs_index("carbon")),
        price_(spec.obs_index("price")),
        queue_(kind == Kind::kGuardedOverflow ? spec.obs_index("queue_load") : -1),
        carbon_trend_(kind == Kind::kWaitAwhile ? spec.obs_index("carbon_trend") : -1),
        price_trend_(kind == Kind::kWaitAwhile ? spec.obs_index("price_trend") : -1) {}

  std::string name() const override { return name_; }
  ActionLaw action_law() const override {
    return kind_ == Kind::kRandom ? ActionLaw::kUniform : ActionLaw::kDeterministic;
  }

  // Every rule picks a (mode, target) of the agent's targets (EnvSpec::targets): mode 0 runs
  // what fits here and overflows the rest to the target, mode 1 defers and sends to it. With job
  // classes (--action-classes) it takes that decision for every class; random draws over the
  // whole action space.
  void act(const PolicyInput& in, std::vector<int>& actions) override {
    const EnvSpec& spec = *in.spec;
    const int T = spec.num_targets(), C = spec.num_heads();
    MARLSCHED_CHECK(T > 0 && spec.num_modes() == 2,
                    "heuristics expect the geodc action layout (run or defer x targets)");
    int same[geodc::Config::kNumJobClasses];
    MARLSCHED_CHECK(C <= geodc::Config::kNumJobClasses, "geodc has at most 3 job classes");
    actions.resize(static_cast<std::size_t>(in.copies * in.local_agents));
    for (int c = 0; c < in.copies; ++c) {
      const GlobalObs& g = in.global[static_cast<std::size_t>(c)];
      for (int k = 0; k < in.local_agents; ++k) {
        const int self = in.first_agent + k;
        const auto& tg = spec.targets[static_cast<std::size_t>(self)];
        // The index among the targets of agent `site`, or -1 when it is not one.
        auto target_index = [&](int site) {
          const auto it = std::find(tg.begin(), tg.end(), site);
          return it == tg.end() ? -1 : static_cast<int>(it - tg.begin());
        };
        const int me = target_index(self);  // every agent is one of its own targets
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
            a = in.draw_below(c, self, stream_, spec.num_actions());
            actions[static_cast<std::size_t>(c * in.local_agents + k)] = a;
            continue;
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
              if (t != me && obs(t)[free_] >= param_ && (!found || energy_weight(obs(t)) < best)) {
                best = energy_weight(obs(t));
                a = t;
                found = true;
              }
            break;
          }
          case Kind::kFixedOverflow: {
            // Run what fits here; overflow always to one chosen site (while it is a target and
            // not the site itself; else least-loaded): static spill-over routing.
            const int t = target_index(static_cast<int>(param_));
            a = t >= 0 ? t : least_loaded();
            break;
          }
          case Kind::kGuardedOverflow: {
            // fixed-overflow with admission control: overflow to its site while that site's
            // queued demand per GPU is at most the threshold, else the jobs wait here.
            const int t = target_index(static_cast<int>(kFixedOverflowSite));
            a = t < 0 ? least_loaded() : obs(t)[queue_] <= param_ ? t : me;
            break;
          }
          case Kind::kWaitAwhile:
            // Wait (defer here: only jobs that must start now start) while the coming hours'
            // energy is cheaper in the reward's terms by more than the threshold; otherwise
            // least-loaded placement.
            a = defer_gain(obs(me)) > param_ ? T + me : least_loaded();
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
        std::fill(same, same + C, a);
        actions[static_cast<std::size_t>(c * in.local_agents + k)] =
            geodc::encode_action(same, C, T);
      }
    }
  }

 private:
  // Energy priced in the reward's terms with the default weights (1 per USD, 0.5 per kg CO2eq),
  // per kWh, from geodc's scaled fields (price / 100 USD/MWh: 0.1 p USD/kWh; carbon / 500 g/kWh:
  // 0.5 c kg/kWh, weighted 0.5).
  static constexpr double kPerPrice = 0.1, kPerCarbon = 0.25;

  /// A site's energy price in the reward's units per kWh now.
  double energy_weight(const float* o) const {
    return kPerPrice * o[price_] + kPerCarbon * o[carbon_];
  }

  /// The relative saving of running in the next four hours instead of now: energy_weight now and
  /// over the next four hours, from the site's own price, carbon intensity and their trends.
  double defer_gain(const float* own) const {
    const double usd = kPerPrice * own[price_], kg = kPerCarbon * own[carbon_];
    const double now = usd + kg;
    const double later = usd * (1.0 + own[price_trend_]) + kg * (1.0 + own[carbon_trend_]);
    return now > 0 ? (now - later) / now : 0.0;
  }

  std::string name_;
  Kind kind_;
  std::uint64_t stream_;  ///< PolicyInput::draw stream of the random rule
  double param_;  ///< wait-awhile's threshold, green-fit's free share, fixed-overflow's site,
                  ///< guarded-overflow's queue threshold
  int free_, carbon_, price_, queue_, carbon_trend_, price_trend_;
};

/// What a rule's name may carry after ':' ("wait-awhile:0.1").
enum class Param {
  kNone,   ///< nothing
  kShare,  ///< a share in [0, 1)
  kSite,   ///< an agent index
  kLevel   ///< a level >= 0
};

struct GeodcRule {
  const char* name;
  Kind kind;
  Param param;
  double default_param;  ///< when the name gives none
};

const std::vector<GeodcRule>& geodc_rules() {
  static const std::vector<GeodcRule> rules = {
      {"random", Kind::kRandom, Param::kNone, 0},
      {"round-robin", Kind::kRoundRobin, Param::kNone, 0},
      {"local-only", Kind::kLocal, Param::kNone, 0},
      {"least-loaded", Kind::kLeastLoaded, Param::kNone, 0},
      {"lowest-carbon", Kind::kLowestCarbon, Param::kNone, 0},
      {"lowest-price", Kind::kLowestPrice, Param::kNone, 0},
      {"wait-awhile", Kind::kWaitAwhile, Param::kShare, kWaitAwhileThreshold},
      {"green-fit", Kind::kGreenFit, Param::kShare, kGreenFitMinFree},
      {"fixed-overflow", Kind::kFixedOverflow, Param::kSite, kFixedOverflowSite},
      {"guarded-overflow", Kind::kGuardedOverflow, Param::kLevel, kGuardedOverflowQueue}};
  return rules;
}

/// The planners after the rules (envs/geodc/mpc.hpp): they run where one rank holds every agent.
const char* const kPlanners[] = {"mpc", "mpc-oracle"};

const std::vector<std::string>& geodc_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& r : geodc_rules()) v.emplace_back(r.name);
    for (const char* p : kPlanners) v.emplace_back(p);
    return v;
  }();
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
  if (auto mpc = geodc::make_mpc(name)) return mpc;
  const auto [base, param] = split_parameter(name);
  for (const auto& rule : geodc_rules()) {
    if (base != rule.name) continue;
    const bool given = !std::isnan(param);
    if (given && rule.param == Param::kNone) {
      std::string takers;
      for (const auto& r : geodc_rules())
        if (r.param != Param::kNone) takers += (takers.empty() ? "" : ", ") + std::string(r.name);
      MARLSCHED_THROW(ConfigError,
                      "baseline '" << name << "': only " << takers << " take a parameter");
    }
    MARLSCHED_REQUIRE(!given || rule.param != Param::kShare || param < 1,
                      "baseline '" << name << "': the threshold after ':' must be in [0, 1)");
    const int agents = static_cast<int>(spec.targets.size());
    MARLSCHED_REQUIRE(
        !given || rule.param != Param::kSite || (param == std::floor(param) && param < agents),
        "baseline '" << name << "': the site after ':' must be an agent index in [0, " << agents
                     << ")");
    return std::make_unique<Heuristic>(name, rule.kind, spec, seed,
                                       given ? param : rule.default_param);
  }
  return nullptr;
}

}  // namespace

const std::vector<std::string>& geodc_heuristic_names() {
  return geodc_names();
}
std::unique_ptr<Policy> make_geodc_heuristic(const std::string& name, const EnvSpec& spec,
                                             std::uint64_t seed) {
  return make_geodc(name, spec, seed);
}

}  // namespace marlsched
