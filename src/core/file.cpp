#include "core/file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/error.hpp"

namespace marlsched {

namespace {
[[noreturn]] void fail(const std::string& path, int err) {
  MARLSCHED_THROW(InputError, "cannot write '" << path << "': " << std::strerror(err));
}
}  // namespace

void write_file(const std::string& path, std::string_view bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail(path, errno);
  std::size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + off, bytes.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      ::close(fd);
      fail(path, err);
    }
    off += static_cast<std::size_t>(n);
  }
  // tmpfs and most local file systems report ENOSPC at write(); NFS and Lustre may only at
  // fsync() or close().
  if (::fsync(fd) != 0 && errno != EINVAL && errno != EROFS) {
    const int err = errno;
    ::close(fd);
    fail(path, err);
  }
  if (::close(fd) != 0) fail(path, errno);
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
  const std::string tmp = path + ".tmp";
  try {
    write_file(tmp, bytes);
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    fail(path, err);
  }
}

}  // namespace marlsched
