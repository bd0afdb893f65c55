#pragma once
/// \file tensorboard.hpp
/// TensorBoard event files without TensorFlow: `Event` / `Summary` protocol buffers encoded by
/// hand (the few fields scalars need) in TFRecord framing (length, masked CRC32C of the length,
/// data, masked CRC32C of the data), so `tensorboard --logdir RUN_DIR` shows training curves.
///
///   Event      { double wall_time = 1; int64 step = 2; string file_version = 3;
///                Summary summary = 5; SessionLog session_log = 6; }
///   Summary    { repeated Value value = 1; }
///   Value      { string tag = 1; float simple_value = 2; }
///   SessionLog { SessionStatus status = 1; }  (START = 1)

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace marlsched {

/// CRC-32C (Castagnoli), as TFRecord uses it; crc32c("123456789") == 0xE3069283.
std::uint32_t crc32c(const void* data, std::size_t n);
/// TFRecord's masked CRC: rotate right by 15 and add 0xa282ead8.
std::uint32_t masked_crc32c(const void* data, std::size_t n);

/// One TFRecord: the framing around `data`.
std::string tfrecord(const std::string& data);
/// Encoded Event messages.
std::string tb_file_version_event(double wall_time);
std::string tb_scalars_event(double wall_time, std::int64_t step,
                             const std::vector<std::pair<std::string, float>>& scalars);
/// SessionLog START at `step`: TensorBoard drops the events of this run with larger steps that
/// it read before (those a crashed run wrote after its last checkpoint).
std::string tb_session_start_event(double wall_time, std::int64_t step);

/// Appends scalar summaries to `DIR/events.out.tfevents.<seconds>.<host>`; every write is
/// flushed, so TensorBoard sees each step as it is written.
class TensorBoardWriter {
 public:
  /// Creates the directory and the file, writing the file_version event; throws InputError.
  explicit TensorBoardWriter(const std::string& dir);
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;

  void scalars(std::int64_t step, const std::vector<std::pair<std::string, float>>& values);
  /// Marks a restart (a resumed run) at `step`.
  void session_start(std::int64_t step);
  const std::string& path() const { return path_; }

 private:
  void write(const std::string& event);
  std::string path_;
  std::FILE* f_ = nullptr;
};

}  // namespace marlsched
