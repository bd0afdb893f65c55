#pragma once
/// \file file.hpp
/// Checked file output. Every file marlsched writes goes through these, so a full disk or an
/// unwritable directory gives one message with the path and the system's reason, and a reader
/// never sees a partial file under the final name.

#include <string>
#include <string_view>

namespace marlsched {

/// Writes `bytes` to `path` (truncating it) and flushes it to the device; throws InputError
/// "cannot write 'PATH': REASON" (e.g. "No space left on device") on any failure.
void write_file(const std::string& path, std::string_view bytes);

/// Writes `bytes` to `path.tmp`, then renames it to `path`, so `path` is either the old file or
/// the complete new one; on failure the temporary file is removed and InputError is thrown.
void write_file_atomic(const std::string& path, std::string_view bytes);

}  // namespace marlsched
