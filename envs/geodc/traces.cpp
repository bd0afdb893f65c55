#include "geodc/traces.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>

#include "core/csv.hpp"
#include "core/error.hpp"
#include "core/rng.hpp"

namespace marlsched::geodc {

double HourlySeries::at(std::int64_t epoch_hour) const {
  const auto n = static_cast<std::int64_t>(values.size());
  std::int64_t i = (epoch_hour - start_hour) % n;
  if (i < 0) i += n;
  return values[static_cast<std::size_t>(i)];
}

std::string HourlySeries::where(std::int64_t epoch_hour) const {
  if (lines.size() != values.size() || values.empty()) return {};
  const auto n = static_cast<std::int64_t>(values.size());
  std::int64_t i = (epoch_hour - start_hour) % n;
  if (i < 0) i += n;
  return source + ":" + std::to_string(lines[static_cast<std::size_t>(i)]);
}

double HourlySeries::mean(std::int64_t epoch_hour, int n) const {
  double s = 0.0;
  for (int k = 0; k < n; ++k) s += at(epoch_hour + k);
  return n > 0 ? s / n : 0.0;
}

namespace {

/// Reads the timestamp column and checks hourly spacing.
std::int64_t read_hours(const csv::Table& t, int col, std::vector<double>& values,
                        std::vector<int>& lines, int vcol, bool allow_negative) {
  std::int64_t start = 0, prev = 0;
  values.reserve(t.rows.size());
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const int line = t.line_numbers[r];
    if (static_cast<int>(t.rows[r].size()) <= std::max(col, vcol))
      MARLSCHED_THROW(InputError, t.path << ":" << line << ": expected at least "
                                         << std::max(col, vcol) + 1 << " columns, found "
                                         << t.rows[r].size());
    std::int64_t secs = 0;
    if (!csv::parse_datetime(t.rows[r][static_cast<std::size_t>(col)], secs))
      MARLSCHED_THROW(InputError, t.path << ":" << line << ": unparsable timestamp '"
                                         << t.rows[r][static_cast<std::size_t>(col)] << "'");
    if (secs % 3600 != 0)
      MARLSCHED_THROW(InputError, t.path << ":" << line << ": timestamp is not on the hour");
    const std::int64_t h = secs / 3600;
    if (r == 0) {
      start = h;
    } else if (h != prev + 1) {
      MARLSCHED_THROW(InputError, t.path << ":" << line << ": expected hourly timestamps, got "
                                         << t.rows[r][static_cast<std::size_t>(col)] << " after "
                                         << csv::format_datetime(prev * 3600)
                                         << (h <= prev ? " (not increasing)" : " (gap)"));
    }
    prev = h;
    const double v = csv::parse_double(t, r, static_cast<std::size_t>(vcol));
    if (!allow_negative && v < 0)
      MARLSCHED_THROW(InputError, t.path << ":" << line << ": negative value " << v);
    values.push_back(v);
    lines.push_back(line);
  }
  if (values.empty()) MARLSCHED_THROW(InputError, t.path << ": no data rows");
  return start;
}

}  // namespace

HourlySeries load_carbon_csv(const std::string& path, CarbonColumn column) {
  const auto t = csv::read(path, true);
  const int tcol = csv::find_column(t.header, {"datetime"});
  int vcol = -1;
  if (column == CarbonColumn::kLifecycle) {
    vcol = csv::find_column(t.header, {"carbon intensity", "lca"});
    if (vcol < 0) vcol = csv::find_column(t.header, {"carbon intensity", "life cycle"});
  } else {
    vcol = csv::find_column(t.header, {"carbon intensity", "direct"});
  }
  if (tcol < 0 || vcol < 0)
    MARLSCHED_THROW(InputError, path << ":1: not an Electricity Maps hourly CSV: missing "
                                     << (tcol < 0 ? "'Datetime (UTC)'" : "carbon intensity")
                                     << " column");
  HourlySeries s;
  s.unit = "gCO2eq/kWh";
  s.start_hour = read_hours(t, tcol, s.values, s.lines, vcol, false);
  s.source = path;
  const int zcol = csv::find_column(t.header, {"zone id"});
  if (zcol >= 0 && !t.rows.empty() && static_cast<int>(t.rows[0].size()) > zcol)
    s.zone = t.rows[0][static_cast<std::size_t>(zcol)];
  return s;
}

HourlySeries load_price_csv(const std::string& path,
                            const std::map<std::string, double>& fx_to_usd) {
  const auto t = csv::read(path, true);
  const int tcol = csv::find_column(t.header, {"datetime"});
  const int vcol = csv::find_column(t.header, {"price", "mwh"});
  if (tcol < 0 || vcol < 0)
    MARLSCHED_THROW(InputError, path << ":1: not a price CSV: expected columns 'Datetime' and "
                                        "'Price (CUR/MWh)', found '"
                                     << (t.header.empty() ? "" : t.header[0]) << "...'");
  const std::string& h = t.header[static_cast<std::size_t>(vcol)];
  const auto open = h.find('('), slash = h.find('/');
  if (open == std::string::npos || slash == std::string::npos || slash < open)
    MARLSCHED_THROW(InputError, path << ":1: cannot read the currency in '" << h << "'");
  const std::string cur = h.substr(open + 1, slash - open - 1);
  double fx = 1.0;
  if (cur != "USD") {
    const auto it = fx_to_usd.find(cur);
    if (it == fx_to_usd.end())
      MARLSCHED_THROW(ConfigError, path << ": prices are in " << cur
                                        << " but no exchange rate is configured (--fx " << cur
                                        << "=<USD per " << cur << ">)");
    fx = it->second;
  }
  HourlySeries s;
  s.unit = "USD/MWh";
  s.start_hour = read_hours(t, tcol, s.values, s.lines, vcol, true);
  s.source = path;
  for (auto& v : s.values) v *= fx;
  return s;
}

