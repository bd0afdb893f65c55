#include <gtest/gtest.h>

#include <fstream>

#include "core/error.hpp"
#include "geodc/geodc.hpp"
#include "geodc/traces.hpp"
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
