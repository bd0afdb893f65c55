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
#include "train/checkpoint.hpp"

namespace marlsched::cli {

namespace {

/// A CSV file with a header row; numbers parsed, text kept ("nan" is NaN).
struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  int col(const std::string& name) const {
    const auto it = std::find(header.begin(), header.end(), name);
    return it == header.end() ? -1 : static_cast<int>(it - header.begin());
  }
  double num(std::size_t r, int c) const {
    const std::string& s = rows[r][static_cast<std::size_t>(c)];
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    return end == s.c_str() ? std::numeric_limits<double>::quiet_NaN() : v;
  }
};

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, ',')) out.push_back(cell);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

Table read_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) MARLSCHED_THROW(InputError, "cannot read '" << path << "'");
  Table t;
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    auto cells = split(line);
    if (t.header.empty()) {
      t.header = std::move(cells);
      continue;
    }
    if (cells.size() != t.header.size())
      MARLSCHED_THROW(InputError, path << ":" << lineno << ": " << cells.size() << " fields, the "
                                       << "header has " << t.header.size());
    t.rows.push_back(std::move(cells));
  }
  if (t.header.empty()) MARLSCHED_THROW(InputError, path << " is empty");
  return t;
}

std::string fmt(double v) {
  char buf[32];
  if (std::abs(v) >= 1e6 && v == std::round(v / 1e5) * 1e5) {
    std::snprintf(buf, sizeof buf, "%gM", v / 1e6);
  } else if (std::abs(v) >= 1e3 && v == std::round(v / 100) * 100) {
    std::snprintf(buf, sizeof buf, "%gk", v / 1e3);
  } else if (v != 0 && (std::abs(v) >= 1e5 || std::abs(v) < 1e-3))
    std::snprintf(buf, sizeof buf, "%.2g", v);
  else
    std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<')
      o += "&lt;";
    else if (c == '>')
      o += "&gt;";
    else if (c == '&')
      o += "&amp;";
    else
      o += c;
  }
  return o;
}

/// About five round tick values covering [lo, hi].
std::vector<double> ticks(double lo, double hi) {
  const double span = hi - lo;
  const double raw = span / 5;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / mag;
  const double step = (norm < 1.5 ? 1 : norm < 3.5 ? 2 : norm < 7.5 ? 5 : 10) * mag;
  std::vector<double> t;
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step)
    t.push_back(std::abs(v) < step * 1e-9 ? 0.0 : v);
  return t;
}

/// A padded [lo, hi] of the finite values (and of `include`, e.g. zero for bars).
std::pair<double, double> range_of(const std::vector<double>& v, bool include_zero) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (double x : v)
    if (std::isfinite(x)) {
      lo = std::min(lo, x);
      hi = std::max(hi, x);
    }
  if (!std::isfinite(lo)) return {0, 1};
  if (include_zero) {
    lo = std::min(lo, 0.0);
    hi = std::max(hi, 0.0);
  }
  if (hi - lo < 1e-12) {
    lo -= 1;
    hi += 1;
  }
  const double pad = 0.05 * (hi - lo);
  return {include_zero && lo == 0 ? 0 : lo - pad, include_zero && hi == 0 ? 0 : hi + pad};
}

constexpr int kPanelW = 470, kPanelH = 250, kCols = 2;
constexpr int kLeft = 70, kRight = 15, kTop = 30, kBottom = 45;
const char* kBlue = "#1f77b4";
const char* kOrange = "#ff7f0e";
const char* kGrey = "#7f7f7f";

