#include "train/metrics_sink.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "core/error.hpp"
#include "core/file.hpp"

namespace marlsched {

namespace {

/// Keeps the header and the rows of `path` whose first field (the iteration) is <= `last`.
void truncate_rows(const std::string& path, int last) {
  std::ifstream in(path);
  if (!in) return;
  std::ostringstream keep;
  std::string line;
  bool header = true;
  while (std::getline(in, line)) {
    if (header || std::atoi(line.c_str()) <= last) keep << line << '\n';
    header = false;
  }
  in.close();
  write_file_atomic(path, keep.str());
}

std::string fmt_eta(double s) {
  std::ostringstream os;
  if (s >= 3600)
    os << static_cast<int>(s / 3600) << "h" << std::setw(2) << std::setfill('0')
       << static_cast<int>(std::fmod(s, 3600) / 60) << "m";
  else if (s >= 60)
    os << static_cast<int>(s / 60) << "m" << std::setw(2) << std::setfill('0')
       << static_cast<int>(std::fmod(s, 60)) << "s";
  else
    os << std::fixed << std::setprecision(0) << s << "s";
  return os.str();
}

}  // namespace

MetricsSink::MetricsSink(bool root, const std::string& run_dir, const EnvSpec& spec,
                         const std::vector<StatName>& stats, int iterations, bool tensorboard,
                         bool quiet, int first_iteration, std::int64_t agent_steps, bool resuming)
    : root_(root),
      quiet_(quiet),
      run_dir_(run_dir),
      spec_(spec),
      stats_(stats),
      iterations_(iterations) {
  if (!root_) return;
  if (resuming) {
    truncate_rows(run_dir_ + "/metrics.csv", first_iteration - 1);
    truncate_rows(run_dir_ + "/timing.csv", first_iteration - 1);
  }
  const auto mode = resuming ? std::ios::app : std::ios::trunc;
  refuse_link(run_dir_ + "/metrics.csv");
  refuse_link(run_dir_ + "/timing.csv");
  metrics_.open(run_dir_ + "/metrics.csv", std::ios::out | mode);
  timing_.open(run_dir_ + "/timing.csv", std::ios::out | mode);
  if (!metrics_ || !timing_) MARLSCHED_THROW(InputError, "cannot write into '" << run_dir_ << "'");
  if (!resuming) {
    metrics_ << "iteration,agent_steps,episodes,system_reward_per_slot,episode_return";
    for (std::size_t i = 0; i < spec_.reward_components.size(); ++i)
      metrics_ << ',' << spec_.component_label(i) << "_per_slot";
    for (const auto& st : stats_) metrics_ << ',' << st.column;
    metrics_ << '\n';
    timing_ << "iteration,wall_s,env_s,exchange_s,gather_s,act_s,update_s,allreduce_s,log_s,"
               "max_rss_mib\n";
  }
  metrics_ << std::setprecision(9);
  if (tensorboard) {
    tb_ = std::make_unique<TensorBoardWriter>(run_dir_ + "/tb");
    if (resuming) tb_->session_start(agent_steps);
  }
}

void MetricsSink::record(const IterationRecord& r) {
  if (!root_) return;
  const auto& values = r.update->values;
  const std::size_t nc = r.components_per_slot.size();
  metrics_ << r.iteration << ',' << r.agent_steps << ',' << r.episodes << ',' << r.reward_per_slot
           << ',' << r.episode_return;
  for (double v : r.components_per_slot) metrics_ << ',' << v;
  for (double v : values) metrics_ << ',' << v;
  metrics_ << '\n';
  if (!metrics_.flush())
    MARLSCHED_THROW(InputError,
                    "cannot write '" << run_dir_ << "/metrics.csv': " << std::strerror(errno));
  if (tb_) {
    std::vector<std::pair<std::string, float>> sc = {
        {"reward/system_per_slot", static_cast<float>(r.reward_per_slot)}};
    if (r.episodes > 0)
      sc.emplace_back("reward/episode_return", static_cast<float>(r.episode_return));
    for (std::size_t i = 0; i < nc; ++i)
      sc.emplace_back("reward/" + spec_.component_label(i) + "_per_slot",
                      static_cast<float>(r.components_per_slot[i]));
    for (std::size_t i = 0; i < stats_.size(); ++i)
      sc.emplace_back(stats_[i].tag, static_cast<float>(values[i]));
    sc.insert(sc.end(), {{"perf/agent_steps_per_s", static_cast<float>(r.agent_steps_per_s)},
                         {"perf/iteration_s", static_cast<float>(r.wall_s)}});
    tb_->scalars(r.agent_steps, sc);
  }
  timing_ << r.iteration << ',' << r.wall_s << ',' << r.env_s << ',' << r.exchange_s << ','
          << r.gather_s << ',' << r.act_s << ',' << r.update_s << ',' << r.allreduce_s << ','
          << r.log_s << ',' << r.max_rss_mib << '\n';
  if (!timing_.flush())
    MARLSCHED_THROW(InputError,
                    "cannot write '" << run_dir_ << "/timing.csv': " << std::strerror(errno));
  if (quiet_) return;
  std::ostringstream os;
  // Steps count agent-steps (rollout steps x env copies x agents); the reward and its
  // components are per slot, summed over agents (mean_* averaged over them).
  os << std::fixed << "iter " << std::setw(4) << r.iteration << "/" << iterations_
     << " | agent-steps " << std::setw(8) << r.agent_steps << " | " << std::setprecision(0)
     << std::setw(6) << r.agent_steps_per_s << " agent-steps/s | per slot, all agents: reward "
     << std::setprecision(3) << std::setw(8) << r.reward_per_slot;
  for (std::size_t i = 0; i < nc; ++i)
    os << " " << spec_.component_label(i) << " " << std::setprecision(2)
       << r.components_per_slot[i];
  os << " |" << std::setprecision(4);
  for (std::size_t i = 0; i < stats_.size() && i < 4; ++i) {
    os << " " << stats_[i].column << " ";
    // A statistic without a value yet (no gradient step: a replay buffer warming up) shows as
    // "-"; a NaN after a step stopped the run before this.
    if (std::isnan(values[i]) && !r.update->stepped)
      os << "-";
    else
      os << values[i];
  }
  os << " | ETA " << fmt_eta(r.eta_s);
  std::cout << os.str() << std::endl;
}

}  // namespace marlsched
