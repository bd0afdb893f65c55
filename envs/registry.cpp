#include "registry.hpp"

#include <cmath>
#include <iostream>

#include "aset/aset.hpp"
#include "coop/coop.hpp"
#include "core/error.hpp"
#include "core/latency_histogram.hpp"
#include "geodc/geodc.hpp"
#include "geodc/oracle.hpp"
#include "lstcb/lstcb.hpp"

namespace marlsched {

namespace {

class GeoDcFactory final : public EnvFactory {
 public:
  GeoDcFactory(const geodc::Config& cfg, int num_agents)
      : cfg_(std::make_shared<geodc::Config>(cfg)),
        spec_(std::make_shared<EnvSpec>(geodc::make_spec(cfg, num_agents))),
        sites_(geodc::load_sites(cfg, num_agents)) {}
  const EnvSpec& spec() const override { return *spec_; }
  std::unique_ptr<Shard> make_shard(int agent) const override {
    return std::make_unique<geodc::Shard>(cfg_, spec_, sites_.at(static_cast<std::size_t>(agent)),
                                          agent);
  }
  double episode_bound(std::uint64_t world_seed,
                       const std::vector<std::uint64_t>& shard_seeds) const override {
    std::vector<std::unique_ptr<Shard>> owned;
    std::vector<geodc::Shard*> shards;
    for (int a = 0; a < static_cast<int>(spec_->targets.size()); ++a) {
      owned.push_back(make_shard(a));
      shards.push_back(static_cast<geodc::Shard*>(owned.back().get()));
    }
    const auto r = geodc::utility_bound(*cfg_, *spec_, shards, world_seed, shard_seeds);
    if (std::isnan(r.utility))
      std::cout << "oracle bound: skipped, the relaxation would exceed " << r.columns
                << " columns at " << shards.size() << " sites (docs/envs/geodc.md)" << std::endl;
    return r.utility;
  }
  std::vector<std::string> input_notes() const override {
    return geodc::input_notes(*cfg_, sites_);
  }

 private:
  std::shared_ptr<const geodc::Config> cfg_;
  std::shared_ptr<const EnvSpec> spec_;
  std::vector<std::shared_ptr<const geodc::SiteData>> sites_;
};

class AsetFactory final : public EnvFactory {
 public:
  AsetFactory(const aset::Config& cfg, int num_agents)
      : cfg_(std::make_shared<aset::Config>(cfg)),
        topo_(std::make_shared<aset::Topology>(aset::make_topology(cfg, num_agents))),
        spec_(std::make_shared<EnvSpec>(aset::make_spec(cfg, num_agents, *topo_))) {}
  const EnvSpec& spec() const override { return *spec_; }
  std::unique_ptr<Shard> make_shard(int agent) const override {
    return std::make_unique<aset::Shard>(cfg_, spec_, topo_, agent);
  }
  std::vector<std::pair<std::string, double>> summarize(
      const std::map<std::string, double>& counters) const override {
    return aset::summarize(*cfg_, counters);
  }
  std::string metrics_note() const override { return latency::kQuantileNote; }

 private:
  std::shared_ptr<const aset::Config> cfg_;
  std::shared_ptr<const aset::Topology> topo_;
  std::shared_ptr<const EnvSpec> spec_;
};

class LstcbFactory final : public EnvFactory {
 public:
  LstcbFactory(const lstcb::Config& cfg, int num_agents)
      : cfg_(std::make_shared<lstcb::Config>(cfg)),
        spec_(std::make_shared<EnvSpec>(lstcb::make_spec(cfg, num_agents))),
        profile_(lstcb::select_profile(cfg)),
        n_(num_agents) {}
  const EnvSpec& spec() const override { return *spec_; }
  std::unique_ptr<Shard> make_shard(int agent) const override {
    return std::make_unique<lstcb::Shard>(cfg_, spec_, profile_, agent, n_);
  }
  std::vector<std::pair<std::string, double>> summarize(
      const std::map<std::string, double>& counters) const override {
    return lstcb::summarize(counters);
  }
  std::string metrics_note() const override { return latency::kQuantileNote; }

 private:
  std::shared_ptr<const lstcb::Config> cfg_;
  std::shared_ptr<const EnvSpec> spec_;
  lstcb::Profile profile_;
  int n_;
};

class CoopFactory final : public EnvFactory {
 public:
  explicit CoopFactory(const coop::Config& cfg)
      : spec_(std::make_shared<EnvSpec>(coop::make_spec(cfg))) {}
  const EnvSpec& spec() const override { return *spec_; }
  std::unique_ptr<Shard> make_shard(int agent) const override {
    return std::make_unique<coop::Shard>(spec_, agent);
  }
  std::vector<std::pair<std::string, double>> summarize(
      const std::map<std::string, double>& counters) const override {
    const double d = counters.count("decisions") ? counters.at("decisions") : 0.0;
    return {{"match_rate", d > 0 ? counters.at("matches") / d : 0.0}};
  }

 private:
  std::shared_ptr<const EnvSpec> spec_;
};

}  // namespace

const std::vector<EnvEntry>& env_registry() {
  static const std::vector<EnvEntry> table = {
      {"geodc", "geo-distributed AIGC training jobs over data centers (GLOBECOM'23 model)",
       [] { return std::make_unique<geodc::Config>(); },
       [](const EnvConfig& c, int n) -> std::unique_ptr<EnvFactory> {
         return std::make_unique<GeoDcFactory>(dynamic_cast<const geodc::Config&>(c), n);
       }},
      {"aset", "DNN inference queries over distributed edge clusters and a cloud (ASET model)",
       [] { return std::make_unique<aset::Config>(); },
       [](const EnvConfig& c, int n) -> std::unique_ptr<EnvFactory> {
         return std::make_unique<AsetFactory>(dynamic_cast<const aset::Config&>(c), n);
       }},
      {"lstcb",
       "energy-efficient batching of inference requests on cooperating edge servers, "
       "long/short timescales (LSTCB model)",
       [] { return std::make_unique<lstcb::Config>(); },
       [](const EnvConfig& c, int n) -> std::unique_ptr<EnvFactory> {
         return std::make_unique<LstcbFactory>(dynamic_cast<const lstcb::Config&>(c), n);
       }},
      {"coop",
       "a tiny cooperative test task with a known optimum: every agent must copy the leader's "
       "public signal (for testing learners)",
       [] { return std::make_unique<coop::Config>(); },
       [](const EnvConfig& c, int) -> std::unique_ptr<EnvFactory> {
         return std::make_unique<CoopFactory>(dynamic_cast<const coop::Config&>(c));
       }},
  };
  return table;
}

const EnvEntry& find_env(const std::string& name) {
  std::string known;
  for (const auto& e : env_registry()) {
    if (e.name == name) return e;
    known += (known.empty() ? "" : ", ") + e.name;
  }
  MARLSCHED_THROW(ConfigError, "unknown env '" << name << "' (known: " << known << ")");
}

}  // namespace marlsched