/// One line-chart panel at (ox, oy): y against x.
void line_panel(std::ostringstream& s, int ox, int oy, const std::string& title,
                const std::vector<double>& x, const std::vector<double>& y) {
  const double pw = kPanelW - kLeft - kRight, ph = kPanelH - kTop - kBottom;
  const auto [x0, x1] = range_of(x, false);
  const auto [y0, y1] = range_of(y, false);
  auto px = [&](double v) { return ox + kLeft + (v - x0) / (x1 - x0) * pw; };
  auto py = [&](double v) { return oy + kTop + ph - (v - y0) / (y1 - y0) * ph; };
  s << "<text x='" << ox + kPanelW / 2 << "' y='" << oy + 18
    << "' text-anchor='middle' font-size='14' font-weight='bold'>" << esc(title) << "</text>\n";
  s << "<rect x='" << ox + kLeft << "' y='" << oy + kTop << "' width='" << pw << "' height='" << ph
    << "' fill='none' stroke='#333'/>\n";
  for (double t : ticks(y0, y1)) {
    s << "<line x1='" << ox + kLeft << "' x2='" << ox + kLeft + pw << "' y1='" << py(t) << "' y2='"
      << py(t) << "' stroke='#ddd'/>\n"
      << "<text x='" << ox + kLeft - 5 << "' y='" << py(t) + 4
      << "' text-anchor='end' font-size='11'>" << fmt(t) << "</text>\n";
  }
  for (double t : ticks(x0, x1))
    s << "<text x='" << px(t) << "' y='" << oy + kTop + ph + 16
      << "' text-anchor='middle' font-size='11'>" << fmt(t) << "</text>\n";
  s << "<text x='" << ox + kLeft + pw / 2 << "' y='" << oy + kPanelH - 8
    << "' text-anchor='middle' font-size='12'>env steps</text>\n";
  // The line, broken where a value is missing (e.g. no episode ended in an iteration).
  std::string pts;
  auto flush = [&] {
    if (!pts.empty())
      s << "<polyline fill='none' stroke='" << kBlue << "' stroke-width='1.6' points='" << pts
        << "'/>\n";
    pts.clear();
  };
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!std::isfinite(y[i])) {
      flush();
      continue;
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f,%.1f ", px(x[i]), py(y[i]));
    pts += buf;
  }
  flush();
}

std::string svg_open(int w, int h, const std::string& title) {
  std::ostringstream s;
  s << "<svg xmlns='http://www.w3.org/2000/svg' width='" << w << "' height='" << h
    << "' viewBox='0 0 " << w << " " << h << "' font-family='DejaVu Sans, Arial, sans-serif'>\n"
    << "<rect width='100%' height='100%' fill='white'/>\n<text x='" << w / 2
    << "' y='24' text-anchor='middle' font-size='17' font-weight='bold'>" << esc(title)
    << "</text>\n";
  return s.str();
}

std::string training_svg(const Table& m, const std::string& run_name) {
  // agent_steps (env_steps in runs before it was renamed for what it counts)
  const int xs = m.col("agent_steps") >= 0 ? m.col("agent_steps") : m.col("env_steps");
  if (xs < 0) MARLSCHED_THROW(InputError, "metrics.csv has no agent_steps column");
  std::vector<std::pair<std::string, int>> panels;
  for (const auto& [name, title] : std::vector<std::pair<std::string, std::string>>{
           {"system_reward_per_slot", "system reward per slot"},
           {"episode_return", "episode return (system)"}})
    if (m.col(name) >= 0) panels.emplace_back(title, m.col(name));
  for (int c = 0; c < static_cast<int>(m.header.size()); ++c) {
    const std::string& h = m.header[static_cast<std::size_t>(c)];
    const std::string suffix = "_per_slot";
    if (h != "system_reward_per_slot" && h.size() > suffix.size() &&
        h.compare(h.size() - suffix.size(), suffix.size(), suffix) == 0)
      panels.emplace_back(h.substr(0, h.size() - suffix.size()) + " per slot", c);
  }
  for (const auto& [name, title] :
       std::vector<std::pair<std::string, std::string>>{{"policy_loss", "policy loss"},
                                                        {"value_loss", "value loss"},
                                                        {"entropy", "entropy"},
                                                        {"approx_kl", "approx. KL"},
                                                        {"td_loss", "TD loss"},
                                                        {"q_mean", "mean Q"},
                                                        {"epsilon", "ε (exploration)"}})
    if (m.col(name) >= 0) panels.emplace_back(title, m.col(name));
  const int rows = (static_cast<int>(panels.size()) + kCols - 1) / kCols;
  std::ostringstream s;
  s << svg_open(kCols * kPanelW + 20, rows * kPanelH + 50,
                "Training of " + run_name + " (" + std::to_string(m.rows.size()) + " iterations)");
  std::vector<double> x;
  for (std::size_t r = 0; r < m.rows.size(); ++r) x.push_back(m.num(r, xs));
  for (std::size_t i = 0; i < panels.size(); ++i) {
    std::vector<double> y;
    for (std::size_t r = 0; r < m.rows.size(); ++r) y.push_back(m.num(r, panels[i].second));
    line_panel(s, 10 + static_cast<int>(i % kCols) * kPanelW,
               40 + static_cast<int>(i / kCols) * kPanelH, panels[i].first, x, y);
  }
  s << "</svg>\n";
  return s.str();
}

