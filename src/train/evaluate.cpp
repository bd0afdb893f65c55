#include "train/evaluate.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "core/error.hpp"
#include "core/file.hpp"
#include "core/stats.hpp"
#include "train/world.hpp"

namespace marlsched {

namespace {
/// A line on rank 0 at most every 30 s of a long evaluation (thousands of episodes, or an
/// oracle bound of many sites), so that a long run says where it is.
class Progress {
 public:
  Progress(bool root, std::string what, long long total)
      : root_(root), what_(std::move(what)), total_(total), last_(Clock::now()) {}
  void at(long long done) {
    if (!root_ || Clock::now() - last_ < std::chrono::seconds(30)) return;
    last_ = Clock::now();
    std::cout << what_ << ": " << done << " of " << total_ << " episodes" << std::endl;
  }

 private:
  using Clock = std::chrono::steady_clock;
  bool root_;
  std::string what_;
  long long total_;
  Clock::time_point last_;
};
}  // namespace

EvalRow evaluate(Policy& policy, const EnvFactory& factory, const dist::Comm& comm,
                 const EvalSettings& s) {
  World world(factory, comm, s.agents_per_rank, s.copies, s.seed);
  world.set_every_shard(policy.needs_every_agent());
  const auto& spec = world.spec();
  const int rounds = (s.episodes + s.copies - 1) / s.copies;
  const int nc = static_cast<int>(spec.reward_components.size());
  EvalRow row;
  row.policy = policy.name();
  row.components.assign(static_cast<std::size_t>(nc), 0.0);
  std::vector<double>& returns = row.returns;
  double samples = 0;  // (copy, agent, slot) triples: what a mean component is averaged over
  world.reset();
  std::vector<int> actions;
  Progress progress(comm.is_root(), "evaluating " + policy.name(),
                    static_cast<long long>(rounds) * s.copies);
  for (int r = 0; r < rounds; ++r) {
    progress.at(static_cast<long long>(r) * s.copies);
    std::vector<double> ep_ret(static_cast<std::size_t>(s.copies), 0.0);
    bool finished = false;
    while (!finished) {
      policy.act(world.policy_input(), actions);
      world.step(actions);
      for (int c = 0; c < world.copies(); ++c)
        for (int a = 0; a < world.num_agents(); ++a) {
          ep_ret[static_cast<std::size_t>(c)] += world.reward(c, a);
          for (int i = 0; i < nc; ++i)
            row.components[static_cast<std::size_t>(i)] += world.component(c, a, i);
          samples += 1;
        }
      finished = world.done(0);
    }
    for (double v : ep_ret) returns.push_back(v);
  }
  row.episodes = static_cast<int>(returns.size());
  row.utility = stats::mean(returns);
  row.utility_sd = stats::sd(returns);
  for (std::size_t i = 0; i < row.components.size(); ++i)
    row.components[i] /= spec.component_is_mean(i) ? std::max(1.0, samples) : row.episodes;
  row.metrics = factory.summarize(world.global_counters());
  return row;
}

namespace {
std::string fmt(double v, int prec) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(prec) << v;
  return os.str();
}
/// A system metric: 4 significant digits (a rate 0.9876, a latency 12.38 ms, a histogram bin
/// edge 50 ms as 50, not 50.0000; an open bin's bound as inf).
std::string fmt_metric(double v) {
  std::ostringstream os;
  os << std::setprecision(4) << v;
  return os.str();
}

/// Aligned text (or markdown) table; the first column left-aligned.
std::string render(const std::vector<std::string>& head,
                   const std::vector<std::vector<std::string>>& cells, bool markdown) {
  std::vector<std::size_t> w(head.size());
  for (std::size_t j = 0; j < head.size(); ++j) {
    w[j] = head[j].size();
    for (const auto& l : cells) w[j] = std::max(w[j], l[j].size());
  }
  std::ostringstream os;
  auto emit = [&](const std::vector<std::string>& l) {
    if (markdown) os << "| ";
    for (std::size_t j = 0; j < l.size(); ++j) {
      if (j == 0)
        os << std::left << std::setw(static_cast<int>(w[j])) << l[j];
      else
        os << std::right << std::setw(static_cast<int>(w[j])) << l[j];
      os << (markdown ? (j + 1 < l.size() ? " | " : " |") : (j + 1 < l.size() ? "  " : ""));
    }
    os << '\n';
  };
  emit(head);
  if (markdown) {
    os << '|';
    for (std::size_t j = 0; j < head.size(); ++j)
      os << (j == 0 ? ":" : "") << std::string(w[j] + 1, '-') << (j == 0 ? "" : ":") << '|';
    os << '\n';
  }
  for (const auto& l : cells) emit(l);
  return os.str();
}
}  // namespace

