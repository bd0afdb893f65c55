#include "train/manifest.hpp"

#include <algorithm>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "core/error.hpp"
#include "core/serialize.hpp"

namespace marlsched {

std::uint64_t file_hash(const std::string& path, std::uint64_t* size) {
  std::ifstream in(path, std::ios::binary);
  if (!in) MARLSCHED_THROW(InputError, "cannot open '" << path << "'");
  std::uint64_t h = kFnvOffset, n = 0;
  char buf[1 << 16];
  while (in) {
    in.read(buf, sizeof buf);
    const auto got = static_cast<std::size_t>(in.gcount());
    h = fnv1a64(buf, got, h);
    n += got;
  }
  if (size) *size = n;
  return h;
}

std::string config_fingerprint(const std::string& toml,
                               const std::vector<std::string>& may_change) {
  std::uint64_t h = kFnvOffset;
  std::istringstream in(toml);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const auto key = line.substr(0, line.find(' '));
    if (std::find(may_change.begin(), may_change.end(), key) != may_change.end()) continue;
    line += '\n';
    h = fnv1a64(line.data(), line.size(), h);
  }
  std::ostringstream os;
  os << std::hex << std::setw(16) << std::setfill('0') << h;
  return os.str();
}

namespace {
constexpr char kConfigSeal[] = "# marlsched checksum ";

std::string hex16(std::uint64_t h) {
  std::ostringstream os;
  os << std::hex << std::setw(16) << std::setfill('0') << h;
  return os.str();
}
}  // namespace

std::string sealed_config(const std::string& toml) {
  std::string text = toml;
  if (!text.empty() && text.back() != '\n') text += '\n';
  return text + kConfigSeal + hex16(fnv1a64(text.data(), text.size(), kFnvOffset)) + "\n";
}

void check_sealed_config(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return;  // its absence is reported where the file is read
  std::ostringstream all;
  all << in.rdbuf();
  const std::string text = all.str();
  const auto at = text.rfind(std::string("\n") + kConfigSeal);
  if (at == std::string::npos) return;
  const std::string body = text.substr(0, at + 1);
  std::string recorded = text.substr(at + 1 + sizeof kConfigSeal - 1);
  while (!recorded.empty() && (recorded.back() == '\n' || recorded.back() == '\r'))
    recorded.pop_back();
  MARLSCHED_REQUIRE_INPUT(recorded == hex16(fnv1a64(body.data(), body.size(), kFnvOffset)),
                          path << " fails its checksum: a byte changed since marlsched wrote it. "
                                  "If you edited it on purpose, give the changes as flags "
                                  "instead (they override the file), or delete its last line ('"
                               << kConfigSeal << "…') to take the file as yours");
}

void write_manifest(const std::string& path, const Manifest& m) {
  std::ostringstream out;
  out << "marlsched-checkpoint 2\n"
      << "version " << m.version << "\n"
      << "iteration " << m.iteration << "\n"
      << "ranks " << m.ranks << "\n"
      << "agents_per_rank " << m.agents_per_rank << "\n"
      << "envs_per_rank " << m.envs_per_rank << "\n"
      << "config " << m.config_fingerprint << "\n"
      << "blas " << m.blas << "\n"
      << "traj_segment " << m.traj_segment << "\n"
      << "traj_rows " << m.traj_rows << "\n";
  for (const auto& f : m.files)
    out << "file " << f.name << ' ' << f.size << ' ' << std::hex << f.hash << std::dec << "\n";
  // The manifest's own checksum: a resume trusts its counts (traj_rows cuts the trajectories).
  const std::string body = out.str();
  out << "checksum " << std::hex << std::setw(16) << std::setfill('0')
      << fnv1a64(body.data(), body.size(), kFnvOffset) << "\nend\n";
  write_file_atomic(path, out.str());
}

Manifest read_manifest(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) MARLSCHED_THROW(InputError, "cannot open checkpoint manifest '" << path << "'");
  Manifest m;
  std::string line;
  int lineno = 0;
  bool header = false, end = false, summed = false;
  std::uint64_t body_hash = kFnvOffset;  // of every line before 'checksum'
  std::string body;
  auto bad = [&](const std::string& why) {
    MARLSCHED_THROW(InputError, path << ":" << lineno << ": " << why);
  };
  while (std::getline(in, line)) {
    ++lineno;
    if (end) bad("data after 'end'");
    std::istringstream ls(line);
    std::string key;
    ls >> key;
    if (key != "checksum" && key != "end") {
      body = line + "\n";
      body_hash = fnv1a64(body.data(), body.size(), body_hash);
    }
    if (!header) {
      int v = 0;
      if (key != "marlsched-checkpoint" || !(ls >> v)) bad("not a marlsched checkpoint manifest");
      if (v == 1)
        bad("a manifest without a checksum, written by a marlsched older than this one: resume "
            "it with the marlsched that wrote it");
      if (v != 2) bad("a manifest of format " + std::to_string(v) + " (this marlsched reads 2)");
      header = true;
      continue;
    }
    if (summed && key != "end") bad("entry after 'checksum'");
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
    } else if (key == "blas") {
      std::getline(ls >> std::ws, m.blas);
    } else if (key == "traj_segment") {
      ok = static_cast<bool>(ls >> m.traj_segment) && m.traj_segment >= -1;
    } else if (key == "traj_rows") {
      ok = static_cast<bool>(ls >> m.traj_rows) && m.traj_rows >= 0;
    } else if (key == "file") {
      ManifestFile f;
      ok = static_cast<bool>(ls >> f.name >> f.size >> std::hex >> f.hash) &&
           f.name.find('/') == std::string::npos;
      m.files.push_back(f);
    } else if (key == "checksum") {
      std::uint64_t h = 0;
      ok = static_cast<bool>(ls >> std::hex >> h);
      if (ok && h != body_hash)
        bad("the manifest fails its checksum (a changed or damaged byte above this line)");
      summed = true;
    } else if (key == "end") {
      if (!summed) bad("no 'checksum' before 'end'");
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

}  // namespace marlsched
