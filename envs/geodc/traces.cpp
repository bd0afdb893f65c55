#include "envs/geodc/traces.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "core/csv.hpp"
#include "core/error.hpp"
#include "core/file.hpp"
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

/// A kind of repair: how often it happened and the file line of its first use.
struct RepairCount {
  int n = 0, first_line = 0;
  void add(int line) {
    if (n++ == 0) first_line = line;
  }
  std::string text(const char* one, const char* many) const {
    std::ostringstream o;
    o << n << ' ' << (n == 1 ? one : many) << " (" << (n == 1 ? "line " : "first at line ")
      << first_line << ")";
    return o.str();
  }
};

/// Whether row r + 1 of `t` holds an hour (column `col`) before `h`.
bool next_hour_before(const csv::Table& t, int col, std::size_t r, std::int64_t h) {
  const auto& row = t.rows[r + 1];
  if (static_cast<int>(row.size()) <= col) return false;
  const auto ts = csv::parse_timestamp(row[static_cast<std::size_t>(col)]);
  return ts && ts->utc_seconds / 3600 < h;
}

/// Reads the timestamp and value columns into `s`: on-the-hour, strictly hourly timestamps,
/// except what `repair` mends (recorded in s.repairs).
void read_hours(const csv::Table& t, int col, int vcol, bool allow_negative,
                const TraceRepair& repair, HourlySeries& s) {
  std::int64_t prev = 0;
  double raw_prev = 0.0, hour_sum = 0.0;  // the previous row's value; the sum of its hour's
  int hour_rows = 0, prev_line = 0;       // rows (for averaging) and their count
  RepairCount dropped, averaged, filled;
  s.values.reserve(t.rows.size());
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const int line = t.line_numbers[r];
    if (static_cast<int>(t.rows[r].size()) <= std::max(col, vcol))
      MARLSCHED_THROW(InputError, t.path << ":" << line << ": expected at least "
                                         << std::max(col, vcol) + 1 << " columns, found "
                                         << t.rows[r].size());
    const std::string& stamp = t.rows[r][static_cast<std::size_t>(col)];
    const auto ts = csv::parse_timestamp(stamp);
    if (!ts)
      MARLSCHED_THROW(InputError, t.path
                                      << ":" << line << ": unparsable timestamp '" << stamp
                                      << "' (expected ISO 8601, e.g. '2023-01-01 00:00:00', "
                                         "'2023-01-01T00:00:00Z' or '2023-01-01 00:00:00-06:00')");
    if (ts->utc_seconds % 3600 != 0)
      MARLSCHED_THROW(InputError, t.path << ":" << line << ": timestamp '" << stamp
                                         << "' is not on the hour (in UTC)");
    const std::int64_t h = ts->utc_seconds / 3600;
    const double v = csv::parse_double(t, r, static_cast<std::size_t>(vcol));
    if (!allow_negative && v < 0)
      MARLSCHED_THROW(InputError, t.path << ":" << line << ": negative value " << v);
    const auto utc = [](std::int64_t hour) { return csv::format_datetime(hour * 3600) + " UTC"; };
    if (r == 0) {
      s.start_hour = h;
      s.has_offset = ts->has_offset;
      s.offset_minutes = ts->offset_minutes;
      s.first_stamp = stamp;
    } else if (h == prev) {  // the same hour again
      if (v == raw_prev && (repair.drop_duplicates || repair.average_duplicates)) {
        dropped.add(line);
        prev_line = line;
        continue;
      }
      if (v != raw_prev && repair.average_duplicates) {
        hour_sum += v;
        s.values.back() = hour_sum / ++hour_rows;
        averaged.add(line);
        raw_prev = v;
        prev_line = line;
        continue;
      }
      if (v == raw_prev)
        MARLSCHED_THROW(InputError, t.path << ":" << line << ": the hour " << utc(h)
                                           << " again, with the same value as line " << prev_line
                                           << " (--trace-repair drop-duplicates drops such "
                                              "repeats)");
      MARLSCHED_THROW(InputError, t.path << ":" << line << ": the hour " << utc(h)
                                         << " again, with another value (" << raw_prev
                                         << " at line " << prev_line << ", " << v
                                         << " here; --trace-repair average-duplicates takes "
                                            "their mean)");
    } else if (h > prev + 1 && r + 1 < t.rows.size() && next_hour_before(t, col, r, h)) {
      // The "missing" hour comes later: rows out of order, not a gap (no repair fills that).
      MARLSCHED_THROW(InputError, t.path << ":" << line << ": rows out of time order: " << stamp
                                         << " comes before the earlier "
                                         << t.rows[r + 1][static_cast<std::size_t>(col)]
                                         << " at line " << t.line_numbers[r + 1]
                                         << "; sort the file by time");
    } else if (h == prev + 2 && repair.fill_gaps) {  // one missing hour: the mean of its sides
      s.values.push_back(0.5 * (s.values.back() + v));
      s.lines.push_back(line);
      filled.add(line);
    } else if (h != prev + 1) {
      MARLSCHED_THROW(InputError,
                      t.path << ":" << line << ": expected hourly timestamps, got " << stamp
                             << " after " << utc(prev)
                             << (h < prev ? " (not increasing)"
                                          : " (a gap of " + std::to_string(h - prev - 1) +
                                                " missing hour" + (h - prev - 1 == 1 ? "" : "s") +
                                                (h - prev - 1 == 1 && !repair.fill_gaps
                                                     ? "; --trace-repair fill-gaps fills it)"
                                                     : ")")));
    }
    prev = h;
    raw_prev = v;
    prev_line = line;
    hour_sum = v;
    hour_rows = 1;
    s.values.push_back(v);
    s.lines.push_back(line);
  }
  if (s.values.empty()) MARLSCHED_THROW(InputError, t.path << ": no data rows");
  std::vector<std::string> parts;
  if (dropped.n > 0) parts.push_back("dropped " + dropped.text("repeated row", "repeated rows"));
  if (averaged.n > 0)
    parts.push_back("averaged " + averaged.text("row that repeated an hour with another value",
                                                "rows that repeated an hour with another value"));
  if (filled.n > 0) parts.push_back("filled " + filled.text("missing hour", "missing hours"));
  if (repair.any()) {
    s.repairs = parts.empty() ? "nothing to repair" : "";
    for (std::size_t i = 0; i < parts.size(); ++i) s.repairs += (i ? ", " : "") + parts[i];
  }
}

}  // namespace

