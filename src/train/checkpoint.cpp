#include "train/checkpoint.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iterator>
#include <sstream>

#include "core/blas.hpp"
#include "core/error.hpp"
#include "core/file.hpp"
#include "core/serialize.hpp"
#include "core/version.hpp"

namespace fs = std::filesystem;

namespace marlsched {

std::string ckpt_model_file(int rank) {
  return "rank-" + std::to_string(rank) + ".pt";
}
std::string ckpt_state_file(int rank) {
  return "rank-" + std::to_string(rank) + ".state";
}

namespace {
int ckpt_iteration(const std::string& name) {
  if (name.size() != 13 || name.rfind("ckpt-", 0) != 0) return -1;
  for (std::size_t i = 5; i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return -1;
  return std::stoi(name.substr(5));
}
std::vector<std::pair<int, std::string>> complete_checkpoints(const std::string& run_dir) {
  std::vector<std::pair<int, std::string>> out;
  const fs::path dir = fs::path(run_dir) / "checkpoints";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const int it = ckpt_iteration(e.path().filename().string());
    if (it >= 0 && fs::exists(e.path() / "MANIFEST")) out.emplace_back(it, e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}
}  // namespace

std::optional<std::string> latest_checkpoint(const std::string& run_dir) {
  const auto all = complete_checkpoints(run_dir);
  if (all.empty()) return std::nullopt;
  return all.back().second;
}

std::vector<std::string> checkpoints(const std::string& run_dir) {
  std::vector<std::string> out;
  for (auto& c : complete_checkpoints(run_dir)) out.push_back(std::move(c.second));
  return out;
}

std::string checkpoint_damage(const std::string& dir, int rank) {
  Manifest m;
  try {
    m = read_manifest(dir + "/MANIFEST");
  } catch (const std::exception& e) {
    return e.what();
  }
  std::vector<std::string> names;
  if (rank >= 0)
    names = {ckpt_model_file(rank), ckpt_state_file(rank)};
  else
    for (const auto& f : m.files) names.push_back(f.name);
  for (const auto& name : names) {
    const auto it = std::find_if(m.files.begin(), m.files.end(),
                                 [&](const ManifestFile& f) { return f.name == name; });
    if (it == m.files.end()) return dir + "/MANIFEST does not list " + name;
    const std::string path = dir + "/" + name;
    if (!fs::exists(path)) return "checkpoint file " + path + " is missing";
    std::uint64_t size = 0;
    std::uint64_t h = 0;
    try {
      h = file_hash(path, &size);
    } catch (const std::exception& e) {
      return e.what();
    }
    if (size != it->size || h != it->hash)
      return "checkpoint file " + path +
             " is corrupted (size or checksum differs from the manifest)";
  }
  return {};
}

Manifest validate_checkpoint(const std::string& dir, int ranks, int agents_per_rank,
                             int envs_per_rank, const std::string& fingerprint) {
  const Manifest m = read_manifest(dir + "/MANIFEST");
  MARLSCHED_REQUIRE(m.ranks == ranks, "checkpoint " << dir << " was written by " << m.ranks
                                                    << " ranks; this job has " << ranks);
  MARLSCHED_REQUIRE(m.agents_per_rank == agents_per_rank && m.envs_per_rank == envs_per_rank,
                    "checkpoint " << dir << " has " << m.agents_per_rank << " agents and "
                                  << m.envs_per_rank << " env copies per rank; this run has "
                                  << agents_per_rank << " and " << envs_per_rank);
  MARLSCHED_REQUIRE(m.version == MARLSCHED_VERSION,
                    "checkpoint " << dir << " was written by marlsched " << m.version
                                  << "; this is " << MARLSCHED_VERSION);
  MARLSCHED_REQUIRE(
      m.config_fingerprint == fingerprint,
      "checkpoint " << dir
                    << " was written with a different configuration (only iterations, "
                       "run-dir, quiet, evaluation, checkpoint and trajectory settings may change "
                       "on resume)");
  return m;
}

void write_checkpoint(const dist::Comm& comm, const std::string& run_dir, int iteration, int keep,
                      const Manifest& header,
                      const std::function<void(const std::string& dir)>& write_rank_files) {
  auto files_of = [](int r) {
    return std::vector<std::string>{ckpt_model_file(r), ckpt_state_file(r)};
  };
  const auto rank_files = files_of(comm.rank());
  std::ostringstream name;
  name << "ckpt-" << std::setw(8) << std::setfill('0') << iteration;
  const fs::path base = fs::path(run_dir) / "checkpoints";
  const fs::path final_dir = base / name.str();
  const fs::path tmp = base / (name.str() + ".tmp");
  if (comm.is_root()) {
    make_dirs(base.string());
    fs::remove_all(tmp);
    make_dirs(tmp.string());
  }
  comm.barrier();
  write_rank_files(tmp.string());
  // Sizes and hashes of every rank's files, gathered to all (rank 0 writes the manifest).
  const int nf = static_cast<int>(rank_files.size());
  std::vector<std::uint64_t> mine(static_cast<std::size_t>(2 * nf));
  for (int i = 0; i < nf; ++i)
    mine[static_cast<std::size_t>(2 * i + 1)] =
        file_hash((tmp / rank_files[static_cast<std::size_t>(i)]).string(),
                  &mine[static_cast<std::size_t>(2 * i)]);
  std::vector<std::uint64_t> all(mine.size() * static_cast<std::size_t>(comm.size()));
  comm.allgather(mine.data(), 2 * nf, all.data());
  if (comm.is_root()) {
    Manifest m = header;
    m.iteration = iteration;
    m.ranks = comm.size();
    m.version = MARLSCHED_VERSION;
    m.blas = blas_info().describe();
    for (int r = 0; r < comm.size(); ++r)
      for (int i = 0; i < nf; ++i)
        m.files.push_back({files_of(r)[static_cast<std::size_t>(i)],
                           all[static_cast<std::size_t>((r * nf + i) * 2)],
                           all[static_cast<std::size_t>((r * nf + i) * 2 + 1)]});
    write_manifest((tmp / "MANIFEST").string(), m);
    fs::remove_all(final_dir);
    fs::rename(tmp, final_dir);
    auto done = complete_checkpoints(run_dir);
    while (static_cast<int>(done.size()) > keep) {
      fs::remove_all(done.front().second);
      done.erase(done.begin());
    }
  }
  comm.barrier();
}

namespace {
constexpr std::uint32_t kTrainerStateMagic = 0x6D617274;  // "mart"
}  // namespace

void TrainerState::save(const std::string& path) const {
  ByteWriter w;
  w.put(kTrainerStateMagic);
  w.put<std::int32_t>(iteration);
  w.put<std::int64_t>(agent_steps);
  w.put_vector(episode_returns);
  w.put_vector(world);
  write_file(path,
             std::string_view(reinterpret_cast<const char*>(w.bytes().data()), w.bytes().size()));
}

TrainerState TrainerState::load(const std::string& path, int copies) {
  std::ifstream in(path, std::ios::binary);
  std::vector<std::byte> bytes;
  if (in) {
    std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    bytes.resize(raw.size());
    if (!raw.empty()) std::memcpy(bytes.data(), raw.data(), raw.size());
  }
  ByteReader r(bytes.data(), bytes.size(), path);
  if (r.get<std::uint32_t>() != kTrainerStateMagic)
    MARLSCHED_THROW(InputError, path << ": not a marlsched trainer state");
  TrainerState s;
  s.iteration = r.get<std::int32_t>();
  s.agent_steps = r.get<std::int64_t>();
  s.episode_returns = r.get_vector<double>();
  s.world = r.get_vector<std::byte>();
  if (static_cast<int>(s.episode_returns.size()) != copies)
    MARLSCHED_THROW(InputError, path << ": wrong layout");
  return s;
}

}  // namespace marlsched
