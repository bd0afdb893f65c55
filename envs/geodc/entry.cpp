/// \file entry.cpp
/// The geodc env's row of the env table: its name, description, config and factory.

#include <cmath>
#include <iostream>

#include "core/csv.hpp"
#include "core/file.hpp"
#include "core/rng.hpp"
#include "envs/geodc/geodc.hpp"
#include "envs/geodc/oracle.hpp"
#include "envs/geodc/traces.hpp"
#include "envs/geodc/workload.hpp"
#include "envs/registry.hpp"

namespace marlsched {
// The env's baselines (baselines.cpp).
const std::vector<std::string>& geodc_heuristic_names();
std::unique_ptr<Policy> make_geodc_heuristic(const std::string& name, const EnvSpec& spec,
                                             std::uint64_t seed);
}  // namespace marlsched

namespace marlsched::geodc {

namespace {

class GeoDcFactory final : public EnvFactory {
 public:
  GeoDcFactory(const Config& cfg, int num_agents)
      : cfg_(std::make_shared<Config>(cfg)),
        spec_(std::make_shared<EnvSpec>(make_spec(cfg, num_agents))),
        sites_(load_sites(cfg, num_agents)) {}
  const EnvSpec& spec() const override { return *spec_; }
  std::unique_ptr<marlsched::Shard> make_shard(int agent) const override {
    return std::make_unique<Shard>(cfg_, spec_, sites_.at(static_cast<std::size_t>(agent)), agent);
  }
  double episode_bound(std::uint64_t world_seed,
                       const std::vector<std::uint64_t>& shard_seeds) const override {
    std::vector<std::unique_ptr<marlsched::Shard>> owned;
    std::vector<Shard*> shards;
    for (int a = 0; a < static_cast<int>(spec_->targets.size()); ++a) {
      owned.push_back(make_shard(a));
      shards.push_back(static_cast<Shard*>(owned.back().get()));
    }
    const auto r = utility_bound(*cfg_, *spec_, shards, world_seed, shard_seeds);
    if (std::isnan(r.utility))
      std::cout << "oracle bound: skipped, the relaxation would exceed " << r.columns
                << " columns at " << shards.size() << " sites (docs/envs/geodc.md)" << std::endl;
    if (r.lagrangian && !told_lagrangian_) {
      told_lagrangian_ = true;
      std::cout << "oracle bound: the LP's Lagrangian dual (" << r.columns << " columns, more than "
                << kExactBoundColumns << " solved exactly; docs/envs/geodc.md), first episode "
                << r.utility << " after " << r.iterations
                << " steps, a feasible point of the LP at " << r.lp_lower << std::endl;
    }
    return r.utility;
  }
  std::vector<std::string> input_notes() const override {
    return geodc::input_notes(*cfg_, sites_);
  }

 private:
  mutable bool told_lagrangian_ = false;  ///< the note on the Lagrangian bound, printed once
  std::shared_ptr<const Config> cfg_;
  std::shared_ptr<const EnvSpec> spec_;
  std::vector<std::shared_ptr<const SiteData>> sites_;
};

/// `marlsched gen-data`: the synthetic traces of the built-in zones (Electricity Maps and price
/// formats) and a sample pai_task_table.
class Generator final : public DataGenerator {
 public:
  void bind(OptionBinder& b) override {
    b.group("geodc");
    b.add("out", out_, "output directory of the synthetic traces and the pai_task_table sample");
    b.add("days", days_, "days of hourly trace per zone").in(1, 36600);
    b.add("tasks", tasks_, "rows of the sample pai_task_table").in(1, 100000000);
  }
  void validate() const override { check_declared(*this); }
  std::vector<std::string> write() const override {
    make_dirs(out_);
    std::int64_t t0 = 0;
    csv::parse_datetime("2023-01-01 00:00", t0);
    // The same seeds as the default run's synthetic traces (site i of the default site list
    // uses derive_seed(trace_seed, {i})), so these files are the first days of that data.
    const Config defaults;
    for (std::size_t i = 0; i < defaults.sites.size(); ++i) {
      const auto& z = defaults.sites[i];
      const auto& p = zone_profile(z);
      const auto seed = derive_seed(defaults.trace_seed, {i});
      write_carbon_csv(out_ + "/" + z + "_synthetic_hourly.csv",
                       synth_carbon(p, t0 / 3600, days_ * 24, seed), z);
      write_price_csv(out_ + "/" + z + "_synthetic_prices.csv",
                      synth_price(p, t0 / 3600, days_ * 24, seed));
    }
    write_pai_task_table(out_ + "/pai_task_table_sample.csv", tasks_, 2020);
    return {"wrote synthetic traces for " + std::to_string(builtin_zones().size()) +
            " zones and a pai_task_table sample into " + out_};
  }

 private:
  std::string out_ = "data/generated";
  int days_ = 14, tasks_ = 200;
};

}  // namespace

EnvEntry entry() {
  return {"geodc",
          "geo-distributed AIGC training jobs over data centers (GLOBECOM'23 model)",
          [] { return std::make_unique<Config>(); },
          [](const EnvConfig& c, int n) -> std::unique_ptr<EnvFactory> {
            return std::make_unique<GeoDcFactory>(dynamic_cast<const Config&>(c), n);
          },
          marlsched::geodc_heuristic_names,
          marlsched::make_geodc_heuristic,
          "hindsight",
          [] { return std::make_unique<Generator>(); }};
}

}  // namespace marlsched::geodc
