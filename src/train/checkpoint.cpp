#include "train/checkpoint.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "core/error.hpp"
#include "core/version.hpp"

namespace fs = std::filesystem;

namespace marlsched {

std::string ckpt_model_file(int rank) {
  return "rank-" + std::to_string(rank) + ".pt";
}
std::string ckpt_state_file(int rank) {
  return "rank-" + std::to_string(rank) + ".state";
}

std::uint64_t file_hash(const std::string& path, std::uint64_t* size) {
  std::ifstream in(path, std::ios::binary);
  if (!in) MARLSCHED_THROW(InputError, "cannot open '" << path << "'");
  std::uint64_t h = 1469598103934665603ULL, n = 0;
  char buf[1 << 16];
  while (in) {
    in.read(buf, sizeof buf);
    const auto got = in.gcount();
    for (std::streamsize i = 0; i < got; ++i)
      h = (h ^ static_cast<unsigned char>(buf[i])) * 1099511628211ULL;
    n += static_cast<std::uint64_t>(got);
  }
  if (size) *size = n;
  return h;
}

std::string config_fingerprint(const std::string& toml) {
  static const char* mutable_keys[] = {
      "iterations",       "run-dir",          "quiet",        "eval-after",
      "eval-episodes",    "eval-seed",        "check-every",  "checkpoint-every",
      "keep-checkpoints", "traj-every",       "traj-fields",  "traj-compression",
      "traj-level",       "traj-chunk-steps", "traj-shuffle", "tensorboard"};
  std::uint64_t h = 1469598103934665603ULL;
  std::istringstream in(toml);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const auto key = line.substr(0, line.find(' '));
    if (std::find(std::begin(mutable_keys), std::end(mutable_keys), key) != std::end(mutable_keys))
      continue;
    for (unsigned char c : line) h = (h ^ c) * 1099511628211ULL;
    h = (h ^ '\n') * 1099511628211ULL;
  }
  std::ostringstream os;
  os << std::hex << std::setw(16) << std::setfill('0') << h;
  return os.str();
}

void write_file_atomic(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) MARLSCHED_THROW(InputError, "cannot write '" << tmp << "'");
    out << text;
    if (!out.flush()) MARLSCHED_THROW(InputError, "write failed: '" << tmp << "'");
  }
  fs::rename(tmp, path);
}

void write_manifest(const std::string& path, const Manifest& m) {
  std::ostringstream out;
  out << "marlsched-checkpoint 1\n"
      << "version " << m.version << "\n"
      << "iteration " << m.iteration << "\n"
      << "ranks " << m.ranks << "\n"
      << "agents_per_rank " << m.agents_per_rank << "\n"
      << "envs_per_rank " << m.envs_per_rank << "\n"
      << "config " << m.config_fingerprint << "\n"
      << "traj_segment " << m.traj_segment << "\n"
      << "traj_rows " << m.traj_rows << "\n";
  for (const auto& f : m.files)
    out << "file " << f.name << ' ' << f.size << ' ' << std::hex << f.hash << std::dec << "\n";
  out << "end\n";
  write_file_atomic(path, out.str());
}

Manifest read_manifest(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) MARLSCHED_THROW(InputError, "cannot open checkpoint manifest '" << path << "'");
  Manifest m;
  std::string line;
  int lineno = 0;
  bool header = false, end = false;
  auto bad = [&](const std::string& why) {
    MARLSCHED_THROW(InputError, path << ":" << lineno << ": " << why);
  };
  while (std::getline(in, line)) {
    ++lineno;
    if (end) bad("data after 'end'");
    std::istringstream ls(line);
    std::string key;
    ls >> key;
    if (!header) {
      int v = 0;
      if (key != "marlsched-checkpoint" || !(ls >> v) || v != 1)
        bad("not a marlsched checkpoint manifest (version 1)");
      header = true;
      continue;
    }
    bool ok = true;
    if (key == "version") {
      ok = static_cast<bool>(ls >> m.version);
    } else if (key == "iteration") {
      ok = static_cast<bool>(ls >> m.iteration) && m.iteration >= 0;
    } else if (key == "ranks") {
      ok = static_cast<bool>(ls >> m.ranks) && m.ranks > 0;
    } else if (key == "agents_per_rank") {
      ok = static_cast<bool>(ls >> m.agents_per_rank) && m.agents_per_rank > 0;
    } else if (key == "envs_per_rank") {
      ok = static_cast<bool>(ls >> m.envs_per_rank) && m.envs_per_rank > 0;
    } else if (key == "config") {
      ok = static_cast<bool>(ls >> m.config_fingerprint);
    } else if (key == "traj_segment") {
      ok = static_cast<bool>(ls >> m.traj_segment) && m.traj_segment >= -1;
    } else if (key == "traj_rows") {
      ok = static_cast<bool>(ls >> m.traj_rows) && m.traj_rows >= 0;
    } else if (key == "file") {
      ManifestFile f;
      ok = static_cast<bool>(ls >> f.name >> f.size >> std::hex >> f.hash) &&
           f.name.find('/') == std::string::npos;
      m.files.push_back(f);
    } else if (key == "end") {
      end = true;
    } else {
      bad("unknown entry '" + key + "'");
    }
    if (!ok) bad("malformed '" + key + "' entry");
  }
  if (!header) bad("empty manifest");
  if (!end) bad("truncated manifest (no 'end')");
  if (m.ranks == 0 || m.version.empty() || m.config_fingerprint.empty()) bad("incomplete manifest");
  return m;
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

Manifest validate_checkpoint(const std::string& dir, int rank, int ranks, int agents_per_rank,
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
  for (const std::string& name : {ckpt_model_file(rank), ckpt_state_file(rank)}) {
    const auto it = std::find_if(m.files.begin(), m.files.end(),
                                 [&](const ManifestFile& f) { return f.name == name; });
    if (it == m.files.end()) MARLSCHED_THROW(InputError, dir << "/MANIFEST does not list " << name);
    std::uint64_t size = 0;
    const auto h = file_hash(dir + "/" + name, &size);
    if (size != it->size || h != it->hash)
      MARLSCHED_THROW(InputError, "checkpoint file " << dir << "/" << name
                                                     << " is corrupted (size or checksum differs "
                                                        "from the manifest)");
  }
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
    fs::create_directories(base);
    fs::remove_all(tmp);
    fs::create_directories(tmp);
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

}  // namespace marlsched
