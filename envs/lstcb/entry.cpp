/// \file entry.cpp
/// The lstcb env's row of the env table: its name, description, config and factory.

#include <filesystem>

#include "core/file.hpp"
#include "core/latency_histogram.hpp"
#include "envs/lstcb/lstcb.hpp"
#include "envs/registry.hpp"

namespace marlsched {
// The env's baselines (baselines.cpp).
const std::vector<std::string>& batch_heuristic_names();
std::unique_ptr<Policy> make_batch_heuristic(const std::string& name, const EnvSpec& spec,
                                             std::uint64_t seed);
}  // namespace marlsched

namespace marlsched::lstcb {

namespace {

class LstcbFactory final : public EnvFactory {
 public:
  LstcbFactory(const Config& cfg, int num_agents)
      : cfg_(std::make_shared<Config>(cfg)),
        spec_(std::make_shared<EnvSpec>(make_spec(cfg, num_agents))),
        profile_(select_profile(cfg)),
        n_(num_agents) {}
  const EnvSpec& spec() const override { return *spec_; }
  std::unique_ptr<marlsched::Shard> make_shard(int agent) const override {
    return std::make_unique<Shard>(cfg_, spec_, profile_, agent, n_);
  }
  std::vector<std::pair<std::string, double>> summarize(
      const std::map<std::string, double>& counters) const override {
    return lstcb::summarize(counters);
  }
  std::string metrics_note() const override { return latency::kQuantileNote; }

 private:
  std::shared_ptr<const Config> cfg_;
  std::shared_ptr<const EnvSpec> spec_;
  Profile profile_;
  int n_;
};

/// `marlsched gen-data`: the built-in batch profiles as the CSV file that --profiles reads.
class Generator final : public DataGenerator {
 public:
  void bind(OptionBinder& b) override {
    b.group("lstcb");
    b.add("profiles-out", profiles_, "where to write the lstcb batch profiles");
  }
  std::vector<std::string> write() const override {
    const auto dir = std::filesystem::path(profiles_).parent_path();
    if (!dir.empty()) make_dirs(dir.string());
    write_file_atomic(profiles_, profiles_csv(builtin_profiles()));
    return {"wrote the lstcb batch profiles to " + profiles_};
  }

 private:
  std::string profiles_ = "data/lstcb/batch_profiles.csv";
};

}  // namespace

EnvEntry entry() {
  return {"lstcb",
          "energy-efficient batching of inference requests on cooperating edge servers, "
          "long/short timescales (LSTCB model)",
          [] { return std::make_unique<Config>(); },
          [](const EnvConfig& c, int n) -> std::unique_ptr<EnvFactory> {
            return std::make_unique<LstcbFactory>(dynamic_cast<const Config&>(c), n);
          },
          marlsched::batch_heuristic_names,
          marlsched::make_batch_heuristic,
          {},
          [] { return std::make_unique<Generator>(); }};
}

}  // namespace marlsched::lstcb
