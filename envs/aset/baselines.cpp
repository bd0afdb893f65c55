/// \file baselines.cpp
/// The static policies ASET is compared against, for the aset action layout (envs/aset):
/// action h·(1 + K·S) + b, h = 1 sends what the cloud can serve in time to the cloud, b = 0
/// keeps the rest local, b = 1 + t·S + s sends share s of it to neighbour t (K nearest). They
/// read the cluster's own observation (its load and wait, its neighbours' as exchanged).
///   local-only           serve every query at its ingress cluster (the closest cluster)
///   cloud-only           send every query the cloud can serve in time to the cloud
///   least-loaded         send the feasible queries to the least loaded of {self, K nearest};
///                        stay local when self is least loaded (load balancing)
///   random-proportional  each interval, a random target among {self, K nearest, cloud} with
///                        probability proportional to its spare capacity (1 − load; cloud 1),
///                        and a random share

#include <cstdlib>
#include <string>

#include "core/error.hpp"
#include "envs/baselines.hpp"

namespace marlsched {

namespace {

enum class EdgeKind { kLocal, kCloud, kLeastLoaded, kRandomProportional };

class EdgeHeuristic final : public Policy {
 public:
  EdgeHeuristic(std::string name, EdgeKind kind, const EnvSpec& spec, std::uint64_t seed)
      : name_(std::move(name)), kind_(kind), stream_(seed) {
    load_ = spec.obs_index("load");
    wait_ = spec.obs_index("wait");
    while (true) {
      const std::string f = "nbr" + std::to_string(k_ + 1) + "_load";
      bool found = false;
      for (const auto& o : spec.obs_fields) found = found || o == f;
      if (!found) break;
      nbr_load_.push_back(spec.obs_index(f));
      nbr_wait_.push_back(spec.obs_index("nbr" + std::to_string(k_ + 1) + "_wait"));
      ++k_;
    }
    half_ = spec.num_actions() / 2;
    MARLSCHED_CHECK(spec.num_actions() % 2 == 0 && (k_ == 0 || (half_ - 1) % k_ == 0),
                    "edge heuristics expect the aset action layout");
    shares_ = k_ == 0 ? 1 : (half_ - 1) / k_;
    // The largest share: the action names end in ":<percent>%".
    int best = -1;
    for (int s = 0; s < shares_ && k_ > 0; ++s) {
      const std::string& a = spec.action_names[static_cast<std::size_t>(1 + s)];
      const int pct = std::atoi(a.substr(a.find(':') + 1).c_str());
      if (pct > best) {
        best = pct;
        full_ = s;
      }
    }
  }

  std::string name() const override { return name_; }
  // random-proportional draws from shares it does not expose as a law.
  ActionLaw action_law() const override {
    return kind_ == EdgeKind::kRandomProportional ? ActionLaw::kUnknown : ActionLaw::kDeterministic;
  }

  void act(const PolicyInput& in, std::vector<int>& actions) override {
    actions.resize(static_cast<std::size_t>(in.copies * in.local_agents));
    for (int c = 0; c < in.copies; ++c) {
      const GlobalObs& g = in.global[static_cast<std::size_t>(c)];
      for (int k = 0; k < in.local_agents; ++k) {
        const float* o = g.row(in.first_agent + k);
        int a = 0;
        switch (kind_) {
          case EdgeKind::kLocal:
            a = 0;
            break;
          case EdgeKind::kCloud:
            a = half_;
            break;
          case EdgeKind::kLeastLoaded: {
            int best = -1;
            float least = o[load_] + o[wait_];
            for (int j = 0; j < k_; ++j) {
              const float l = o[nbr_load_[static_cast<std::size_t>(j)]] +
                              o[nbr_wait_[static_cast<std::size_t>(j)]];
              if (l < least) {
                least = l;
                best = j;
              }
            }
            a = best < 0 ? 0 : action(best, full_);
            break;
          }
          case EdgeKind::kRandomProportional: {
            std::vector<double> w;
            w.push_back(std::max(0.0f, 1.0f - o[load_]));
            for (int j = 0; j < k_; ++j)
              w.push_back(std::max(0.0f, 1.0f - o[nbr_load_[static_cast<std::size_t>(j)]]));
            w.push_back(1.0);  // the cloud: elastic
            double total = 0;
            for (double v : w) total += v;
            double u = in.draw(c, in.first_agent + k, stream_) * total;
            int t = static_cast<int>(w.size()) - 1;
            for (std::size_t i = 0; i < w.size(); ++i) {
              if (u < w[i]) {
                t = static_cast<int>(i);
                break;
              }
              u -= w[i];
            }
            const int s = in.draw_below(c, in.first_agent + k, stream_ + 1, shares_);
            a = t == 0 ? 0 : t == k_ + 1 ? half_ : action(t - 1, s);
            break;
          }
        }
        actions[static_cast<std::size_t>(c * in.local_agents + k)] = a;
      }
    }
  }

 private:
  int action(int target, int share) const { return 1 + target * shares_ + share; }

  std::string name_;
  EdgeKind kind_;
  std::uint64_t stream_;  ///< PolicyInput::draw streams (stream_, stream_ + 1) of the random rule
  int load_ = 0, wait_ = 0, k_ = 0, shares_ = 1, full_ = 0, half_ = 1;
  std::vector<int> nbr_load_, nbr_wait_;
};

}  // namespace

const std::vector<std::string>& edge_heuristic_names() {
  static const std::vector<std::string> names = {"local-only", "cloud-only", "least-loaded",
                                                 "random-proportional"};
  return names;
}

std::unique_ptr<Policy> make_edge_heuristic(const std::string& name, const EnvSpec& spec,
                                            std::uint64_t seed) {
  static const EdgeKind kinds[] = {EdgeKind::kLocal, EdgeKind::kCloud, EdgeKind::kLeastLoaded,
                                   EdgeKind::kRandomProportional};
  const auto& names = edge_heuristic_names();
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return std::make_unique<EdgeHeuristic>(name, kinds[i], spec, seed);
  return nullptr;
}

}  // namespace marlsched
