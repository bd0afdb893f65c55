// Damaged and incomplete files (issue 22): model archives' CRC-32s are checked before a load, a
// run's model files name the missing rank, damaged run files move to the run's quarantine.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>

#include "agents/model_archive.hpp"
#include "core/error.hpp"
#include "test_util.hpp"
#include "train/run_dir.hpp"

using namespace marlsched;
namespace fs = std::filesystem;

namespace {
/// Flips one bit of byte `offset` (from the end when negative) of a file.
void flip(const std::string& path, std::int64_t offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(0, std::ios::end);
  const std::int64_t size = f.tellg();
  const std::int64_t at = offset < 0 ? size + offset : offset;
  f.seekg(at);
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(c ^ 0x10);
  f.seekp(at);
  f.write(&c, 1);
}

}  // namespace

TEST(Integrity, ArchiveCheckFindsAFlippedBitInAModelsWeights) {
  const auto dir = test::temp_dir("archive");
  const std::string path = dir + "/m.pt";
  torch::serialize::OutputArchive ar;
  ar.write("w", torch::arange(0, 4096, torch::kFloat32));  // the file's largest record
  ar.save_to(path);
  EXPECT_NO_THROW(verify_archive(path, "model"));
  // libtorch itself loads the damaged file without a word: that is why the check exists.
  fs::copy_file(path, dir + "/bad.pt");
  flip(dir + "/bad.pt", static_cast<std::int64_t>(fs::file_size(path) / 2));
  torch::serialize::InputArchive in;
  torch::Tensor w;
  EXPECT_NO_THROW({
    in.load_from(dir + "/bad.pt");
    in.read("w", w);
  });
  EXPECT_FALSE(w.equal(torch::arange(0, 4096, torch::kFloat32)));
  const auto msg = test::input_error_of([&] { verify_archive(dir + "/bad.pt", "model"); });
  EXPECT_NE(msg.find("model '" + dir + "/bad.pt' is damaged: record"), std::string::npos) << msg;
  EXPECT_NE(msg.find("CRC error"), std::string::npos) << msg;
  // Truncated, and not an archive at all.
  fs::resize_file(dir + "/bad.pt", 100);
  EXPECT_NE(test::input_error_of([&] {
              verify_archive(dir + "/bad.pt", "model");
            }).find("cannot read model"),
            std::string::npos);
  std::ofstream(dir + "/text.pt") << "not a model";
  EXPECT_NE(test::input_error_of([&] {
              verify_archive(dir + "/text.pt", "exported policy");
            }).find("cannot read exported policy"),
            std::string::npos);
}

