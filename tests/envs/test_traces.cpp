#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "envs/geodc/geodc.hpp"
#include "envs/geodc/traces.hpp"
#include "test_util.hpp"

using namespace marlsched;
using namespace marlsched::geodc;

namespace {
std::string write(const std::string& dir, const std::string& name, const std::string& text) {
  const std::string p = dir + "/" + name;
  std::ofstream(p, std::ios::binary) << text;
  return p;
}
const std::map<std::string, double> kFx = {{"EUR", 1.08}, {"SGD", 0.744}, {"JPY", 0.00712}};
}  // namespace

TEST(RealTraces, ElectricityMapsCarbonFiles) {
  const auto dir = test::shared_data();
  if (dir.empty()) GTEST_SKIP() << "../shared/data not present: real-trace loader test skipped";
  for (const std::string z : {"US-CAL-CISO", "DE-LU", "SG", "JP-TK"}) {
    const auto s = load_carbon_csv(dir + "/carbon_intensity/" + z + "_2023_hourly.csv");
    EXPECT_EQ(s.values.size(), 8760u) << z;
    EXPECT_EQ(s.start_hour * 3600, 1672531200) << z;  // 2023-01-01 00:00 UTC
    for (double v : s.values) ASSERT_GT(v, 0.0) << z;
  }
  const auto de = load_carbon_csv(dir + "/carbon_intensity/DE-LU_2023_hourly.csv");
  EXPECT_EQ(de.zone, "DE");
  EXPECT_DOUBLE_EQ(de.values[0], 185.8);  // LCA column of the first row
  const auto de_direct =
      load_carbon_csv(dir + "/carbon_intensity/DE-LU_2023_hourly.csv", CarbonColumn::kDirect);
  EXPECT_DOUBLE_EQ(de_direct.values[0], 140.51);
}

TEST(RealTraces, PriceFilesInFourCurrencies) {
  const auto dir = test::shared_data();
  if (dir.empty()) GTEST_SKIP() << "../shared/data not present: real-trace loader test skipped";
  const auto de =
      load_price_csv(dir + "/electricity_prices/DE-LU_electricity_prices_2023.csv", kFx);
  ASSERT_EQ(de.values.size(), 8760u);
  EXPECT_NEAR(de.values[0], -5.17 * 1.08, 1e-9);  // negative prices are real
  const auto ca =
      load_price_csv(dir + "/electricity_prices/US-CAL-CISO_electricity_prices_2023.csv", kFx);
  EXPECT_EQ(ca.values.size(), 8784u);
  EXPECT_NEAR(ca.values[0], 110.77982, 1e-9);
  const auto jp =
      load_price_csv(dir + "/electricity_prices/JP-TK_electricity_prices_2023.csv", kFx);
  EXPECT_NEAR(jp.values[0], 24900.0 * 0.00712, 1e-9);
  const auto sg = load_price_csv(dir + "/electricity_prices/SG_electricity_prices_2023.csv", kFx);
  EXPECT_NEAR(sg.values[0], 158.62 * 0.744, 1e-9);
  // Wrap-around lookup: one year later is the same hour.
  EXPECT_DOUBLE_EQ(de.at(de.start_hour + 8760 + 5), de.values[5]);
  EXPECT_THROW(load_price_csv(dir + "/electricity_prices/SG_electricity_prices_2023.csv", {}),
               ConfigError);
}