std::string format_eval_table(const EnvSpec& spec, const std::vector<EvalRow>& rows,
                              bool markdown) {
  std::vector<std::string> head = {"policy", "utility", "± sd"};
  for (std::size_t i = 0; i < spec.reward_components.size(); ++i)
    head.push_back(spec.component_label(i));
  // Metrics named "metric/group" (per class, say) go to a second table: one row per policy and
  // group, one column per metric.
  std::vector<std::string> groups, grouped;
  if (!rows.empty())
    for (const auto& m : rows.front().metrics) {
      const auto slash = m.first.find('/');
      if (slash == std::string::npos) {
        head.push_back(m.first);
        continue;
      }
      const std::string metric = m.first.substr(0, slash), group = m.first.substr(slash + 1);
      if (std::find(groups.begin(), groups.end(), group) == groups.end()) groups.push_back(group);
      if (std::find(grouped.begin(), grouped.end(), metric) == grouped.end())
        grouped.push_back(metric);
    }
  std::vector<std::vector<std::string>> cells;
  for (const auto& r : rows) {
    std::vector<std::string> line = {r.policy, fmt(r.utility, 2), fmt(r.utility_sd, 2)};
    for (std::size_t i = 0; i < spec.reward_components.size(); ++i)
      line.push_back(fmt(r.components[i], spec.component_is_mean(i) ? 3 : 2));
    for (const auto& m : r.metrics)
      if (m.first.find('/') == std::string::npos) line.push_back(fmt_metric(m.second));
    cells.push_back(line);
  }
  std::string out = render(head, cells, markdown);
  if (groups.empty()) return out;
  std::vector<std::string> head2 = {"policy", "group"};
  head2.insert(head2.end(), grouped.begin(), grouped.end());
  std::vector<std::vector<std::string>> cells2;
  for (const auto& r : rows)
    for (const auto& g : groups) {
      std::vector<std::string> line = {r.policy, g};
      for (const auto& metric : grouped) {
        std::string v = "-";
        for (const auto& m : r.metrics)
          if (m.first == metric + "/" + g) v = fmt_metric(m.second);
        line.push_back(v);
      }
      cells2.push_back(line);
    }
  return out + "\n" + render(head2, cells2, markdown);
}

std::string format_eval_csv(const EnvSpec& spec, const std::vector<EvalRow>& rows) {
  std::ostringstream os;
  os << "policy,episodes,utility,utility_sd";
  for (std::size_t i = 0; i < spec.reward_components.size(); ++i)
    os << ',' << spec.component_label(i);
  if (!rows.empty())
    for (const auto& m : rows.front().metrics) os << ',' << m.first;
  os << '\n' << std::setprecision(10);
  for (const auto& r : rows) {
    os << r.policy << ',' << r.episodes << ',' << r.utility << ',' << r.utility_sd;
    for (double c : r.components) os << ',' << c;
    for (const auto& m : r.metrics) os << ',' << m.second;
    os << '\n';
  }
  return os.str();
}

std::string format_eval_episodes_csv(const std::vector<EvalRow>& rows) {
  std::ostringstream os;
  os << "policy,episode,utility\n" << std::setprecision(10);
  for (const auto& r : rows)
    for (std::size_t e = 0; e < r.returns.size(); ++e)
      os << r.policy << ',' << e << ',' << r.returns[e] << '\n';
  return os.str();
}

