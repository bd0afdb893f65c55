#pragma once
/// \file csv.hpp
/// Small, strict CSV reading for traces: RFC-4180 quoting, CRLF tolerant, errors that name the
/// file and line.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace marlsched::csv {

/// Splits one CSV line into fields (handles double-quoted fields with "" escapes).
std::vector<std::string> split(std::string_view line);

/// A parsed file: rows of fields, with 1-based line numbers kept for error messages.
struct Table {
  std::string path;
  std::vector<std::string> header;  ///< empty when read with has_header = false
  std::vector<std::vector<std::string>> rows;
  std::vector<int> line_numbers;
};

/// Reads a whole CSV file. Blank lines are skipped. Throws InputError if unreadable.
Table read(const std::string& path, bool has_header);

/// Lower-cases ASCII and drops everything but letters and digits, so that "Carbon Intensity
/// gCO₂eq/kWh (LCA)" and "carbon intensity gco2eq/kwh (lca)" compare alike.
std::string normalize_name(std::string_view s);

/// Index of the first header column whose normalized name contains every given normalized
/// fragment; -1 if none.
int find_column(const std::vector<std::string>& header, const std::vector<std::string>& fragments);

/// Parses a floating-point field; throws InputError naming file, line and column.
double parse_double(const Table& t, std::size_t row, std::size_t col);
/// Parses an integer field; throws InputError naming file, line and column.
std::int64_t parse_int(const Table& t, std::size_t row, std::size_t col);

/// A timestamp read from text: its UTC time and the offset it was written with.
struct Timestamp {
  std::int64_t utc_seconds = 0;  ///< seconds since the Unix epoch
  bool has_offset = false;       ///< written with 'Z' or ±HH[:MM]; false: read as UTC
  int offset_minutes = 0;        ///< the written offset (local time = UTC + offset)
};

/// Parses an ISO 8601 calendar date and time, extended ("2023-01-01T00:00:00-06:00") or basic
/// ("20230101T000000Z"), with 'T' or a space between date and time, seconds and a decimal
/// fraction optional (the fraction is ignored), and an optional offset: 'Z', ±HH:MM, ±HHMM or
/// ±HH. A time with an offset is converted to UTC; one without is taken as UTC. Also accepts
/// 24:00 (the end of the day). Returns nullopt for anything else (ordinal and week dates, a
/// date alone, an impossible date such as 2023-02-29).
std::optional<Timestamp> parse_timestamp(std::string_view s);

/// parse_timestamp's UTC seconds; false on a malformed value.
bool parse_datetime(std::string_view s, std::int64_t& epoch_seconds);

/// "UTC+05:30", "UTC-06:00".
std::string format_utc_offset(int minutes);

/// Formats epoch seconds as "YYYY-MM-DD HH:MM:SS" (UTC).
std::string format_datetime(std::int64_t epoch_seconds);

}  // namespace marlsched::csv