TEST(SyntheticTraces, WrittenFilesLoadBackInBothFormats) {
  const auto dir = test::temp_dir("synth");
  const auto& p = zone_profile("SG");
  const auto c = synth_carbon(p, 464592, 72, 5);
  const auto pr = synth_price(p, 464592, 72, 5);
  write_carbon_csv(dir + "/c.csv", c, "Singapore");
  write_price_csv(dir + "/p.csv", pr);
  const auto c2 = load_carbon_csv(dir + "/c.csv");
  const auto p2 = load_price_csv(dir + "/p.csv", {});
  ASSERT_EQ(c2.values.size(), 72u);
  EXPECT_EQ(c2.start_hour, 464592);
  for (int i = 0; i < 72; ++i) {
    EXPECT_NEAR(c2.values[static_cast<std::size_t>(i)], c.values[static_cast<std::size_t>(i)],
                0.006);
    EXPECT_NEAR(p2.values[static_cast<std::size_t>(i)], pr.values[static_cast<std::size_t>(i)],
                0.006);
  }
  // Every loaded value knows its file line (the header is line 1), wrapping like at().
  EXPECT_EQ(c2.where(464592), dir + "/c.csv:2");
  EXPECT_EQ(p2.where(464592 + 71), dir + "/p.csv:73");
  EXPECT_EQ(p2.where(464592 + 72), dir + "/p.csv:2");
  EXPECT_EQ(c.where(464592), "");  // synthetic
  // Calibration: the synthetic annual mean is near the 2023 mean of the zone.
  const auto year = synth_carbon(zone_profile("US-CAL-CISO"), 464592, 8760, 2023);
  EXPECT_NEAR(year.mean(464592, 8760), 260.7, 260.7 * 0.05);
  EXPECT_THROW(zone_profile("XX-NOWHERE"), ConfigError);
}

TEST(TraceErrors, NameFileAndLine) {
  const auto dir = test::temp_dir("badtraces");
  const std::string hdr =
      "Datetime (UTC),Country,Zone Name,Zone Id,Carbon Intensity gCO\xE2\x82\x82"
      "eq/kWh (direct),Carbon Intensity gCO\xE2\x82\x82"
      "eq/kWh (LCA)\n";
  auto gap =
      write(dir, "gap.csv", hdr + "2023-01-01 00:00:00,X,X,X,1,2\n2023-01-01 02:00:00,X,X,X,1,2\n");
  EXPECT_NE(test::input_error_of([&] { load_carbon_csv(gap); }).find("gap.csv:3: expected hourly"),
            std::string::npos);
  auto bad_ts = write(dir, "ts.csv", hdr + "2023-01-01 00:00:00,X,X,X,1,2\nnot-a-date,X,X,X,1,2\n");
  EXPECT_NE(
      test::input_error_of([&] { load_carbon_csv(bad_ts); }).find("ts.csv:3: unparsable timestamp"),
      std::string::npos);
  auto nan = write(dir, "nan.csv", hdr + "2023-01-01 00:00:00,X,X,X,1,nan\n");
  EXPECT_NE(test::input_error_of([&] { load_carbon_csv(nan); }).find("nan.csv:2: column 6"),
            std::string::npos);
  auto nocol = write(dir, "nocol.csv", "Datetime (UTC),Country\n2023-01-01 00:00:00,X\n");
  EXPECT_NE(
      test::input_error_of([&] { load_carbon_csv(nocol); }).find("missing carbon intensity column"),
      std::string::npos);
  auto short_row = write(dir, "short.csv", hdr + "2023-01-01 00:00:00,X,X\n");
  EXPECT_NE(test::input_error_of([&] { load_carbon_csv(short_row); }).find("short.csv:2"),
            std::string::npos);
  auto badprice = write(dir, "bp.csv", "Datetime,Cost\n2023-01-01 00:00:00,1\n");
  EXPECT_NE(test::input_error_of([&] { load_price_csv(badprice, {}); }).find("not a price CSV"),
            std::string::npos);
  EXPECT_NE(
      test::input_error_of([&] { load_carbon_csv(dir + "/missing.csv"); }).find("cannot open"),
      std::string::npos);
}

