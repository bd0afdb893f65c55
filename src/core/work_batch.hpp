#pragma once
/// \file work_batch.hpp
/// Work records batched per destination, for event-driven shards (envs/aset, envs/lstcb): during
/// a window the shard appends fixed-size items (trivially copyable structs) to the buffer of each
/// destination agent, and at the window's end flushes one WorkRecord per destination that has
/// any. The receiving shard reads the items back with `items<T>()`.

#include <cstring>
#include <type_traits>
#include <vector>

#include "core/env.hpp"
#include "core/error.hpp"

namespace marlsched {

class WorkBatches {
 public:
  /// Buffers for `destinations` agents.
  void resize(int destinations) { out_.resize(static_cast<std::size_t>(destinations)); }
  template <class T>
  void append(int dest, const T& item) {
    static_assert(std::is_trivially_copyable_v<T>, "work items must be trivially copyable");
    auto& buf = out_[static_cast<std::size_t>(dest)];
    const auto off = buf.size();
    buf.resize(off + sizeof item);
    std::memcpy(buf.data() + off, &item, sizeof item);
  }
  /// Moves every non-empty buffer into `outbox` as one record for its destination.
  void flush(std::vector<WorkRecord>& outbox) {
    for (std::size_t d = 0; d < out_.size(); ++d) {
      if (out_[d].empty()) continue;
      WorkRecord rec;
      rec.dest = static_cast<std::int32_t>(d);
      rec.payload = std::move(out_[d]);
      out_[d].clear();
      outbox.push_back(std::move(rec));
    }
  }
  /// Drops whatever was not flushed (an episode reset).
  void clear() {
    for (auto& b : out_) b.clear();
  }
  /// The items of a record written by `append<T>`; `what` names the env in the error.
  template <class T>
  static std::vector<T> items(const WorkRecord& rec, const char* what) {
    MARLSCHED_CHECK(rec.payload.size() % sizeof(T) == 0, what << ": malformed work record");
    std::vector<T> v(rec.payload.size() / sizeof(T));
    if (!v.empty()) std::memcpy(v.data(), rec.payload.data(), rec.payload.size());
    return v;
  }

 private:
  std::vector<std::vector<std::byte>> out_;
};

}  // namespace marlsched
