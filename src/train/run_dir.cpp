#include "train/run_dir.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "core/file.hpp"

namespace marlsched {

namespace fs = std::filesystem;

namespace {
/// R for a file named model-rank-R.pt, else -1.
int model_rank(const std::string& name) {
  const std::string prefix = "model-rank-", suffix = ".pt";
  if (name.size() <= prefix.size() + suffix.size() || name.rfind(prefix, 0) != 0 ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return -1;
  const std::string digits =
      name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  if (digits.size() > 6 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return -1;
  return std::stoi(digits);
}

/// A run's own outputs: exact names, and prefix/suffix patterns (model-rank-R.pt).
bool is_artifact(const std::string& name) {
  static const char* exact[] = {"config.toml", "metrics.csv",       "timing.csv",   "eval.csv",
                                "eval.md",     "eval-episodes.csv", "eval.svg",     "training.svg",
                                "policy.pt",   "checkpoints",       "trajectories", "tb",
                                "evals",       "quarantine"};
  for (const char* e : exact)
    if (name == e) return true;
  return model_rank(name) >= 0;
}

std::string holder_of(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line.empty() ? "unknown" : line;
}
}  // namespace

RunDirLock::RunDirLock(const std::string& run_dir, int rank) {
  const std::string path = run_dir + "/.lock-rank-" + std::to_string(rank);
  fd_ = open_new_file(path, O_RDWR | O_CREAT);
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    if (err == EWOULDBLOCK)
      MARLSCHED_THROW(InputError, "run directory '"
                                      << run_dir << "' is in use by another marlsched job ("
                                      << holder_of(path)
                                      << "): wait for it to end, or choose another --run-dir");
    MARLSCHED_THROW(InputError, "cannot lock '" << path << "': " << std::strerror(err));
  }
  // Who holds it, for the message another job prints.
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char when[32] = {0};
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&now));
  std::ostringstream who;
  who << "pid " << ::getpid() << " on " << host << " since " << when << "\n";
  const std::string text = who.str();
  if (::ftruncate(fd_, 0) == 0) {
    const ssize_t n = ::pwrite(fd_, text.data(), text.size(), 0);
    (void)n;  // the note is informational: a lock without it is still a lock
  }
}

std::string run_dir_holder(const std::string& run_dir) {
  const std::string path = run_dir + "/.lock-rank-0";
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return {};
  const bool held = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);  // drops the shared lock, if taken
  return held ? holder_of(path) : std::string();
}

RunDirLock::RunDirLock(RunDirLock&& o) noexcept : fd_(o.fd_) {
  o.fd_ = -1;
}

RunDirLock::~RunDirLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

std::vector<std::string> run_artifacts(const std::string& run_dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(run_dir, ec)) {
    const std::string name = e.path().filename().string();
    if (is_artifact(name)) out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

void clear_run_artifacts(const std::string& run_dir) {
  for (const auto& name : run_artifacts(run_dir)) {
    std::error_code ec;
    fs::remove_all(fs::path(run_dir) / name, ec);
    if (ec && fs::exists(fs::path(run_dir) / name))
      MARLSCHED_THROW(InputError, "cannot remove '" << (fs::path(run_dir) / name).string()
                                                    << "': " << ec.message());
  }
}

std::string next_eval_dir(const std::string& base) {
  const fs::path root = fs::path(base.empty() ? "." : base) / "evals";
  for (int k = 1;; ++k) {
    const fs::path p = root / std::to_string(k);
    if (!fs::exists(p)) return p.string();
  }
}

std::string quarantine(const std::string& run_dir, const std::string& path) {
  const fs::path dir = fs::path(run_dir) / "quarantine";
  make_dirs(dir.string());
  const std::string name = fs::path(path).filename().string();
  fs::path to = dir / name;
  for (int k = 1; fs::exists(to); ++k) to = dir / (name + "." + std::to_string(k));
  fs::rename(path, to);
  return to.string();
}

int trained_ranks(const std::string& run_dir) {
  std::vector<int> ranks;
  std::error_code ec;
  if (fs::is_directory(run_dir, ec))
    for (const auto& e : fs::directory_iterator(run_dir, ec)) {
      const int r = model_rank(e.path().filename().string());
      if (r >= 0) ranks.push_back(r);
    }
  MARLSCHED_REQUIRE_INPUT(!ranks.empty(),
                          "'" << run_dir << "' holds no trained model (model-rank-0.pt)");
  std::sort(ranks.begin(), ranks.end());
  const int n = ranks.back() + 1;
  for (int r = 0; r < n; ++r)
    MARLSCHED_REQUIRE_INPUT(
        std::binary_search(ranks.begin(), ranks.end(), r),
        "'" << run_dir << "' lacks model-rank-" << r << ".pt: its run was trained "
            << "with at least " << n << " ranks (model-rank-0.pt to model-rank-" << n - 1
            << ".pt), and that rank's model was removed or never saved");
  return n;
}

}  // namespace marlsched