TEST(SyntheticTraces, CommittedDataIsWhatTheDefaultRunUses) {
  const char* src = std::getenv("MARLSCHED_SOURCE_DIR");
  ASSERT_NE(src, nullptr);
  geodc::Config cfg;
  const auto sites = geodc::load_sites(cfg, 4);
  for (std::size_t i = 0; i < cfg.sites.size(); ++i) {
    const std::string base = std::string(src) + "/data/generated/" + cfg.sites[i];
    const auto c = load_carbon_csv(base + "_synthetic_hourly.csv");
    const auto p = load_price_csv(base + "_synthetic_prices.csv", {});
    ASSERT_EQ(c.values.size(), 14u * 24u);
    for (std::size_t h = 0; h < c.values.size(); ++h) {
      ASSERT_NEAR(c.values[h], sites[i]->carbon.at(c.start_hour + static_cast<std::int64_t>(h)),
                  0.006);
      ASSERT_NEAR(p.values[h], sites[i]->price.at(p.start_hour + static_cast<std::int64_t>(h)),
                  0.006);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Real files as they come (issue 23): ISO 8601 clocks, repeated rows, missing hours. Each test
// writes a small file of one shape.

namespace {
const char* kCarbonHeader =
    "Datetime (UTC),Country,Zone Name,Zone Id,Carbon Intensity gCO\xE2\x82\x82"
    "eq/kWh (direct),Carbon Intensity gCO\xE2\x82\x82"
    "eq/kWh (LCA)\n";
/// A carbon file from (timestamp, LCA value) rows.
std::string carbon_file(const std::string& dir, const std::string& name,
                        const std::vector<std::pair<std::string, double>>& rows) {
  std::ostringstream o;
  o << kCarbonHeader;
  for (const auto& [ts, v] : rows) o << ts << ",X,X,X," << v << ',' << v << '\n';
  return write(dir, name, o.str());
}
constexpr std::int64_t kJan1 = 1672531200 / 3600;  // 2023-01-01 00:00 UTC, in hours
}  // namespace

TEST(TraceClocks, Iso8601OffsetsAreConvertedToUtc) {
  const auto dir = test::temp_dir("clocks");
  // An ISO/RTO export in local time with its offset (UTC-06:00): 00:00 local is 06:00 UTC.
  auto local = load_carbon_csv(carbon_file(
      dir, "local.csv", {{"2023-01-01 00:00:00-06:00", 1}, {"2023-01-01 01:00:00-06:00", 2}}));
  EXPECT_EQ(local.start_hour, kJan1 + 6);
  EXPECT_TRUE(local.has_offset);
  EXPECT_EQ(local.offset_minutes, -360);
  EXPECT_EQ(local.first_stamp, "2023-01-01 00:00:00-06:00");
  // 'T', 'Z', the basic format, ±HHMM and ±HH offsets, fractions: all the same hours.
  auto mixed = load_carbon_csv(carbon_file(dir, "mixed.csv",
                                           {{"2023-01-01T00:00:00Z", 1},
                                            {"20230101T010000Z", 2},
                                            {"2023-01-01T03:00+0100", 3},
                                            {"2023-01-01 12:00:00.000+09", 4},
                                            {"2023-01-01T04:00:00.5Z", 5}}));
  EXPECT_EQ(mixed.start_hour, kJan1);
  EXPECT_EQ(mixed.values, (std::vector<double>{1, 2, 3, 4, 5}));
  // A daylight-saving change written with offsets is no gap: 01:00-05:00 is followed by
  // 03:00-04:00 (2023-03-12 in the US Central zone), one hour later in UTC.
  auto dst = load_carbon_csv(carbon_file(
      dir, "dst.csv", {{"2023-03-12T01:00:00-06:00", 1}, {"2023-03-12T03:00:00-05:00", 2}}));
  EXPECT_EQ(dst.values.size(), 2u);
  // What stays refused: a date alone, an impossible date, a bad offset, text after the time.
  for (const std::string bad :
       {"2023-01-01", "2023-02-29 00:00", "2023-01-01 00:00+25:00", "2023-01-01 00:00 UTC"}) {
    const auto f = carbon_file(dir, "bad.csv", {{bad, 1}});
    EXPECT_NE(test::input_error_of([&] {
                load_carbon_csv(f);
              }).find("bad.csv:2: unparsable timestamp '" + bad + "' (expected ISO 8601"),
              std::string::npos)
        << bad;
  }
  const auto half = carbon_file(dir, "half.csv", {{"2023-01-01 00:00:00+05:30", 1}});
  EXPECT_NE(
      test::input_error_of([&] { load_carbon_csv(half); }).find("is not on the hour (in UTC)"),
      std::string::npos);
}

TEST(TraceClocks, AFileInLocalTimeThatMissesTraceStartSaysItsClockIsTheCause) {
  const auto dir = test::temp_dir("clock-coverage");
  std::vector<std::pair<std::string, double>> rows, naive;
  for (int h = 0; h < 72; ++h) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "2023-01-%02d %02d:00:00-05:00", 1 + h / 24, h % 24);
    rows.emplace_back(buf, 100 + h);
    std::snprintf(buf, sizeof buf, "2023-01-%02d %02d:00:00", 1 + (h + 5) / 24, (h + 5) % 24);
    naive.emplace_back(buf, 100 + h);
  }
  geodc::Config cfg;
  cfg.keep_sites(1);
  cfg.trace_days = 1;
  cfg.carbon_files = {carbon_file(dir, "local.csv", rows)};
  auto msg = test::input_error_of([&] { load_sites(cfg, 1); });
  EXPECT_NE(msg.find("local.csv covers 2023-01-01 05:00:00 to 2023-01-04 04:00:00 UTC; "
                     "--trace-start 2023-01-01 00:00:00 UTC is outside it. Its timestamps are "
                     "local time (UTC-05:00): its first, '2023-01-01 00:00:00-05:00', is "
                     "2023-01-01 05:00:00 UTC; or start at --trace-start '2023-01-01 05:00:00'"),
            std::string::npos)
      << msg;
  cfg.carbon_files = {carbon_file(dir, "naive.csv", naive)};
  msg = test::input_error_of([&] { load_sites(cfg, 1); });
  EXPECT_NE(msg.find("Its timestamps are read as UTC (they carry no offset); if the file is in "
                     "local time, write the offsets into its timestamps"),
            std::string::npos)
      << msg;
  // Starting where the file starts works.
  cfg.trace_start = "2023-01-01T00:00-05:00";
  cfg.carbon_files = {carbon_file(dir, "local.csv", rows)};
  EXPECT_EQ(load_sites(cfg, 1).at(0)->carbon.start_hour, kJan1 + 5);
}

TEST(TraceRepairs, StrictByDefaultEachDefectNamesTheRepairThatMendsIt) {
  const auto dir = test::temp_dir("repairs-strict");
  // A row repeated at 00:00 of a month, as monthly exports concatenated give.
  const auto dup = carbon_file(dir, "dup.csv",
                               {{"2023-01-31 23:00:00", 1},
                                {"2023-02-01 00:00:00", 2},
                                {"2023-02-01 00:00:00", 2},
                                {"2023-02-01 01:00:00", 3}});
  EXPECT_NE(test::input_error_of([&] { load_carbon_csv(dup); })
                .find("dup.csv:4: the hour 2023-02-01 00:00:00 UTC again, with the same value as "
                      "line 3 (--trace-repair drop-duplicates drops such repeats)"),
            std::string::npos);
  // Local time without offsets: the autumn hour twice with two values, the spring hour missing.
  const auto conflict = carbon_file(
      dir, "conflict.csv",
      {{"2023-11-05 00:00:00", 1}, {"2023-11-05 01:00:00", 2}, {"2023-11-05 01:00:00", 4}});
  EXPECT_NE(test::input_error_of([&] { load_carbon_csv(conflict); })
                .find("conflict.csv:4: the hour 2023-11-05 01:00:00 UTC again, with another value "
                      "(2 at line 3, 4 here; --trace-repair average-duplicates takes their mean)"),
            std::string::npos);
  const auto gap =
      carbon_file(dir, "gap.csv", {{"2023-03-12 01:00:00", 1}, {"2023-03-12 03:00:00", 3}});
  EXPECT_NE(test::input_error_of([&] { load_carbon_csv(gap); })
                .find("gap.csv:3: expected hourly timestamps, got 2023-03-12 03:00:00 after "
                      "2023-03-12 01:00:00 UTC (a gap of 1 missing hour; --trace-repair "
                      "fill-gaps fills it)"),
            std::string::npos);
  const auto back =
      carbon_file(dir, "back.csv", {{"2023-03-12 03:00:00", 1}, {"2023-03-12 01:00:00", 3}});
  EXPECT_NE(test::input_error_of([&] { load_carbon_csv(back); }).find("(not increasing)"),
            std::string::npos);
  EXPECT_THROW(TraceRepair::parse({"fill-everything"}), ConfigError);
  EXPECT_FALSE(TraceRepair::parse({"none"}).any());
}

TEST(TraceRepairs, OptInRepairsMendWhatTheySayAndReportIt) {
  const auto dir = test::temp_dir("repairs");
  const auto messy = carbon_file(dir, "messy.csv",
                                 {{"2023-01-31 23:00:00", 10},    // line 2
                                  {"2023-02-01 00:00:00", 20},    // 3
                                  {"2023-02-01 00:00:00", 20},    // 4: exact repeat
                                  {"2023-02-01 01:00:00", 30},    // 5
                                  {"2023-02-01 03:00:00", 50},    // 6: 02:00 missing
                                  {"2023-02-01 04:00:00", 60},    // 7
                                  {"2023-02-01 04:00:00", 80},    // 8: conflicting repeat
                                  {"2023-02-01 05:00:00", 70},    // 9
                                  {"2023-02-01 05:00:00", 70}});  // 10: exact repeat
  TraceRepair all;
  all.drop_duplicates = all.average_duplicates = all.fill_gaps = true;
  const auto s = load_carbon_csv(messy, CarbonColumn::kLifecycle, all);
  EXPECT_EQ(s.values, (std::vector<double>{10, 20, 30, 40, 50, 70, 70}));
  EXPECT_EQ(s.lines, (std::vector<int>{2, 3, 5, 6, 6, 7, 9}));
  EXPECT_EQ(s.repairs,
            "dropped 2 repeated rows (first at line 4), averaged 1 row that repeated an hour with "
            "another value (line 8), filled 1 missing hour (line 6)");
  // Each repair alone mends its own defect and refuses the others.
  TraceRepair drop;
  drop.drop_duplicates = true;
  EXPECT_NE(test::input_error_of([&] {
              load_carbon_csv(messy, CarbonColumn::kLifecycle, drop);
            }).find("messy.csv:6: expected hourly"),
            std::string::npos);
  TraceRepair fill;
  fill.fill_gaps = true;
  EXPECT_NE(test::input_error_of([&] {
              load_carbon_csv(messy, CarbonColumn::kLifecycle, fill);
            }).find("messy.csv:4: the hour"),
            std::string::npos);
  // Two missing hours are refused even with fill-gaps.
  const auto wide =
      carbon_file(dir, "wide.csv", {{"2023-01-01 00:00:00", 1}, {"2023-01-01 03:00:00", 4}});
  const auto msg =
      test::input_error_of([&] { load_carbon_csv(wide, CarbonColumn::kLifecycle, all); });
  EXPECT_NE(msg.find("wide.csv:3: expected hourly timestamps, got 2023-01-01 03:00:00 after "
                     "2023-01-01 00:00:00 UTC (a gap of 2 missing hours)"),
            std::string::npos)
      << msg;
  // A clean file under a repair policy says so.
  const auto clean =
      carbon_file(dir, "clean.csv", {{"2023-01-01 00:00:00", 1}, {"2023-01-01 01:00:00", 2}});
  EXPECT_EQ(load_carbon_csv(clean, CarbonColumn::kLifecycle, all).repairs, "nothing to repair");
  EXPECT_EQ(load_carbon_csv(clean).repairs, "");
}

TEST(TraceCurrencies, BuiltInRatesAndAMissingOneListsTheKnown) {
  const auto dir = test::temp_dir("fx");
  const auto gbp = write(dir, "gbp.csv", "Datetime,Price (GBP/MWh)\n2023-01-01 00:00:00,100\n");
  EXPECT_NEAR(load_price_csv(gbp, builtin_fx()).values[0], 100 * builtin_fx().at("GBP"), 1e-9);
  EXPECT_EQ(load_price_csv(gbp, builtin_fx()).currency, "GBP");
  const auto xyz = write(dir, "xyz.csv", "Datetime,Price (XYZ/MWh)\n2023-01-01 00:00:00,100\n");
  try {
    load_price_csv(xyz, {{"EUR", 1.08}, {"GBP", 1.24}});
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("prices are in XYZ, which has no exchange rate (known: "
                                         "USD, EUR, GBP); give one with --fx XYZ=<USD per XYZ>"),
              std::string::npos)
        << e.what();
  }
  // The calibration rates of the synthetic profiles stay the built-in ones.
  EXPECT_EQ(builtin_fx().at("EUR"), 1.08);
  EXPECT_EQ(builtin_fx().at("SGD"), 0.744);
  EXPECT_EQ(builtin_fx().at("JPY"), 0.00712);
}
