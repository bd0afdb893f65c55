#include "report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <limits>
#include <sstream>

#include "core/error.hpp"
#include "core/file.hpp"
#include "core/stats.hpp"
#include "report_util.hpp"

namespace marlsched::cli {

using namespace report_util;

namespace {

/// One policy's scores over the compared runs: scores[seed][episode].
struct PolicyScores {
  std::string name;
  /// learned, heuristic, bound (the oracle's upper bound) or floor (the feasible hindsight
  /// schedule, a lower bound on the optimum)
  std::string kind;
  stats::Scores scores;
};

/// Reads RUN_DIR/eval-episodes.csv of every run into per-policy score matrices. A heuristic (or
/// the oracle bound) scores the same on the same episodes in every run, so it keeps one row, and
/// a difference between runs means they were not evaluated on the same episodes: refused.
std::vector<PolicyScores> read_scores(const std::vector<std::string>& run_dirs,
                                      const std::vector<std::string>& baselines) {
  std::vector<PolicyScores> out;
  std::size_t episodes = 0;
  // Each run once: a run given twice would count as two seeds.
  std::vector<std::filesystem::path> seen;
  for (const auto& dir : run_dirs) {
    std::error_code err;
    const auto canon = std::filesystem::weakly_canonical(dir, err);
    MARLSCHED_REQUIRE(std::find(seen.begin(), seen.end(), canon) == seen.end(),
                      "'" << dir << "' is given twice (or names the same directory as another "
                          << "argument): each run counts as one seed, give each once");
    seen.push_back(canon);
    const std::string path = dir + "/eval-episodes.csv";
    MARLSCHED_REQUIRE(std::filesystem::exists(path),
                      "'" << dir
                          << "' has no eval-episodes.csv (train with eval-after, or run "
                             "`marlsched eval --model "
                          << dir << "`)");
    const Table t = read_csv(path);
    const int pc = t.col("policy"), ec = t.col("episode"), uc = t.col("utility");
    MARLSCHED_REQUIRE(pc >= 0 && ec >= 0 && uc >= 0,
                      path << ": expected the columns policy,episode,utility");
    std::vector<std::pair<std::string, std::vector<double>>> here;
    for (std::size_t r = 0; r < t.rows.size(); ++r) {
      const std::string& name = t.rows[r][static_cast<std::size_t>(pc)];
      const double e = t.num(r, ec), u = t.num(r, uc);
      // Far beyond any episode's utility, and sums of such values overflow into inf.
      MARLSCHED_REQUIRE(std::isfinite(u) && std::abs(u) <= 1e15,
                        path << ":" << r + 2 << ": utility "
                             << t.rows[r][static_cast<std::size_t>(uc)]
                             << " is not a number within ±1e15 (an edited or damaged file?)");
      if (here.empty() || here.back().first != name) here.push_back({name, {}});
      MARLSCHED_REQUIRE(e == static_cast<double>(here.back().second.size()),
                        path << ":" << r + 2 << ": episodes of '" << name
                             << "' must be numbered 0, 1, ... in order");
      here.back().second.push_back(u);
    }
    for (auto& [name, v] : here) {
      if (episodes == 0) episodes = v.size();
      MARLSCHED_REQUIRE(v.size() == episodes, path << ": '" << name << "' has " << v.size()
                                                   << " episodes, other policies " << episodes
                                                   << ": runs must use the same evaluation");
      const bool baseline = std::find(baselines.begin(), baselines.end(),
                                      name.substr(0, name.find(':'))) != baselines.end();
      const std::string kind = name.rfind("oracle", 0) == 0   ? "bound"
                               : name == "hindsight-schedule" ? "floor"
                               : baseline                     ? "heuristic"
                                                              : "learned";
      auto it = std::find_if(out.begin(), out.end(),
                             [&](const PolicyScores& p) { return p.name == name; });
      if (it == out.end()) {
        out.push_back({name, kind, {v}});
        continue;
      }
      if (kind == "learned") {
        it->scores.push_back(v);
        continue;
      }
      for (std::size_t e = 0; e < v.size(); ++e)
        MARLSCHED_REQUIRE(std::abs(v[e] - it->scores[0][e]) <= 1e-6 * std::max(1.0, std::abs(v[e])),
                          "'" << name << "' scores " << v[e] << " on episode " << e << " in '"
                              << dir << "' but " << it->scores[0][e]
                              << " in an earlier run: the runs were not evaluated on the same "
                                 "episodes (same env config, eval seed and episode count)");
    }
  }
  MARLSCHED_REQUIRE(!out.empty(), "no policy to compare");
  return out;
}

std::string num(double v, int prec = 2) {
  if (!std::isfinite(v)) return "";
  std::ostringstream os;
  os << std::fixed << std::setprecision(prec) << v;
  return os.str();
}

}  // namespace

namespace {

/// One policy's row of the comparison.
struct Line {
  const PolicyScores* p = nullptr;
  double mean = 0, iqm = 0, diff = NAN, pi = NAN, gap = NAN, floor_gap = NAN;
  stats::Interval mean_ci, iqm_ci, diff_ci{NAN, NAN}, diff_t{NAN, NAN};
};

/// The comparison's statistics: every policy's row, best first, and the reference of the
/// differences: the best heuristic, or the policy --versus names (`versus` true).
struct Comparison {
  std::vector<Line> lines;
  const PolicyScores* best = nullptr;
  bool versus = false;
};

Comparison compare_policies(const std::vector<PolicyScores>& policies, int resamples,
                            const std::string& versus) {
  const PolicyScores* best = nullptr;
  const PolicyScores* bound = nullptr;
  const PolicyScores* floor = nullptr;
  double best_mean = 0, bound_mean = 0, floor_mean = 0;
  for (const auto& p : policies) {
    const double m = stats::statistic(p.scores, stats::Statistic::kMean);
    if (p.kind == "heuristic" && (!best || m > best_mean)) {
      best = &p;
      best_mean = m;
    }
    if (p.kind == "bound") {
      bound = &p;
      bound_mean = m;
    }
    if (p.kind == "floor") {
      floor = &p;
      floor_mean = m;
    }
  }
  if (!versus.empty()) {
    std::string names;
    best = nullptr;
    for (const auto& p : policies) {
      if (p.name == versus) best = &p;
      names += (names.empty() ? "" : ", ") + p.name;
    }
    MARLSCHED_REQUIRE(best != nullptr, "--versus '" << versus << "': no such policy in these runs ("
                                                    << names << ")");
    best_mean = stats::statistic(best->scores, stats::Statistic::kMean);
  }
  const std::uint64_t seed = 20231;  // fixed: the same inputs give the same file
  std::vector<Line> lines;
  for (const auto& p : policies) {
    Line l;
    l.p = &p;
    l.mean = stats::statistic(p.scores, stats::Statistic::kMean);
    l.iqm = stats::statistic(p.scores, stats::Statistic::kIqm);
    l.mean_ci =
        stats::bootstrap_interval(p.scores, nullptr, stats::Statistic::kMean, resamples, seed);
    l.iqm_ci =
        stats::bootstrap_interval(p.scores, nullptr, stats::Statistic::kIqm, resamples, seed);
    if (best && &p != best && p.kind != "bound" && p.kind != "floor") {
      l.diff = l.mean - best_mean;
      l.diff_ci = stats::bootstrap_interval(p.scores, &best->scores, stats::Statistic::kMean,
                                            resamples, seed);
      if (p.scores.size() >= 2) {  // over training seeds: each seed's mean paired difference
        // (to the reference's run of the same index when it has one per seed, e.g. another
        // learner's; else to its one run, a heuristic's)
        std::vector<double> d;
        for (std::size_t i = 0; i < p.scores.size(); ++i) {
          const auto& run = p.scores[i];
          const auto& ref = best->scores[std::min(i, best->scores.size() - 1)];
          double s = 0;
          for (std::size_t e = 0; e < run.size(); ++e) s += run[e] - ref[e];
          d.push_back(s / static_cast<double>(run.size()));
        }
        l.diff_t = stats::t_interval(d);
      }
      l.pi = stats::probability_of_improvement(p.scores, best->scores);
    }
    if (bound && &p != bound)
      l.gap = 100.0 * (bound_mean - l.mean) / std::max(1e-9, std::abs(bound_mean));
    if (floor && &p != floor && &p != bound)
      l.floor_gap = 100.0 * (floor_mean - l.mean) / std::max(1e-9, std::abs(floor_mean));
    lines.push_back(l);
  }
  std::sort(lines.begin(), lines.end(),
            [](const Line& a, const Line& b) { return a.mean > b.mean; });

  return {lines, best, !versus.empty()};
}

/// comparison.csv and comparison.md.
std::pair<std::string, std::string> comparison_tables(const Comparison& c, std::size_t runs,
                                                      std::size_t ne, int resamples) {
  const auto& best = c.best;
  std::ostringstream csv, md;
  const std::string vs = c.versus ? "reference" : "best heuristic";
  csv << "policy,kind,seeds,episodes,mean,mean_ci95_lo,mean_ci95_hi,iqm,iqm_ci95_lo,iqm_ci95_hi,"
      << (c.versus ? "diff_vs_reference" : "diff_vs_best_heuristic")
      << ",diff_ci95_lo,diff_ci95_hi,diff_t95_lo,diff_t95_hi,p_improvement,oracle_gap_pct,"
         "hindsight_gap_pct\n"
      << std::setprecision(10);
  md << "Compared " << runs << " run(s) on the same " << ne
     << " held-out episodes. 95 % intervals: stratified bootstrap over training seeds and "
        "episodes ("
     << resamples
     << " resamples, percentile); t: Student-t over training seeds of each seed's mean paired "
        "difference"
     << (c.versus ? " (seed i paired with the reference's seed i)" : "") << ". "
     << (c.versus ? "Reference" : "Best heuristic") << ": "
     << (best ? best->name : std::string("none")) << ".\n\n"
     << "| policy | kind | seeds | mean [95 % CI] | IQM [95 % CI] | Δ vs " << vs
     << " [95 % CI] | Δ t-interval | P(improvement) | oracle gap | hindsight gap |\n"
     << "|:--|:--|--:|--:|--:|--:|--:|--:|--:|--:|\n";
  for (const auto& l : c.lines) {
    const auto& p = *l.p;
    csv << p.name << ',' << p.kind << ',' << p.scores.size() << ',' << ne << ',' << l.mean << ','
        << l.mean_ci.lo << ',' << l.mean_ci.hi << ',' << l.iqm << ',' << l.iqm_ci.lo << ','
        << l.iqm_ci.hi << ',' << num(l.diff, 6) << ',' << num(l.diff_ci.lo, 6) << ','
        << num(l.diff_ci.hi, 6) << ',' << num(l.diff_t.lo, 6) << ',' << num(l.diff_t.hi, 6) << ','
        << num(l.pi, 4) << ',' << num(l.gap, 4) << ',' << num(l.floor_gap, 4) << '\n';
    auto ci = [](double m, stats::Interval i) {
      return num(m) + " [" + num(i.lo) + ", " + num(i.hi) + "]";
    };
    md << "| " << p.name << " | " << p.kind << " | " << p.scores.size() << " | "
       << ci(l.mean, l.mean_ci) << " | " << ci(l.iqm, l.iqm_ci) << " | "
       << (std::isfinite(l.diff) ? ci(l.diff, l.diff_ci) : "–") << " | "
       << (std::isfinite(l.diff_t.lo) ? "[" + num(l.diff_t.lo) + ", " + num(l.diff_t.hi) + "]"
                                      : "–")
       << " | " << (std::isfinite(l.pi) ? num(l.pi, 3) : "–") << " | "
       << (std::isfinite(l.gap) ? num(l.gap, 1) + " %" : "–") << " | "
       << (std::isfinite(l.floor_gap) ? num(l.floor_gap, 1) + " %" : "–") << " |\n";
  }

  return {csv.str(), md.str()};
}

/// comparison.svg: mean utility with its interval per policy, and the paired difference to the
/// best heuristic with its interval.
std::string comparison_svg(const Comparison& c, std::size_t runs, std::size_t ne) {
  const auto& lines = c.lines;
  const auto& best = c.best;
  const int n = static_cast<int>(lines.size());
  const int label_w = 170, bar_h = 18, gap = 6, panel_w = 560;
  const int panel_h = kTop + n * (bar_h + gap) + 30;
  std::ostringstream svg;
  svg << svg_open(2 * panel_w + 20, panel_h + 50,
                  "Policies over " + std::to_string(runs) + " training seed(s), " +
                      std::to_string(ne) + " held-out episodes (95 % CI)");
  for (int panel = 0; panel < 2; ++panel) {
    const int ox = 10 + panel * panel_w, oy = 40;
    std::vector<double> v;
    for (const auto& l : lines)
      for (double x : panel == 0 ? std::vector<double>{l.mean, l.mean_ci.lo, l.mean_ci.hi}
                                 : std::vector<double>{l.diff, l.diff_ci.lo, l.diff_ci.hi})
        v.push_back(x);
    const auto [x0, x1] = range_of(v, true);
    const double pw = panel_w - label_w - 45;
    auto px = [&, x0 = x0, x1 = x1](double x) { return ox + label_w + (x - x0) / (x1 - x0) * pw; };
    svg << "<text x='" << ox + panel_w / 2 << "' y='" << oy + 18
        << "' text-anchor='middle' font-size='14' font-weight='bold'>"
        << (panel == 0 ? "utility per episode"
                       : "paired difference to " + esc(best ? best->name : "-"))
        << "</text>\n";
    for (double t : ticks(x0, x1))
      svg << "<line x1='" << px(t) << "' x2='" << px(t) << "' y1='" << oy + kTop << "' y2='"
          << oy + kTop + n * (bar_h + gap) << "' stroke='#eee'/>\n<text x='" << px(t) << "' y='"
          << oy + kTop + n * (bar_h + gap) + 14 << "' text-anchor='middle' font-size='10'>"
          << fmt(t) << "</text>\n";
    for (int r = 0; r < n; ++r) {
      const auto& l = lines[static_cast<std::size_t>(r)];
      const double val = panel == 0 ? l.mean : l.diff;
      const stats::Interval i = panel == 0 ? l.mean_ci : l.diff_ci;
      const double y = oy + kTop + r * (bar_h + gap);
      const bool learned = l.p->kind == "learned";
      svg << "<text x='" << ox + label_w - 6 << "' y='" << y + 13
          << "' text-anchor='end' font-size='12'" << (learned ? " font-weight='bold'" : "") << ">"
          << esc(l.p->name) << "</text>\n";
      if (!std::isfinite(val)) continue;
      const double a = px(std::min(0.0, val)), b = px(std::max(0.0, val));
      svg << "<rect x='" << a << "' y='" << y << "' width='" << std::max(0.5, b - a) << "' height='"
          << bar_h << "' fill='"
          << (learned                                        ? kOrange
              : l.p->kind == "bound" || l.p->kind == "floor" ? kGrey
                                                             : kBlue)
          << "'/>\n<line x1='" << px(i.lo) << "' x2='" << px(i.hi) << "' y1='" << y + bar_h / 2
          << "' y2='" << y + bar_h / 2 << "' stroke='#333' stroke-width='1.5'/>\n<text x='"
          << std::max({b, px(i.hi), px(0)}) + 3 << "' y='" << y + 13 << "' font-size='10'>"
          << fmt(val) << "</text>\n";
    }
    svg << "<line x1='" << px(0) << "' x2='" << px(0) << "' y1='" << oy + kTop << "' y2='"
        << oy + kTop + n * (bar_h + gap) << "' stroke='#333'/>\n";
  }
  svg << "</svg>\n";

  return svg.str();
}

}  // namespace

std::vector<std::string> write_comparison(const std::vector<std::string>& run_dirs,
                                          const std::vector<std::string>& baselines,
                                          const std::string& out_dir, int resamples,
                                          const std::string& versus) {
  MARLSCHED_REQUIRE(!run_dirs.empty(), "compare needs at least one run directory");
  MARLSCHED_REQUIRE(resamples >= 100, "--resamples must be at least 100, got " << resamples);
  const auto policies = read_scores(run_dirs, baselines);
  const Comparison c = compare_policies(policies, resamples, versus);
  const std::size_t ne = policies.front().scores.front().size();
  const auto [csv, md] = comparison_tables(c, run_dirs.size(), ne, resamples);
  make_dirs(out_dir);
  const std::vector<std::string> written = {out_dir + "/comparison.csv", out_dir + "/comparison.md",
                                            out_dir + "/comparison.svg"};
  write_file_atomic(written[0], csv);
  write_file_atomic(written[1], md);
  write_file_atomic(written[2], comparison_svg(c, run_dirs.size(), ne));
  std::cout << md;
  return written;
}

}  // namespace marlsched::cli