namespace {
const std::vector<ZoneProfile>& profiles() {
  // Calibrated on the 2023 files of Green-DCC (Electricity Maps LCA intensity; day-ahead prices
  // converted at 1 EUR = 1.08 USD, 1 SGD = 0.744 USD, 1 JPY = 0.00712 USD). See data/README.md.
  static const std::vector<ZoneProfile> p = {
      {"US-CAL-CISO", 260.7, 0.235, 21, 0.20, 61.5, 0.44, 2, 0.45},
      {"DE-LU", 367.0, 0.163, 11, 0.30, 102.8, 0.35, 19, 0.40},
      {"SG", 488.1, 0.024, 4, 0.015, 184.2, 0.60, 17, 0.60},
      {"JP-TK", 539.7, 0.173, 3, 0.10, 95.7, 0.30, 18, 0.30},
  };
  return p;
}

HourlySeries synth(double mean, double amp, double phase_hour, double noise, std::int64_t start,
                   int hours, std::uint64_t seed, double floor_frac) {
  Rng rng(seed);
  HourlySeries s;
  s.start_hour = start;
  s.values.resize(static_cast<std::size_t>(hours));
  double ar = 0.0;
  const double innov = noise * std::sqrt(1.0 - 0.9 * 0.9);
  for (int i = 0; i < hours; ++i) {
    const double hour_utc = static_cast<double>((start + i) % 24);
    ar = 0.9 * ar + innov * rng.normal();
    const double shape = 1.0 + amp * std::cos(6.283185307179586 * (hour_utc - phase_hour) / 24.0);
    s.values[static_cast<std::size_t>(i)] = std::max(floor_frac * mean, mean * shape * (1.0 + ar));
  }
  return s;
}
}  // namespace

const ZoneProfile& zone_profile(const std::string& zone) {
  for (const auto& p : profiles())
    if (p.zone == zone) return p;
  std::string known;
  for (const auto& p : profiles()) known += (known.empty() ? "" : ", ") + p.zone;
  MARLSCHED_THROW(ConfigError, "no built-in synthetic trace profile for zone '"
                                   << zone << "' (known: " << known
                                   << "); give --carbon-files and --price-files instead");
}

std::vector<std::string> builtin_zones() {
  std::vector<std::string> z;
  for (const auto& p : profiles()) z.push_back(p.zone);
  return z;
}

HourlySeries synth_carbon(const ZoneProfile& p, std::int64_t start_hour, int hours,
                          std::uint64_t seed) {
  // cos peaks at phase; the carbon minimum is 12 h away from the peak.
  auto s = synth(p.ci_mean, p.ci_amp, p.ci_min_hour_utc + 12.0, p.ci_noise, start_hour, hours,
                 derive_seed(seed, {1}), 0.05);
  s.zone = p.zone;
  s.unit = "gCO2eq/kWh";
  return s;
}

HourlySeries synth_price(const ZoneProfile& p, std::int64_t start_hour, int hours,
                         std::uint64_t seed) {
  auto s = synth(p.price_mean_usd, p.price_amp, p.price_peak_hour_utc, p.price_noise, start_hour,
                 hours, derive_seed(seed, {2}), 0.0);
  s.zone = p.zone;
  s.unit = "USD/MWh";
  return s;
}

void write_carbon_csv(const std::string& path, const HourlySeries& s, const std::string& country) {
  std::ofstream out(path, std::ios::binary);
  if (!out) MARLSCHED_THROW(InputError, "cannot write '" << path << "'");
  out << "Datetime (UTC),Country,Zone Name,Zone Id,Carbon Intensity gCO\xE2\x82\x82"
         "eq/kWh (direct),Carbon Intensity gCO\xE2\x82\x82"
         "eq/kWh (LCA),Low Carbon Percentage,Renewable Percentage,Data Source,Data Estimated,"
         "Data Estimation Method\n";
  out << std::fixed << std::setprecision(2);
  for (std::size_t i = 0; i < s.values.size(); ++i)
    out << csv::format_datetime((s.start_hour + static_cast<std::int64_t>(i)) * 3600) << ','
        << country << ',' << s.zone << ',' << s.zone << ',' << s.values[i] << ',' << s.values[i]
        << ",,,marlsched synthetic,true,SYNTHETIC\n";
}

void write_price_csv(const std::string& path, const HourlySeries& s) {
  std::ofstream out(path, std::ios::binary);
  if (!out) MARLSCHED_THROW(InputError, "cannot write '" << path << "'");
  out << "Datetime,Price (USD/MWh)\n" << std::fixed << std::setprecision(2);
  for (std::size_t i = 0; i < s.values.size(); ++i)
    out << csv::format_datetime((s.start_hour + static_cast<std::int64_t>(i)) * 3600) << ','
        << s.values[i] << '\n';
}

}  // namespace marlsched::geodc
