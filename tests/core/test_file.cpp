// Checked file output never writes through a link planted where its file goes, and a checkpoint
// MANIFEST refuses a changed byte (issue 42).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/error.hpp"
#include "core/file.hpp"
#include "train/manifest.hpp"

namespace fs = std::filesystem;
using namespace marlsched;

namespace {
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("marlsched-file-" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
}  // namespace

TEST(File, WritesRefuseLinksAndLeaveTheirTargets) {
  TempDir d;
  write_file(d / "target.txt", "precious");
  fs::create_symlink("target.txt", d / "plain");
  fs::create_symlink("target.txt", d / "atomic");
  fs::create_symlink("target.txt", d / "tmp-only.tmp");
  EXPECT_THROW(write_file(d / "plain", "x"), InputError);
  EXPECT_THROW(write_file_atomic(d / "atomic", "x"), InputError);
  EXPECT_THROW(write_file_atomic(d / "tmp-only", "x"), InputError);  // its .tmp is the link
  EXPECT_THROW(open_new_file(d / "plain", 0), InputError);
  EXPECT_EQ(slurp(d / "target.txt"), "precious");
  try {
    write_file(d / "plain", "x");
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("is a symbolic link to 'target.txt'"), std::string::npos)
        << e.what();
  }
  // A link to a directory is a user's layout: files go inside it.
  fs::create_directories(d / "real");
  fs::create_symlink("real", d / "linked");
  EXPECT_NO_THROW(make_dirs(d / "linked"));
  EXPECT_NO_THROW(write_file_atomic(d / "linked/f", "inside"));
  EXPECT_EQ(slurp(d / "real/f"), "inside");
}

TEST(Manifest, ChecksumRefusesAChangedDigit) {
  TempDir d;
  Manifest m;
  m.iteration = 6;
  m.ranks = 2;
  m.agents_per_rank = 2;
  m.envs_per_rank = 1;
  m.version = "0.1.0";
  m.config_fingerprint = "0123456789abcdef";
  m.blas = "OpenBLAS 0.3.21";
  m.traj_segment = 0;
  m.traj_rows = 576;
  m.files = {{"rank-0.pt", 10, 0xabc}};
  write_manifest(d / "MANIFEST", m);
  const Manifest back = read_manifest(d / "MANIFEST");
  EXPECT_EQ(back.traj_rows, 576);
  std::string text = slurp(d / "MANIFEST");
  text[text.find("traj_rows 576") + 12] = '7';  // 576 -> 577: still a number
  { std::ofstream(d / "MANIFEST", std::ios::trunc) << text; }
  try {
    read_manifest(d / "MANIFEST");
    FAIL() << "a changed digit was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("fails its checksum"), std::string::npos) << e.what();
  }
  // A format-1 manifest (no checksum) is named as written by an older marlsched.
  std::ofstream(d / "OLD") << "marlsched-checkpoint 1\nversion 0.1.0\nend\n";
  try {
    read_manifest(d / "OLD");
    FAIL() << "a manifest without a checksum was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("without a checksum"), std::string::npos) << e.what();
  }
}