TEST(Integrity, ModelReaderReadsWhatModelWriterWroteAndNamesWhatIsWrong) {
  const auto dir = test::temp_dir("model-archive");
  const std::string path = dir + "/m.pt";
  torch::nn::Linear net(3, 2), other(3, 2), wider(3, 4);
  Rng a(7), b(9);
  a.uniform();
  {
    ModelWriter w;
    w.tensor("meta", torch::tensor(std::vector<std::int64_t>{4, 2}));
    w.values("theta", std::vector<float>{1.5F, -2.0F});
    w.module("net", *net);
    w.rngs("rng", {&a});
    w.base("mpc", 0.5);
    w.save(path);
  }
  ModelReader r(path, "TEST");
  EXPECT_NO_THROW(r.require_layout("meta", {4, 2}, "differs"));
  std::vector<float> theta(2);
  r.values("theta", theta, "its parameters");
  EXPECT_EQ(theta, (std::vector<float>{1.5F, -2.0F}));
  r.module("net", *other);
  EXPECT_TRUE(other->weight.equal(net->weight));
  r.rngs("rng", {&b});
  EXPECT_EQ(b.uniform(), a.uniform());
  EXPECT_NO_THROW(r.require_base("--base", "--margin", "mpc", 0.5));
  EXPECT_NO_THROW(r.require_shapes("net", *other, "--hidden"));
  torch::Tensor absent;
  EXPECT_FALSE(r.try_tensor("absent", absent));
  // What differs from this run is a ConfigError naming the file and the difference.
  auto config_error_of = [](const std::function<void()>& f) -> std::string {
    try {
      f();
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_EQ(config_error_of([&] {
              r.require_layout("meta", {4, 3}, "has another layout");
            }),
            "model '" + path + "' has another layout");
  EXPECT_NE(config_error_of([&] {
              std::vector<float> three(3);
              r.values("theta", three, "its parameters");
            }).find("its parameters does not fit"),
            std::string::npos);
  EXPECT_NE(config_error_of([&] {
              r.require_base("--base", "--margin", "mpc", 1.5);
            }).find("was trained with --base 'mpc' --margin 0.5, this run has 'mpc' 1.5"),
            std::string::npos);
  EXPECT_NE(config_error_of([&] {
              r.require_shapes("net", *wider, "--hidden");
            }).find("holds net.weight of shape [2, 3], but this run builds [4, 3]"),
            std::string::npos);
  // A missing record, a record of the wrong size and a model of another kind are InputErrors.
  EXPECT_NE(test::input_error_of([&] {
              r.tensor("absent");
            }).find("its record 'absent' is missing or unreadable (not a marlsched TEST model"),
            std::string::npos);
  EXPECT_NE(test::input_error_of([&] {
              r.tensor("meta", 3);
            }).find("its record 'meta' holds 2 values where a TEST model has 3"),
            std::string::npos);
  EXPECT_NE(test::input_error_of([&] {
              r.require_layout("es_meta", {4, 2}, "differs");
            }).find("not a marlsched TEST model (no record 'es_meta'"),
            std::string::npos);
  EXPECT_NE(test::input_error_of([&] {
              r.rngs("theta", {&b});
            }).find("its record 'theta' is not a random generators' state"),
            std::string::npos);
  // Opening checks every record's CRC first.
  flip(path, static_cast<std::int64_t>(std::filesystem::file_size(path) / 2));
  EXPECT_NE(test::input_error_of([&] { ModelReader(path, "TEST"); }).find("model '" + path + "'"),
            std::string::npos);
}

TEST(Integrity, TrainedRanksNamesAMissingModel) {
  const auto dir = test::temp_dir("ranks");
  EXPECT_NE(test::input_error_of([&] { trained_ranks(dir); }).find("holds no trained model"),
            std::string::npos);
  for (int r : {0, 1, 3}) std::ofstream(dir + "/model-rank-" + std::to_string(r) + ".pt") << "x";
  std::ofstream(dir + "/model-rank-x.pt") << "not a rank";
  EXPECT_NE(test::input_error_of([&] { trained_ranks(dir); }).find("lacks model-rank-2.pt"),
            std::string::npos);
  std::ofstream(dir + "/model-rank-2.pt") << "x";
  EXPECT_EQ(trained_ranks(dir), 4);
}

TEST(Integrity, QuarantineMovesWithoutReplacing) {
  const auto dir = test::temp_dir("quarantine");
  fs::create_directories(dir + "/checkpoints/ckpt-00000008");
  std::ofstream(dir + "/checkpoints/ckpt-00000008/MANIFEST") << "first";
  EXPECT_EQ(quarantine(dir, dir + "/checkpoints/ckpt-00000008"), dir + "/quarantine/ckpt-00000008");
  fs::create_directories(dir + "/checkpoints/ckpt-00000008");
  EXPECT_EQ(quarantine(dir, dir + "/checkpoints/ckpt-00000008"),
            dir + "/quarantine/ckpt-00000008.1");
  EXPECT_FALSE(fs::exists(dir + "/checkpoints/ckpt-00000008"));
  std::ifstream in(dir + "/quarantine/ckpt-00000008/MANIFEST");
  std::string text;
  in >> text;
  EXPECT_EQ(text, "first");
  // A fresh run (--force) clears the quarantine with the rest of the run.
  const auto a = run_artifacts(dir);
  EXPECT_NE(std::find(a.begin(), a.end(), "quarantine"), a.end());
}
