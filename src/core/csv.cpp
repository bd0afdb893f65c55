#include "core/csv.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "core/error.hpp"

namespace marlsched::csv {

std::vector<std::string> split(std::string_view line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < line.size() && line[i + 1] == '"') {
          cur.push_back('"');
          ++i;
        } else {
          quoted = false;
        }
      } else {
        cur.push_back(c);
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(std::move(cur));
      cur.clear();
    } else if (c != '\r' && c != '\n') {
      cur.push_back(c);
    }
  }
  out.push_back(std::move(cur));
  return out;
}

Table read(const std::string& path, bool has_header) {
  std::ifstream in(path, std::ios::binary);
  if (!in) MARLSCHED_THROW(InputError, "cannot open '" << path << "'");
  Table t;
  t.path = path;
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (lineno == 1 && line.size() >= 3 && static_cast<unsigned char>(line[0]) == 0xEF &&
        static_cast<unsigned char>(line[1]) == 0xBB && static_cast<unsigned char>(line[2]) == 0xBF)
      line.erase(0, 3);  // UTF-8 byte-order mark
    bool blank = true;
    for (char c : line)
      if (!std::isspace(static_cast<unsigned char>(c))) blank = false;
    if (blank) continue;
    auto fields = split(line);
    if (has_header && t.header.empty()) {
      t.header = std::move(fields);
      continue;
    }
    t.rows.push_back(std::move(fields));
    t.line_numbers.push_back(lineno);
  }
  if (has_header && t.header.empty()) MARLSCHED_THROW(InputError, path << ": file is empty");
  return t;
}

std::string normalize_name(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c))
      out.push_back(static_cast<char>(std::tolower(c)));
    else if (c == 0xE2)  // first byte of "₂" (U+2082, E2 82 82): keep the digit
      out.push_back('2');
  }
  // "₂" is three bytes; the two continuation bytes are not alnum and were dropped.
  return out;
}

int find_column(const std::vector<std::string>& header, const std::vector<std::string>& fragments) {
  for (std::size_t i = 0; i < header.size(); ++i) {
    const auto name = normalize_name(header[i]);
    bool all = true;
    for (const auto& f : fragments)
      if (name.find(normalize_name(f)) == std::string::npos) all = false;
    if (all) return static_cast<int>(i);
  }
  return -1;
}

static std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

double parse_double(const Table& t, std::size_t row, std::size_t col) {
  const int line = t.line_numbers.at(row);
  if (col >= t.rows[row].size())
    MARLSCHED_THROW(InputError, t.path << ":" << line << ": missing column " << col + 1);
  const auto s = trim(t.rows[row][col]);
  double v = 0.0;
  const auto res = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || res.ec != std::errc() || res.ptr != s.data() + s.size() || !std::isfinite(v))
    MARLSCHED_THROW(InputError, t.path << ":" << line << ": column " << col + 1
                                       << ": not a finite number: '" << s << "'");
  return v;
}

std::int64_t parse_int(const Table& t, std::size_t row, std::size_t col) {
  const int line = t.line_numbers.at(row);
  if (col >= t.rows[row].size())
    MARLSCHED_THROW(InputError, t.path << ":" << line << ": missing column " << col + 1);
  const auto s = trim(t.rows[row][col]);
  std::int64_t v = 0;
  auto res = std::from_chars(s.data(), s.data() + s.size(), v);
  if (!s.empty() && res.ec == std::errc() && res.ptr != s.data() + s.size()) {
    // accept integral floats such as "1594000000.0"
    double d = 0.0;
    auto r2 = std::from_chars(s.data(), s.data() + s.size(), d);
    // (in range: casting a double outside int64 is undefined; found by fuzz_traces)
    if (r2.ec == std::errc() && r2.ptr == s.data() + s.size() && std::isfinite(d) &&
        d == std::floor(d) && d >= -9223372036854775808.0 && d < 9223372036854775808.0)
      return static_cast<std::int64_t>(d);
  }
  if (s.empty() || res.ec != std::errc() || res.ptr != s.data() + s.size())
    MARLSCHED_THROW(InputError, t.path << ":" << line << ": column " << col + 1
                                       << ": not an integer: '" << s << "'");
  return v;
}

