#pragma once
/// \file file.hpp
/// Checked file output. Every file marlsched writes goes through these, so a full disk or an
/// unwritable directory gives one message with the path and the system's reason, and a reader
/// never sees a partial file under the final name. None of them writes through a symbolic link
/// found where the file goes (O_NOFOLLOW): a link planted in a run directory would otherwise
/// make a run overwrite its target.

#include <string>
#include <string_view>

namespace marlsched {

/// Throws InputError when `path` itself is a symbolic link, unless it leads to a directory (a
/// user's layout, such as a run's trajectories on a scratch disk). Links among `path`'s parent
/// directories are followed.
void refuse_link(const std::string& path);

/// open(2) of `path` with `flags` | O_NOFOLLOW | O_CLOEXEC, mode 0644; throws InputError naming
/// the path and the reason (a link: refuse_link's message).
int open_new_file(const std::string& path, int flags);

/// create_directories(path) with InputError naming the path and the reason on failure.
void make_dirs(const std::string& path);

/// Writes `bytes` to `path` (truncating it) and flushes it to the device; throws InputError
/// "cannot write 'PATH': REASON" (e.g. "No space left on device") on any failure.
void write_file(const std::string& path, std::string_view bytes);

/// Writes `bytes` to `path.tmp`, then renames it to `path`, so `path` is either the old file or
/// the complete new one; on failure the temporary file is removed and InputError is thrown.
void write_file_atomic(const std::string& path, std::string_view bytes);

}  // namespace marlsched
