#pragma once
/// \file serialize.hpp
/// Minimal binary (de)serialisation for checkpoint state: trivially copyable values, strings and
/// vectors of trivially copyable values, little-endian as the machine is. Reads are bounds
/// checked: a truncated or corrupted buffer raises InputError instead of reading garbage.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/error.hpp"

namespace marlsched {

/// FNV-1a 64 of `n` bytes, continuing from `h` (start from kFnvOffset): the hash of model
/// parameters, checkpoint files and config fingerprints.
constexpr std::uint64_t kFnvOffset = 1469598103934665603ULL;
inline std::uint64_t fnv1a64(const void* data, std::size_t n, std::uint64_t h = kFnvOffset) {
  const auto* b = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ULL;
  return h;
}

class ByteWriter {
 public:
  template <class T>
  void put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>, "put() needs a trivially copyable type");
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    buf_.insert(buf_.end(), p, p + sizeof(T));
  }
  void put_string(const std::string& s) {
    put<std::uint64_t>(s.size());
    const auto* p = reinterpret_cast<const std::byte*>(s.data());
    buf_.insert(buf_.end(), p, p + s.size());
  }
  template <class T>
  void put_vector(const std::vector<T>& v) {
    static_assert(std::is_trivially_copyable_v<T>, "put_vector() needs trivially copyable items");
    put<std::uint64_t>(v.size());
    const auto* p = reinterpret_cast<const std::byte*>(v.data());
    buf_.insert(buf_.end(), p, p + v.size() * sizeof(T));
  }
  const std::vector<std::byte>& bytes() const { return buf_; }
  std::vector<std::byte>& bytes() { return buf_; }

 private:
  std::vector<std::byte> buf_;
};

class ByteReader {
 public:
  ByteReader(const std::byte* data, std::size_t size, std::string what)
      : p_(data), end_(data + size), what_(std::move(what)) {}
  template <class T>
  T get() {
    static_assert(std::is_trivially_copyable_v<T>, "get() needs a trivially copyable type");
    need(sizeof(T));
    T v;
    std::memcpy(&v, p_, sizeof(T));
    p_ += sizeof(T);
    return v;
  }
  std::string get_string() {
    const auto n = get<std::uint64_t>();
    need(n);
    std::string s(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    return s;
  }
  template <class T>
  std::vector<T> get_vector() {
    const auto n = get<std::uint64_t>();
    if (n > static_cast<std::uint64_t>(end_ - p_) / sizeof(T)) fail();
    std::vector<T> v(n);
    if (n > 0) std::memcpy(v.data(), p_, n * sizeof(T));  // (an empty vector's data() may be null)
    p_ += n * sizeof(T);
    return v;
  }
  bool done() const { return p_ == end_; }
  std::size_t remaining() const { return static_cast<std::size_t>(end_ - p_); }

 private:
  void need(std::size_t n) {
    if (n > static_cast<std::size_t>(end_ - p_)) fail();
  }
  [[noreturn]] void fail() const {
    MARLSCHED_THROW(InputError, what_ << ": truncated or corrupted state");
  }
  const std::byte* p_;
  const std::byte* end_;
  std::string what_;
};

namespace detail {
template <class T>
struct is_vector : std::false_type {};
template <class T, class A>
struct is_vector<std::vector<T, A>> : std::true_type {};
}  // namespace detail

/// One field list for both directions of a saved state. A type writes the list once, as
///
///     template <class Self, class IO> static void state_fields(Self& s, IO& io) {
///       io(s.clock_, s.queue_).packed(s.served_, s.dropped_);
///     }
///
/// and calls it with a StateWriter from save_state() (Self const) and a StateReader from
/// load_state(): the two directions cannot drift apart. io(x...) stores each value (a
/// trivially copyable value, a std::string, a std::vector of trivially copyable items, a bool
/// as one byte); packed(x...) stores scalars of one type as one counted vector.
class StateWriter {
 public:
  static constexpr bool kWriting = true;
  template <class... T>
  StateWriter& operator()(const T&... v) {
    (put(v), ...);
    return *this;
  }
  template <class T, class... U>
  StateWriter& packed(const T& first, const U&... rest) {
    w_.put_vector(std::vector<T>{first, static_cast<T>(rest)...});
    return *this;
  }
  std::vector<std::byte>& bytes() { return w_.bytes(); }

 private:
  template <class T>
  void put(const T& v) {
    if constexpr (detail::is_vector<T>::value)
      w_.put_vector(v);
    else if constexpr (std::is_same_v<T, std::string>)
      w_.put_string(v);
    else if constexpr (std::is_same_v<T, bool>)
      w_.put<std::uint8_t>(v ? 1 : 0);
    else
      w_.put(v);
  }
  ByteWriter w_;
};

class StateReader {
 public:
  static constexpr bool kWriting = false;
  /// `what` names the state in errors ("geodc shard state: ...").
  StateReader(const std::vector<std::byte>& state, std::string what)
      : r_(state.data(), state.size(), what), what_(std::move(what)) {}
  template <class... T>
  StateReader& operator()(T&... v) {
    (get(v), ...);
    return *this;
  }
  template <class T, class... U>
  StateReader& packed(T& first, U&... rest) {
    const auto v = r_.get_vector<T>();
    if (v.size() != 1 + sizeof...(U))
      MARLSCHED_THROW(InputError, what_ << ": wrong layout (a group of " << 1 + sizeof...(U)
                                        << " values holds " << v.size() << ")");
    std::size_t i = 0;
    first = v[i++];
    ((rest = static_cast<U>(v[i++])), ...);
    return *this;
  }
  /// Throws InputError unless every byte was read.
  void finish() const {
    if (!r_.done()) MARLSCHED_THROW(InputError, what_ << ": trailing bytes");
  }

 private:
  template <class T>
  void get(T& v) {
    if constexpr (detail::is_vector<T>::value)
      v = r_.get_vector<typename T::value_type>();
    else if constexpr (std::is_same_v<T, std::string>)
      v = r_.get_string();
    else if constexpr (std::is_same_v<T, bool>)
      v = r_.get<std::uint8_t>() != 0;
    else
      v = r_.get<T>();
  }
  ByteReader r_;
  std::string what_;
};

}  // namespace marlsched