static std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  // Howard Hinnant's algorithm.
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

namespace {
bool leap(std::int64_t y) {
  return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}
int days_in_month(std::int64_t y, int m) {
  static const int d[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && leap(y) ? 29 : d[m - 1];
}
}  // namespace

std::optional<Timestamp> parse_timestamp(std::string_view s) {
  s = trim(s);
  std::size_t p = 0;
  auto digits = [&](std::size_t len, int& out) {
    if (p + len > s.size()) return false;
    out = 0;
    for (std::size_t i = p; i < p + len; ++i) {
      if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
      out = out * 10 + (s[i] - '0');
    }
    p += len;
    return true;
  };
  auto lit = [&](char c) {
    if (p < s.size() && s[p] == c) return ++p, true;
    return false;
  };
  auto digit_next = [&] { return p < s.size() && std::isdigit(static_cast<unsigned char>(s[p])); };
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, se = 0;
  // Date: extended YYYY-MM-DD or basic YYYYMMDD; the time follows after 'T' (or a space).
  if (!digits(4, y)) return std::nullopt;
  const bool extended = lit('-');
  if (!digits(2, mo) || (extended && !lit('-')) || !digits(2, d)) return std::nullopt;
  if (!(lit('T') || lit('t') || lit(' '))) return std::nullopt;
  if (!digits(2, h) || (extended && !lit(':')) || !digits(2, mi)) return std::nullopt;
  if (extended ? lit(':') : digit_next())
    if (!digits(2, se)) return std::nullopt;
  if (lit('.') || lit(',')) {  // a decimal fraction of the second: ignored (traces are hourly)
    if (!digit_next()) return std::nullopt;
    while (digit_next()) ++p;
  }
  Timestamp t;
  int sign = 0, oh = 0, om = 0;
  if (lit('Z') || lit('z')) {
    t.has_offset = true;
  } else if (p < s.size() && (s[p] == '+' || s[p] == '-')) {
    sign = s[p++] == '+' ? 1 : -1;
    if (!digits(2, oh)) return std::nullopt;
    if (lit(':') ? !digits(2, om) : (digit_next() && !digits(2, om))) return std::nullopt;
    t.has_offset = true;
  }
  if (p != s.size()) return std::nullopt;
  if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || mi > 59 || se > 60 || oh > 23 ||
      om > 59 || h > 24 || (h == 24 && (mi != 0 || se != 0)))
    return std::nullopt;
  t.offset_minutes = sign * (oh * 60 + om);
  t.utc_seconds = days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d)) * 86400 +
                  h * 3600 + mi * 60 + se - static_cast<std::int64_t>(t.offset_minutes) * 60;
  return t;
}

bool parse_datetime(std::string_view s, std::int64_t& epoch_seconds) {
  const auto t = parse_timestamp(s);
  if (t) epoch_seconds = t->utc_seconds;
  return t.has_value();
}

std::string format_utc_offset(int minutes) {
  char buf[32];
  const int a = std::abs(minutes);
  std::snprintf(buf, sizeof buf, "UTC%c%02d:%02d", minutes < 0 ? '-' : '+', a / 60, a % 60);
  return buf;
}

std::string format_datetime(std::int64_t t) {
  std::int64_t days = t >= 0 ? t / 86400 : (t - 86399) / 86400;
  std::int64_t secs = t - days * 86400;
  // civil_from_days
  days += 719468;
  const std::int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(days - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  std::int64_t y = static_cast<std::int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  y += m <= 2;
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04lld-%02u-%02u %02lld:%02lld:%02lld", static_cast<long long>(y),
                m, d, static_cast<long long>(secs / 3600), static_cast<long long>((secs / 60) % 60),
                static_cast<long long>(secs % 60));
  return buf;
}

}  // namespace marlsched::csv