/// Horizontal bars per policy for each column of eval.csv; the learned policy (first row when
/// it is not a baseline) in orange; utility with ± one standard deviation.
std::string eval_svg(const Table& e, const std::string& run_name,
                     const std::vector<std::string>& baselines) {
  const int pc = e.col("policy");
  if (pc < 0) MARLSCHED_THROW(InputError, "eval.csv has no policy column");
  std::vector<int> cols;
  for (int c = 0; c < static_cast<int>(e.header.size()); ++c) {
    const std::string& h = e.header[static_cast<std::size_t>(c)];
    // Per-group metrics ("metric/class") only for the success rate, to keep the figure readable
    // (eval.csv and eval.md hold them all).
    const bool grouped = h.find('/') != std::string::npos && h.rfind("success_rate/", 0) != 0;
    if (h != "policy" && h != "episodes" && h != "utility_sd" && !grouped) cols.push_back(c);
  }
  const int sd = e.col("utility_sd");
  const int n = static_cast<int>(e.rows.size());
  const int label_w = 150, bar_h = 18, gap = 6;
  const int panel_h = kTop + n * (bar_h + gap) + 30, panel_w = kPanelW;
  const int rows = (static_cast<int>(cols.size()) + kCols - 1) / kCols;
  std::ostringstream s;
  s << svg_open(kCols * panel_w + 20, rows * panel_h + 50,
                "Evaluation of " + run_name + ": learned policy vs baselines");
  for (std::size_t i = 0; i < cols.size(); ++i) {
    const int c = cols[i];
    const int ox = 10 + static_cast<int>(i % kCols) * panel_w;
    const int oy = 40 + static_cast<int>(i / kCols) * panel_h;
    std::vector<double> v;
    for (int r = 0; r < n; ++r) {
      v.push_back(e.num(static_cast<std::size_t>(r), c));
      if (c == e.col("utility") && sd >= 0) {
        v.push_back(v.back() + e.num(static_cast<std::size_t>(r), sd));
        v.push_back(v[v.size() - 2] - e.num(static_cast<std::size_t>(r), sd));
      }
    }
    const auto [x0, x1] = range_of(v, true);
    const double pw = panel_w - label_w - 25;
    auto px = [&](double x) { return ox + label_w + (x - x0) / (x1 - x0) * pw; };
    s << "<text x='" << ox + panel_w / 2 << "' y='" << oy + 18
      << "' text-anchor='middle' font-size='14' font-weight='bold'>"
      << esc(e.header[static_cast<std::size_t>(c)] +
             (c == e.col("utility") && sd >= 0 ? " (± 1 sd)" : ""))
      << "</text>\n";
    for (double t : ticks(x0, x1))
      s << "<line x1='" << px(t) << "' x2='" << px(t) << "' y1='" << oy + kTop << "' y2='"
        << oy + kTop + n * (bar_h + gap) << "' stroke='#eee'/>\n<text x='" << px(t) << "' y='"
        << oy + kTop + n * (bar_h + gap) + 14 << "' text-anchor='middle' font-size='10'>" << fmt(t)
        << "</text>\n";
    for (int r = 0; r < n; ++r) {
      const auto rr = static_cast<std::size_t>(r);
      const std::string& name = e.rows[rr][static_cast<std::size_t>(pc)];
      const bool learned = std::find(baselines.begin(), baselines.end(), name) == baselines.end();
      const double val = e.num(rr, c);
      const double y = oy + kTop + r * (bar_h + gap);
      const double a = px(std::min(0.0, val)), b = px(std::max(0.0, val));
      s << "<text x='" << ox + label_w - 6 << "' y='" << y + 13
        << "' text-anchor='end' font-size='12'" << (learned ? " font-weight='bold'" : "") << ">"
        << esc(name) << "</text>\n<rect x='" << a << "' y='" << y << "' width='"
        << std::max(0.5, b - a) << "' height='" << bar_h << "' fill='"
        << (learned ? kOrange : kBlue) << "'/>\n";
      double eb = b;  // where the label goes: past the bar and its error bar
      if (c == e.col("utility") && sd >= 0) {
        const double d = e.num(rr, sd);
        s << "<line x1='" << px(val - d) << "' x2='" << px(val + d) << "' y1='" << y + bar_h / 2
          << "' y2='" << y + bar_h / 2 << "' stroke='" << kGrey << "' stroke-width='1.5'/>\n";
        eb = std::max(b, px(val + d));
      }
      // Right of the bar (a negative bar's label right of zero, clear of the policy names).
      s << "<text x='" << (val >= 0 ? eb : std::max(eb, px(0))) + 3 << "' y='" << y + 13
        << "' font-size='10'>" << fmt(val) << "</text>\n";
    }
    s << "<line x1='" << px(0) << "' x2='" << px(0) << "' y1='" << oy + kTop << "' y2='"
      << oy + kTop + n * (bar_h + gap) << "' stroke='#333'/>\n";
  }
  s << "</svg>\n";
  return s.str();
}

}  // namespace

