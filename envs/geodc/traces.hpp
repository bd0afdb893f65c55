#pragma once
/// \file traces.hpp
/// Hourly exogenous traces of a grid zone: carbon intensity (gCO2eq/kWh) and electricity price
/// (USD/MWh). Loaders read the public formats (Electricity Maps hourly export; day-ahead price
/// files as published by Green-DCC); a generator makes synthetic traces calibrated on 2023 data
/// so that the default run needs no file from outside.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace marlsched::geodc {

/// An hourly series. Timestamps are taken as UTC; lookups wrap around the series length so one
/// year of data can drive any number of episodes.
struct HourlySeries {
  std::string zone;
  std::string unit;
  std::int64_t start_hour = 0;  ///< hours since the Unix epoch of values[0]
  std::vector<double> values;
  std::string source;      ///< the file it was read from ("" when synthetic)
  std::vector<int> lines;  ///< the file line of each value (empty when synthetic)
  /// How the file's clock was written: whether its first timestamp had a UTC offset, the offset,
  /// and the timestamp as written (for messages about coverage).
  bool has_offset = false;
  int offset_minutes = 0;
  std::string first_stamp;
  /// What --trace-repair changed, as one phrase ("" when it changed nothing or was off).
  std::string repairs;
  /// A price file's currency and the USD per unit its values were multiplied by.
  std::string currency;
  double to_usd = 1.0;

  /// Value at an absolute epoch hour (wraps around).
  double at(std::int64_t epoch_hour) const;
  /// "FILE:LINE" of the value at an absolute epoch hour (wraps around); "" when synthetic.
  std::string where(std::int64_t epoch_hour) const;
  /// Mean of the `n` hours starting at `epoch_hour`.
  double mean(std::int64_t epoch_hour, int n) const;
};

/// Opt-in repairs of the defects real hourly files have (--trace-repair). Off by default: then a
/// repeated hour, a missing hour or a step back in time stops the run with the file and line.
struct TraceRepair {
  bool drop_duplicates = false;     ///< an hour repeated with the same value: the repeat is dropped
  bool average_duplicates = false;  ///< repeated with other values: their mean (drops exact ones)
  bool fill_gaps = false;           ///< one missing hour: the mean of the hours either side

  /// From the names drop-duplicates, average-duplicates, fill-gaps (none: strict); throws
  /// ConfigError naming an unknown one.
  static TraceRepair parse(const std::vector<std::string>& names);
  bool any() const { return drop_duplicates || average_duplicates || fill_gaps; }
};

/// Which Electricity Maps intensity column to use.
enum class CarbonColumn { kLifecycle, kDirect };

/// Reads an Electricity Maps hourly CSV (both the older "Carbon Intensity gCO₂eq/kWh (LCA)" and
/// the newer "Carbon intensity gCO₂eq/kWh (Life cycle)" headers). Timestamps are ISO 8601
/// (csv::parse_timestamp: with an offset they are converted to UTC, without one they are read as
/// UTC). Requires on-the-hour, strictly hourly, increasing timestamps, except what `repair`
/// allows, and finite non-negative values; errors name file and line.
HourlySeries load_carbon_csv(const std::string& path,
                             CarbonColumn column = CarbonColumn::kLifecycle,
                             const TraceRepair& repair = {});

/// Reads a price CSV with columns `Datetime,Price (CUR/MWh)` (also `Datetime (UTC)` first).
/// Prices are converted to USD with `fx_to_usd` (currency code -> USD per unit); USD needs none;
/// a currency without a rate is a ConfigError that lists the known ones. Negative prices are
/// legal (they occur in DE-LU); non-finite ones are not.
HourlySeries load_price_csv(const std::string& path, const std::map<std::string, double>& fx_to_usd,
                            const TraceRepair& repair = {});

/// Built-in exchange rates, USD per unit of the currencies of the day-ahead markets in
/// Electricity Maps' zones (2023 annual means, rounded; --fx overrides or adds any).
const std::map<std::string, double>& builtin_fx();

/// Parameters of the synthetic generator for one zone, calibrated on the zone's 2023 hourly data
/// (Electricity Maps LCA intensity and day-ahead prices): annual mean, half peak-to-trough of the
/// mean diurnal profile relative to the mean, the UTC hour of the diurnal minimum (carbon) or
/// maximum (price), and the relative standard deviation of the residual.
struct ZoneProfile {
  std::string zone;
  double ci_mean, ci_amp, ci_min_hour_utc, ci_noise;
  double price_mean_usd, price_amp, price_peak_hour_utc, price_noise;
};

/// Built-in profiles (US-CAL-CISO, DE-LU, SG, JP-TK); throws ConfigError for another zone.
const ZoneProfile& zone_profile(const std::string& zone);
std::vector<std::string> builtin_zones();

/// Synthetic carbon intensity: mean * (1 + amp * cos(2π(h - h_min - 12)/24)) * (1 + AR(1) noise),
/// AR coefficient 0.9 (hour to hour), clipped at 5% of the mean.
HourlySeries synth_carbon(const ZoneProfile& p, std::int64_t start_hour, int hours,
                          std::uint64_t seed);
/// Synthetic price, same shape with the peak at `price_peak_hour_utc`, floored at 0.
HourlySeries synth_price(const ZoneProfile& p, std::int64_t start_hour, int hours,
                         std::uint64_t seed);

/// Writes a series in the Electricity Maps hourly format (both intensity columns get the value).
void write_carbon_csv(const std::string& path, const HourlySeries& s, const std::string& country);
/// Writes a series as `Datetime,Price (USD/MWh)`.
void write_price_csv(const std::string& path, const HourlySeries& s);

}  // namespace marlsched::geodc
