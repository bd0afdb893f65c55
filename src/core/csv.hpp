#pragma once
/// \file csv.hpp
/// Small, strict CSV reading for traces: RFC-4180 quoting, CRLF tolerant, errors that name the
/// file and line.

#include <cstdint>
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

/// Parses "YYYY-MM-DD HH:MM[:SS]" (also with 'T' and a trailing 'Z' or "+00:00") as UTC and
/// returns seconds since the Unix epoch. Returns false on a malformed value.
bool parse_datetime(std::string_view s, std::int64_t& epoch_seconds);

/// Formats epoch seconds as "YYYY-MM-DD HH:MM:SS" (UTC).
std::string format_datetime(std::int64_t epoch_seconds);

}  // namespace marlsched::csv