std::vector<std::string> write_report(const std::string& run_dir,
                                      const std::vector<std::string>& baselines) {
  const std::string name = std::filesystem::path(run_dir).filename().string().empty()
                               ? run_dir
                               : std::filesystem::path(run_dir).filename().string();
  std::vector<std::string> written;
  const std::string metrics = run_dir + "/metrics.csv";
  MARLSCHED_REQUIRE(std::filesystem::exists(metrics),
                    "'" << run_dir << "' has no metrics.csv (not a training run)");
  const Table m = read_csv(metrics);
  MARLSCHED_REQUIRE(!m.rows.empty(), metrics << " has no iterations yet");
  write_file_atomic(run_dir + "/training.svg", training_svg(m, name));
  written.push_back(run_dir + "/training.svg");
  if (std::filesystem::exists(run_dir + "/eval.csv")) {
    const Table e = read_csv(run_dir + "/eval.csv");
    if (!e.rows.empty()) {
      write_file_atomic(run_dir + "/eval.svg", eval_svg(e, name, baselines));
      written.push_back(run_dir + "/eval.svg");
    }
  }
  return written;
}

namespace {

/// One policy's scores over the compared runs: scores[seed][episode].
struct PolicyScores {
  std::string name;
  std::string kind;  ///< learned, heuristic or bound
  stats::Scores scores;
};

/// Reads RUN_DIR/eval-episodes.csv of every run into per-policy score matrices. A heuristic (or
/// the oracle bound) scores the same on the same episodes in every run, so it keeps one row, and
/// a difference between runs means they were not evaluated on the same episodes: refused.
std::vector<PolicyScores> read_scores(const std::vector<std::string>& run_dirs,
                                      const std::vector<std::string>& baselines) {
  std::vector<PolicyScores> out;
  std::size_t episodes = 0;
  for (const auto& dir : run_dirs) {
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
      MARLSCHED_REQUIRE(std::isfinite(u), path << ":" << r + 2 << ": utility is not a number");
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
      const std::string kind = name.rfind("oracle", 0) == 0 ? "bound"
                               : baseline                   ? "heuristic"
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
  double mean = 0, iqm = 0, diff = NAN, pi = NAN, gap = NAN;
  stats::Interval mean_ci, iqm_ci, diff_ci{NAN, NAN}, diff_t{NAN, NAN};
};

/// The comparison's statistics: every policy's row, best first, and the best heuristic.
struct Comparison {
  std::vector<Line> lines;
  const PolicyScores* best = nullptr;
};

Comparison compare_policies(const std::vector<PolicyScores>& policies, int resamples) {
  const PolicyScores* best = nullptr;
  const PolicyScores* bound = nullptr;
  double best_mean = 0, bound_mean = 0;
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
    if (best && &p != best && p.kind != "bound") {
      l.diff = l.mean - best_mean;
      l.diff_ci = stats::bootstrap_interval(p.scores, &best->scores, stats::Statistic::kMean,
                                            resamples, seed);
      if (p.scores.size() >= 2) {  // over training seeds: each seed's mean paired difference
        std::vector<double> d;
        for (const auto& run : p.scores) {
          double s = 0;
          for (std::size_t e = 0; e < run.size(); ++e) s += run[e] - best->scores[0][e];
          d.push_back(s / static_cast<double>(run.size()));
        }
        l.diff_t = stats::t_interval(d);
      }
      l.pi = stats::probability_of_improvement(p.scores, best->scores);
    }
    if (bound && &p != bound)
      l.gap = 100.0 * (bound_mean - l.mean) / std::max(1e-9, std::abs(bound_mean));
    lines.push_back(l);
  }
  std::sort(lines.begin(), lines.end(),
            [](const Line& a, const Line& b) { return a.mean > b.mean; });

  return {lines, best};
}

/// comparison.csv and comparison.md.
std::pair<std::string, std::string> comparison_tables(const Comparison& c, std::size_t runs,
                                                      std::size_t ne, int resamples) {
  const auto& best = c.best;
  std::ostringstream csv, md;
  csv << "policy,kind,seeds,episodes,mean,mean_ci95_lo,mean_ci95_hi,iqm,iqm_ci95_lo,iqm_ci95_hi,"
         "diff_vs_best_heuristic,diff_ci95_lo,diff_ci95_hi,diff_t95_lo,diff_t95_hi,"
         "p_improvement,oracle_gap_pct\n"
      << std::setprecision(10);
  md << "Compared " << runs << " run(s) on the same " << ne
     << " held-out episodes. 95 % intervals: stratified bootstrap over training seeds and "
        "episodes ("
     << resamples
     << " resamples, percentile); t: Student-t over training seeds of each seed's mean paired "
        "difference. Best heuristic: "
     << (best ? best->name : std::string("none")) << ".\n\n"
     << "| policy | kind | seeds | mean [95 % CI] | IQM [95 % CI] | Δ vs best heuristic [95 % CI] "
        "| Δ t-interval | P(improvement) | oracle gap |\n"
     << "|:--|:--|--:|--:|--:|--:|--:|--:|--:|\n";
  for (const auto& l : c.lines) {
    const auto& p = *l.p;
    csv << p.name << ',' << p.kind << ',' << p.scores.size() << ',' << ne << ',' << l.mean << ','
        << l.mean_ci.lo << ',' << l.mean_ci.hi << ',' << l.iqm << ',' << l.iqm_ci.lo << ','
        << l.iqm_ci.hi << ',' << num(l.diff, 6) << ',' << num(l.diff_ci.lo, 6) << ','
        << num(l.diff_ci.hi, 6) << ',' << num(l.diff_t.lo, 6) << ',' << num(l.diff_t.hi, 6) << ','
        << num(l.pi, 4) << ',' << num(l.gap, 4) << '\n';
    auto ci = [](double m, stats::Interval i) {
      return num(m) + " [" + num(i.lo) + ", " + num(i.hi) + "]";
    };
    md << "| " << p.name << " | " << p.kind << " | " << p.scores.size() << " | "
       << ci(l.mean, l.mean_ci) << " | " << ci(l.iqm, l.iqm_ci) << " | "
       << (std::isfinite(l.diff) ? ci(l.diff, l.diff_ci) : "–") << " | "
       << (std::isfinite(l.diff_t.lo) ? "[" + num(l.diff_t.lo) + ", " + num(l.diff_t.hi) + "]"
                                      : "–")
       << " | " << (std::isfinite(l.pi) ? num(l.pi, 3) : "–") << " | "
       << (std::isfinite(l.gap) ? num(l.gap, 1) + " %" : "–") << " |\n";
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
          << (learned                ? kOrange
              : l.p->kind == "bound" ? kGrey
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
                                          const std::string& out_dir, int resamples) {
  MARLSCHED_REQUIRE(!run_dirs.empty(), "compare needs at least one run directory");
  MARLSCHED_REQUIRE(resamples >= 100, "--resamples must be at least 100, got " << resamples);
  const auto policies = read_scores(run_dirs, baselines);
  const Comparison c = compare_policies(policies, resamples);
  const std::size_t ne = policies.front().scores.front().size();
  const auto [csv, md] = comparison_tables(c, run_dirs.size(), ne, resamples);
  std::filesystem::create_directories(out_dir);
  const std::vector<std::string> written = {out_dir + "/comparison.csv", out_dir + "/comparison.md",
                                            out_dir + "/comparison.svg"};
  write_file_atomic(written[0], csv);
  write_file_atomic(written[1], md);
  write_file_atomic(written[2], comparison_svg(c, run_dirs.size(), ne));
  std::cout << md;
  return written;
}

}  // namespace marlsched::cli
