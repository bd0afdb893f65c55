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
#include "train/checkpoint.hpp"

namespace marlsched::cli {

using namespace report_util;

namespace {

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

}  // namespace marlsched::cli