void evaluate_and_report(const std::vector<EvalEntry>& entries, const EnvFactory& factory,
                         const dist::Comm& comm, const EvalSettings& es, bool with_bound,
                         const std::string& out_dir, Policy* hindsight) {
  MARLSCHED_REQUIRE(!entries.empty(), "nothing to evaluate: no learned policy and no baselines");
  const auto& spec = factory.spec();
  // Every env copy plays whole episodes, so the count rounds up to a multiple of the copies.
  const int played = (es.episodes + es.copies - 1) / es.copies * es.copies;
  if (played != es.episodes && comm.is_root())
    std::cout << "evaluating " << played << " episodes per policy: --eval-episodes " << es.episodes
              << " rounded up to a multiple of the " << es.copies << " env copies per rank"
              << std::endl;
  const int n = es.agents_per_rank * comm.size();
  std::vector<EvalRow> rows;
  for (const auto& entry : entries) {
    rows.push_back(evaluate(*entry.policy, factory, comm, es));
    if (!entry.name.empty()) rows.back().policy = entry.name;
    if (const auto note = entry.policy->note(); !note.empty() && comm.is_root())
      std::cout << note << std::endl;
  }
  // The oracle bound of the same episodes (episode r * copies + c is copy c's r-th), on rank 0.
  EvalRow bound, floor;
  if (with_bound && comm.is_root()) {
    const int n_ep = rows.front().episodes;
    Progress progress(true, "oracle bound", n_ep);
    for (int i = 0; i < n_ep; ++i) {
      progress.at(i);
      const int c = i % es.copies;
      const auto r = static_cast<std::uint64_t>(i / es.copies);
      const double b = factory.episode_bound(episode_world_seed(es.seed, c, r),
                                             episode_shard_seeds(es.seed, c, r, n));
      if (std::isnan(b)) break;  // the env has none (or not at this size)
      bound.returns.push_back(b);
    }
    if (static_cast<int>(bound.returns.size()) == n_ep) {
      bound.policy = "oracle-bound";
      bound.episodes = n_ep;
      bound.utility = stats::mean(bound.returns);
      for (auto& row : rows)
        row.metrics.push_back(
            {"oracle_gap_pct", 100.0 * (bound.utility - row.utility) / std::abs(bound.utility)});
    }
  }
  // The feasible end of the bracket; all ranks call, rank 0 plays it alone.
  if (with_bound && hindsight) {
    floor = evaluate(*hindsight, factory, comm, es);
    if (comm.is_root()) {
      if (const auto note = hindsight->note(); !note.empty()) std::cout << note << std::endl;
      floor.policy = "hindsight-schedule";
      floor.metrics.clear();
      for (auto& row : rows)
        row.metrics.push_back({"hindsight_gap_pct", 100.0 * (floor.utility - row.utility) /
                                                        std::max(1e-9, std::abs(floor.utility))});
    }
  }
  if (comm.is_root()) {
    // What the columns are, said once under the table (and in eval.md).
    std::string notes;
    if (!spec.mean_components.empty())
      notes += "mean_* = mean over agents and slots, not a total\n";
    if (const auto m = factory.metrics_note(); !m.empty()) notes += m + "\n";
    std::cout << "evaluation: " << rows.front().episodes << " episodes per policy, eval seed "
              << es.seed << " (system totals per episode; utility = sum of rewards)\n"
              << format_eval_table(spec, rows, false) << notes;
    if (!bound.policy.empty())
      std::cout << "oracle bound (hindsight relaxation, an upper bound on the optimum): "
                << std::fixed << std::setprecision(2) << bound.utility
                << " per episode; oracle_gap_pct = how far below it each policy is\n";
    if (!floor.policy.empty())
      std::cout << "hindsight schedule (feasible with hindsight, a lower bound on the optimum): "
                << std::fixed << std::setprecision(2) << floor.utility
                << " per episode; hindsight_gap_pct = how far below it each policy is\n";
    std::cout << std::flush;
    if (!out_dir.empty()) {
      make_dirs(out_dir);
      write_file_atomic(out_dir + "/eval.csv", format_eval_csv(spec, rows));
      write_file_atomic(out_dir + "/eval.md",
                        format_eval_table(spec, rows, true) + (notes.empty() ? "" : "\n" + notes));
      auto all_rows = rows;
      if (!bound.policy.empty()) all_rows.push_back(bound);
      if (!floor.policy.empty()) all_rows.push_back(floor);
      write_file_atomic(out_dir + "/eval-episodes.csv", format_eval_episodes_csv(all_rows));
      std::cout << "wrote " << out_dir << "/eval.csv, eval.md and eval-episodes.csv" << std::endl;
    }
  }
  comm.barrier();
}

}  // namespace marlsched
