#include "core/file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"

namespace marlsched {

namespace {
[[noreturn]] void fail(const std::string& path, int err) {
  if (err == ELOOP) refuse_link(path);  // names the link when that is why
  MARLSCHED_THROW(InputError, "cannot write '" << path << "': " << std::strerror(err));
}
}  // namespace

void refuse_link(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return;
  // A link to a directory is a user's layout (trajectories on a scratch disk): files are
  // created inside it, never through it.
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return;
  std::error_code ec;
  const auto target = std::filesystem::read_symlink(path, ec);
  MARLSCHED_THROW(InputError, "'" << path << "' is a symbolic link"
                                  << (ec ? std::string() : " to '" + target.string() + "'")
                                  << ", where marlsched writes a file of its own; it does not "
                                     "write through links (that would overwrite the target): "
                                     "remove the link, or choose another directory");
}

int open_new_file(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) fail(path, errno);
  return fd;
}

void make_dirs(const std::string& path) {
  namespace fs = std::filesystem;
  refuse_link(path);  // a link to a file where a directory goes
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) MARLSCHED_THROW(InputError, "cannot create directory '" << path << "': " << ec.message());
}

void write_file(const std::string& path, std::string_view bytes) {
  const int fd = open_new_file(path, O_WRONLY | O_CREAT | O_TRUNC);
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
  refuse_link(path);
  try {
    write_file(tmp, bytes);
  } catch (...) {
    struct stat st {};
    if (::lstat(tmp.c_str(), &st) == 0 && S_ISREG(st.st_mode)) std::remove(tmp.c_str());
    throw;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    fail(path, err);
  }
}

}  // namespace marlsched
