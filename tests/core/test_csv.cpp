#include <gtest/gtest.h>

#include "core/csv.hpp"
#include "core/error.hpp"

using namespace marlsched;

TEST(Csv, SplitHandlesQuotesAndCrlf) {
  auto f = csv::split("a,\"b,c\",\"say \"\"hi\"\"\",,e\r");
  ASSERT_EQ(f.size(), 5u);
  EXPECT_EQ(f[0], "a");
  EXPECT_EQ(f[1], "b,c");
  EXPECT_EQ(f[2], "say \"hi\"");
  EXPECT_EQ(f[3], "");
  EXPECT_EQ(f[4], "e");
}

TEST(Csv, DatetimeRoundTrip) {
  std::int64_t t = 0;
  ASSERT_TRUE(csv::parse_datetime("2023-01-01 00:00:00", t));
  EXPECT_EQ(t, 1672531200);
  EXPECT_EQ(csv::format_datetime(t), "2023-01-01 00:00:00");
  ASSERT_TRUE(csv::parse_datetime("2024-02-29T13:45Z", t));
  EXPECT_EQ(csv::format_datetime(t), "2024-02-29 13:45:00");
  ASSERT_TRUE(csv::parse_datetime("1969-12-31 23:00:00", t));
  EXPECT_EQ(t, -3600);
  EXPECT_EQ(csv::format_datetime(t), "1969-12-31 23:00:00");
  EXPECT_FALSE(csv::parse_datetime("2023-13-01 00:00", t));
  EXPECT_FALSE(csv::parse_datetime("yesterday", t));
  // ISO 8601 offsets convert to UTC (issue 23): 00:00 at UTC+02:00 is 22:00 UTC the day before.
  ASSERT_TRUE(csv::parse_datetime("2023-01-01 00:00:00+02:00", t));
  EXPECT_EQ(csv::format_datetime(t), "2022-12-31 22:00:00");
  ASSERT_TRUE(csv::parse_datetime("2023-12-31T24:00", t));  // the end of the day
  EXPECT_EQ(csv::format_datetime(t), "2024-01-01 00:00:00");
  const auto ts = csv::parse_timestamp("20230615T0930-0330");
  ASSERT_TRUE(ts.has_value());
  EXPECT_TRUE(ts->has_offset);
  EXPECT_EQ(ts->offset_minutes, -210);
  EXPECT_EQ(csv::format_datetime(ts->utc_seconds), "2023-06-15 13:00:00");
  EXPECT_EQ(csv::format_utc_offset(ts->offset_minutes), "UTC-03:30");
  EXPECT_FALSE(csv::parse_timestamp("2023-01-01 00:00")->has_offset);
  for (const char* bad : {"2023-01-01", "2023-02-29 00:00", "2023-01-01 24:30", "2023-0101 00:00",
                          "2023-01-01 00:00+2", "2023-01-01 00:00:00.", "2023-001T00:00"})
    EXPECT_FALSE(csv::parse_timestamp(bad).has_value()) << bad;
}

TEST(Csv, NormalizedColumnLookup) {
  const std::vector<std::string> h = {"Datetime (UTC)",
                                      "Carbon Intensity gCO\xE2\x82\x82"
                                      "eq/kWh (direct)",
                                      "Carbon intensity gCO\xE2\x82\x82"
                                      "eq/kWh (LCA)"};
  EXPECT_EQ(csv::normalize_name(h[2]), "carbonintensitygco2eqkwhlca");
  EXPECT_EQ(csv::find_column(h, {"carbon intensity", "lca"}), 2);
  EXPECT_EQ(csv::find_column(h, {"carbon intensity", "direct"}), 1);
  EXPECT_EQ(csv::find_column(h, {"price"}), -1);
}

TEST(Csv, NumbersNameFileAndLine) {
  csv::Table t;
  t.path = "x.csv";
  t.rows = {{"1.5", "abc", "nan", "12", "3.0"}};
  t.line_numbers = {7};
  EXPECT_DOUBLE_EQ(csv::parse_double(t, 0, 0), 1.5);
  EXPECT_EQ(csv::parse_int(t, 0, 3), 12);
  EXPECT_EQ(csv::parse_int(t, 0, 4), 3);
  try {
    csv::parse_double(t, 0, 1);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("x.csv:7: column 2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(csv::parse_double(t, 0, 2), InputError);  // NaN is refused
  EXPECT_THROW(csv::parse_double(t, 0, 9), InputError);  // missing column
}

TEST(Csv, IntegralFloatsOutsideInt64AreRefused) {  // fuzz_traces found the cast of 1.2E193
  csv::Table t;
  t.path = "x.csv";
  t.rows = {{"115093616E193", "-1e19", "9.2e18", "1e300"}};
  t.line_numbers = {3};
  EXPECT_THROW(csv::parse_int(t, 0, 0), InputError);
  EXPECT_THROW(csv::parse_int(t, 0, 1), InputError);
  EXPECT_EQ(csv::parse_int(t, 0, 2), 9200000000000000000LL);
  EXPECT_THROW(csv::parse_int(t, 0, 3), InputError);
}
