#include "agents/baselines/heuristics.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace marlsched {

namespace {

enum class Kind { kRandom, kRoundRobin, kLocal, kLeastLoaded, kLowestCarbon, kLowestPrice };

class Heuristic final : public Policy {
 public:
  Heuristic(const std::string& name, Kind kind, const EnvSpec& spec, std::uint64_t seed)
      : name_(name),
        kind_(kind),
        rng_(seed),
        free_(spec.obs_index("free_gpu_frac")),
        carbon_(spec.obs_index("carbon")),
        price_(spec.obs_index("price")) {}

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
          case Kind::kLeastLoaded: {
            float most = -1.f;
            for (int t = 0; t < T; ++t)
              if (t != me && obs(t)[free_] > most) {
                most = obs(t)[free_];
                a = t;
              }
            break;  // run what fits here, overflow to the least-loaded other target
          }
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
  std::string name_;
  Kind kind_;
  Rng rng_;
  int free_, carbon_, price_;
};

const std::vector<std::string>& geodc_names() {
  static const std::vector<std::string> names = {"random",       "round-robin",   "local-only",
                                                 "least-loaded", "lowest-carbon", "lowest-price"};
  return names;
}

std::unique_ptr<Policy> make_geodc(const std::string& name, const EnvSpec& spec,
                                   std::uint64_t seed) {
  static const Kind kinds[] = {Kind::kRandom,      Kind::kRoundRobin,   Kind::kLocal,
                               Kind::kLeastLoaded, Kind::kLowestCarbon, Kind::kLowestPrice};
  const auto& names = geodc_names();
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return std::make_unique<Heuristic>(name, kinds[i], spec, seed);
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
  if (std::find(names.begin(), names.end(), name) != names.end())
    for (const auto& set : baseline_table())
      if (set.env == spec.name)
        return set.make(name, spec, derive_seed(seed, {0xBA5E, static_cast<std::uint64_t>(rank)}));
  std::string known;
  for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
  MARLSCHED_THROW(ConfigError, "unknown baseline '" << name << "' for env " << spec.name
                                                    << " (known: " << known << ")");
}

}  // namespace marlsched
