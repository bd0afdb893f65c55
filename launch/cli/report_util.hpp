#pragma once
/// \file report_util.hpp
/// What `marlsched report` and `marlsched compare` share: CSV tables read back, number
/// formatting, and the SVG pieces (axes, ticks, line panels) of their figures.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"

namespace marlsched::cli::report_util {

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

inline std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, ',')) out.push_back(cell);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

inline Table read_csv(const std::string& path) {
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

inline std::string fmt(double v) {
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

inline std::string esc(const std::string& s) {
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
inline std::vector<double> ticks(double lo, double hi) {
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
inline std::pair<double, double> range_of(const std::vector<double>& v, bool include_zero) {
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
inline constexpr const char* kBlue = "#1f77b4";
inline constexpr const char* kOrange = "#ff7f0e";
inline constexpr const char* kGrey = "#7f7f7f";

/// One line-chart panel at (ox, oy): y against x.
inline void line_panel(std::ostringstream& s, int ox, int oy, const std::string& title,
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

inline std::string svg_open(int w, int h, const std::string& title) {
  std::ostringstream s;
  s << "<svg xmlns='http://www.w3.org/2000/svg' width='" << w << "' height='" << h
    << "' viewBox='0 0 " << w << " " << h << "' font-family='DejaVu Sans, Arial, sans-serif'>\n"
    << "<rect width='100%' height='100%' fill='white'/>\n<text x='" << w / 2
    << "' y='24' text-anchor='middle' font-size='17' font-weight='bold'>" << esc(title)
    << "</text>\n";
  return s.str();
}

}  // namespace marlsched::cli::report_util