TraceRepair TraceRepair::parse(const std::vector<std::string>& names) {
  TraceRepair r;
  if (std::find(names.begin(), names.end(), "none") != names.end() && names.size() > 1)
    MARLSCHED_THROW(ConfigError,
                    "--trace-repair: 'none' (strict reading) does not go with "
                    "repairs; give either none or the repairs");
  for (const auto& n : names) {
    if (n == "drop-duplicates")
      r.drop_duplicates = true;
    else if (n == "average-duplicates")
      r.average_duplicates = true;
    else if (n == "fill-gaps")
      r.fill_gaps = true;
    else if (n != "none")
      MARLSCHED_THROW(ConfigError, "--trace-repair: unknown repair '"
                                       << n
                                       << "' (known: drop-duplicates, average-duplicates, "
                                          "fill-gaps; none for strict reading)");
  }
  return r;
}

HourlySeries load_carbon_csv(const std::string& path, CarbonColumn column,
                             const TraceRepair& repair) {
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
  read_hours(t, tcol, vcol, false, repair, s);
  s.source = path;
  const int zcol = csv::find_column(t.header, {"zone id"});
  if (zcol >= 0 && !t.rows.empty() && static_cast<int>(t.rows[0].size()) > zcol)
    s.zone = t.rows[0][static_cast<std::size_t>(zcol)];
  return s;
}

const std::map<std::string, double>& builtin_fx() {
  // Annual means of 2023 daily reference rates, rounded to 3 or 4 significant figures; EUR, SGD
  // and JPY are the rates the synthetic profiles were calibrated with (see zone profiles).
  static const std::map<std::string, double> fx = {
      {"AUD", 0.664},   {"BGN", 0.553},   {"BRL", 0.200},   {"CAD", 0.741},   {"CHF", 1.113},
      {"CLP", 0.00119}, {"CNY", 0.1412},  {"CZK", 0.0451},  {"DKK", 0.1451},  {"EUR", 1.08},
      {"GBP", 1.244},   {"HUF", 0.00283}, {"INR", 0.01211}, {"JPY", 0.00712}, {"KRW", 0.000766},
      {"MXN", 0.0564},  {"NOK", 0.0947},  {"NZD", 0.614},   {"PLN", 0.238},   {"RON", 0.2186},
      {"SEK", 0.0943},  {"SGD", 0.744},   {"TWD", 0.0321},  {"ZAR", 0.0542}};
  return fx;
}

HourlySeries load_price_csv(const std::string& path, const std::map<std::string, double>& fx_to_usd,
                            const TraceRepair& repair) {
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
    if (it == fx_to_usd.end()) {
      std::string known;
      for (const auto& [c, rate] : fx_to_usd) known += (known.empty() ? "" : ", ") + c;
      MARLSCHED_THROW(ConfigError, path << ": prices are in " << cur
                                        << ", which has no exchange rate (known: USD"
                                        << (known.empty() ? "" : ", " + known)
                                        << "); give one with --fx " << cur << "=<USD per " << cur
                                        << ">");
    }
    fx = it->second;
  }
  HourlySeries s;
  s.unit = "USD/MWh";
  read_hours(t, tcol, vcol, true, repair, s);
  s.source = path;
  s.currency = cur;
  s.to_usd = fx;
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
  std::ostringstream out;  // written at once (write_file_atomic: checked, never through a link)
  out << "Datetime (UTC),Country,Zone Name,Zone Id,Carbon Intensity gCO\xE2\x82\x82"
         "eq/kWh (direct),Carbon Intensity gCO\xE2\x82\x82"
         "eq/kWh (LCA),Low Carbon Percentage,Renewable Percentage,Data Source,Data Estimated,"
         "Data Estimation Method\n";
  out << std::fixed << std::setprecision(2);
  for (std::size_t i = 0; i < s.values.size(); ++i)
    out << csv::format_datetime((s.start_hour + static_cast<std::int64_t>(i)) * 3600) << ','
        << country << ',' << s.zone << ',' << s.zone << ',' << s.values[i] << ',' << s.values[i]
        << ",,,marlsched synthetic,true,SYNTHETIC\n";
  write_file_atomic(path, out.str());
}

void write_price_csv(const std::string& path, const HourlySeries& s) {
  std::ostringstream out;  // written at once (write_file_atomic: checked, never through a link)
  out << "Datetime,Price (USD/MWh)\n" << std::fixed << std::setprecision(2);
  for (std::size_t i = 0; i < s.values.size(); ++i)
    out << csv::format_datetime((s.start_hour + static_cast<std::int64_t>(i)) * 3600) << ','
        << s.values[i] << '\n';
  write_file_atomic(path, out.str());
}

}  // namespace marlsched::geodc
