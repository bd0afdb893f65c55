#include "io/tensorboard.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"
#include "core/file.hpp"

namespace marlsched {

namespace {

const std::array<std::uint32_t, 256>& crc_table() {
  static const std::array<std::uint32_t, 256> table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  return table;
}

// Protocol buffer wire format: varints, tags, little-endian fixed-size values.
void varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
void tag(std::string& out, int field, int wire) {
  varint(out, static_cast<std::uint64_t>(field << 3 | wire));
}
template <class T>
void fixed(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // the machine is little-endian, as the wire format
  out.append(b, sizeof(T));
}
void bytes_field(std::string& out, int field, const std::string& v) {
  tag(out, field, 2);
  varint(out, v.size());
  out += v;
}

/// Event.wall_time and Event.step.
std::string event_header(double wall_time, std::int64_t step) {
  std::string e;
  tag(e, 1, 1);
  fixed(e, wall_time);
  tag(e, 2, 0);
  varint(e, static_cast<std::uint64_t>(step));
  return e;
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

std::uint32_t crc32c(const void* data, std::size_t n) {
  const auto& t = crc_table();
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint32_t c = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < n; ++i) c = t[(c ^ p[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

std::uint32_t masked_crc32c(const void* data, std::size_t n) {
  const std::uint32_t c = crc32c(data, n);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

std::string tfrecord(const std::string& data) {
  std::string out;
  const auto len = static_cast<std::uint64_t>(data.size());
  fixed(out, len);
  fixed(out, masked_crc32c(&len, sizeof len));
  out += data;
  fixed(out, masked_crc32c(data.data(), data.size()));
  return out;
}

std::string tb_file_version_event(double wall_time) {
  std::string e;
  tag(e, 1, 1);
  fixed(e, wall_time);
  bytes_field(e, 3, "brain.Event:2");
  return e;
}

std::string tb_scalars_event(double wall_time, std::int64_t step,
                             const std::vector<std::pair<std::string, float>>& scalars) {
  std::string summary;
  for (const auto& [name, v] : scalars) {
    std::string value;
    bytes_field(value, 1, name);
    tag(value, 2, 5);
    fixed(value, v);
    bytes_field(summary, 1, value);
  }
  std::string e = event_header(wall_time, step);
  bytes_field(e, 5, summary);
  return e;
}

std::string tb_session_start_event(double wall_time, std::int64_t step) {
  std::string log;
  tag(log, 1, 0);
  varint(log, 1);  // SessionLog.START
  std::string e = event_header(wall_time, step);
  bytes_field(e, 6, log);
  return e;
}

TensorBoardWriter::TensorBoardWriter(const std::string& dir) {
  make_dirs(dir);
  char host[256] = "localhost";
  ::gethostname(host, sizeof host - 1);
  const double t = now_seconds();
  path_ = dir + "/events.out.tfevents." + std::to_string(static_cast<long long>(t)) + "." + host;
  const int fd = open_new_file(path_, O_WRONLY | O_CREAT | O_APPEND);
  f_ = ::fdopen(fd, "ab");
  if (f_ == nullptr) ::close(fd);
  if (f_ == nullptr) MARLSCHED_THROW(InputError, "cannot write TensorBoard file '" << path_ << "'");
  write(tb_file_version_event(t));
}

TensorBoardWriter::~TensorBoardWriter() {
  if (f_ != nullptr) std::fclose(f_);
}

void TensorBoardWriter::scalars(std::int64_t step,
                                const std::vector<std::pair<std::string, float>>& values) {
  write(tb_scalars_event(now_seconds(), step, values));
}

void TensorBoardWriter::session_start(std::int64_t step) {
  write(tb_session_start_event(now_seconds(), step));
}

void TensorBoardWriter::write(const std::string& event) {
  const std::string rec = tfrecord(event);
  if (std::fwrite(rec.data(), 1, rec.size(), f_) != rec.size() || std::fflush(f_) != 0)
    MARLSCHED_THROW(InputError,
                    "cannot write TensorBoard file '" << path_ << "': " << std::strerror(errno));
}

}  // namespace marlsched
