#include "io/dataset.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <sstream>

#include "core/error.hpp"
#include "io/h5.hpp"
#include "io/trajectory.hpp"
#include "io/trajectory_layout.hpp"

namespace fs = std::filesystem;

namespace marlsched {

using namespace traj_layout;

namespace {

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return "[" + s + "]";
}

/// The datasets offline learning reads (log_probs is read where present).
struct Needed {
  const char* path;
  int rank;  ///< dimensions: [S, W] (2), [S, W, N] (3), [S, W, N, d] (4)
};
constexpr Needed kNeeded[] = {{"observations", 4}, {"next_observations", 4}, {"actions", 3},
                              {"rewards", 3},      {"terminations", 2},      {"truncations", 2}};

/// Reads `count` elements of [start, start + count) (per dimension) of dataset `name` into `out`.
template <class T>
void read_slab(hid_t file, const std::string& path, const std::string& name, hid_t dxpl,
               const std::vector<hsize_t>& start, const std::vector<hsize_t>& count,
               std::vector<T>& out) {
  h5::Id ds = h5::open_dataset(file, name, true);
  h5::Id fs_ = h5::dataset_space(ds.get());
  h5::check(
      H5Sselect_hyperslab(fs_.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr),
      "H5Sselect_hyperslab");
  hsize_t n = 1;
  for (auto c : count) n *= c;
  out.resize(static_cast<std::size_t>(n));
  h5::Id ms = h5::space(count);
  h5::check(H5Dread(ds.get(), h5::native<T>(), ms.get(), fs_.get(), dxpl, out.data()),
            path + ": cannot read " + name + " (the file is damaged)", true);
}

/// Appends `src` [S, W, inner] as world-major rows [W, S, inner] to `dst`.
template <class T>
void append_world_major(const std::vector<T>& src, std::int64_t S, int W, std::size_t inner,
                        std::vector<T>& dst) {
  const std::size_t base = dst.size();
  dst.resize(base + src.size());
  for (int w = 0; w < W; ++w)
    for (std::int64_t s = 0; s < S; ++s)
      std::copy_n(
          src.data() + (static_cast<std::size_t>(s) * W + static_cast<std::size_t>(w)) * inner,
          inner,
          dst.data() + base +
              (static_cast<std::size_t>(w) * static_cast<std::size_t>(S) +
               static_cast<std::size_t>(s)) *
                  inner);
}

/// Values beyond these are not an env's (observations are scaled to order one, rewards to
/// hundreds per step): a damaged, foreign or hand-edited file.
constexpr double kMaxAbsObservation = 1e6, kMaxAbsReward = 1e9;

/// Reads rows [first, first + count) of dataset `name` slab by slab as T (so HDF5 checks every
/// chunk's checksum) and hands each element to `check(value)`, which returns an empty string or
/// what is wrong with the value; the error names the file, the dataset, the row and the element.
template <class T, class Check>
void scan_rows(hid_t file, const std::string& path, const char* name, std::int64_t first,
               std::int64_t count, Check check) {
  h5::Id ds = h5::open_dataset(file, name, true);
  const auto d = h5::dims(ds.get());
  hsize_t row = 1;
  for (std::size_t i = 1; i < d.size(); ++i) row *= d[i];
  const hsize_t slab =
      std::max<hsize_t>(1, (hsize_t{16} << 20) / (sizeof(T) * std::max<hsize_t>(1, row)));
  h5::Id fsp = h5::dataset_space(ds.get());
  std::vector<T> buf;
  const auto end = static_cast<hsize_t>(first + count);
  for (auto r0 = static_cast<hsize_t>(first); r0 < end; r0 += slab) {
    std::vector<hsize_t> start(d.size(), 0), n = d;
    start[0] = r0;
    n[0] = std::min<hsize_t>(slab, end - r0);
    h5::check(
        H5Sselect_hyperslab(fsp.get(), H5S_SELECT_SET, start.data(), nullptr, n.data(), nullptr),
        "H5Sselect_hyperslab");
    h5::Id ms = h5::space(n);
    buf.resize(static_cast<std::size_t>(n[0] * row));
    if (H5Dread(ds.get(), h5::native<T>(), ms.get(), fsp.get(), H5P_DEFAULT, buf.data()) < 0)
      MARLSCHED_THROW(InputError, path << " is damaged: " << name << " rows " << r0 << " to "
                                       << r0 + n[0] - 1 << " fail their checksum or cannot be "
                                       << "read (" << h5::error_stack() << ")");
    for (std::size_t i = 0; i < buf.size(); ++i) {
      const std::string why = check(buf[i]);
      if (!why.empty())
        MARLSCHED_THROW(InputError, path << ": " << name << " row " << r0 + i / row << " (element "
                                         << i % row << " of the row) " << why
                                         << "; offline learning reads only what an env could "
                                            "have written");
    }
  }
}

std::string bounded(float v, double limit, const char* what) {
  if (!std::isfinite(v)) return "is not finite (" + std::to_string(v) + ")";
  if (std::abs(static_cast<double>(v)) > limit) {
    std::ostringstream os;
    os << "holds " << v << ", beyond the " << what << " an env writes (±" << limit << ")";
    return os.str();
  }
  return {};
}

/// Every value a rank's share of the rows holds is one the env could have written: actions
/// within the action count, finite observations and rewards of plausible size, episode flags 0
/// or 1 (issue 42).
void check_values(hid_t r, const std::string& path, const EnvSpec& spec, std::int64_t first,
                  std::int64_t count) {
  const int n_actions = spec.num_actions();
  for (const char* obs : {"observations", "next_observations"})
    scan_rows<float>(r, path, obs, first, count,
                     [](float v) { return bounded(v, kMaxAbsObservation, "observations"); });
  scan_rows<float>(r, path, "rewards", first, count,
                   [](float v) { return bounded(v, kMaxAbsReward, "rewards"); });
  scan_rows<std::int32_t>(r, path, "actions", first, count, [n_actions](std::int32_t a) {
    return a >= 0 && a < n_actions ? std::string()
                                   : "holds action " + std::to_string(a) + ", but this env has " +
                                         std::to_string(n_actions) + " actions (0 to " +
                                         std::to_string(n_actions - 1) + ")";
  });
  for (const char* flag : {"terminations", "truncations"})
    scan_rows<std::uint8_t>(r, path, flag, first, count, [](std::uint8_t f) {
      return f <= 1 ? std::string() : "holds " + std::to_string(f) + " (a flag is 0 or 1)";
    });
}

/// Every world's steps end at least one episode (a termination or truncation): a file without
/// one is cut before its first episode finished, or its flags were never set.
void check_episode_ends(hid_t r, const std::string& path, std::int64_t rows, int worlds) {
  std::vector<std::uint8_t> ends(static_cast<std::size_t>(worlds), 0);
  for (const char* flag : {"terminations", "truncations"}) {
    std::int64_t i = 0;
    scan_rows<std::uint8_t>(r, path, flag, 0, rows, [&](std::uint8_t f) {
      ends[static_cast<std::size_t>(i++ % worlds)] |= f;
      return std::string();
    });
  }
  for (int w = 0; w < worlds; ++w)
    MARLSCHED_REQUIRE_INPUT(ends[static_cast<std::size_t>(w)] != 0,
                            path << ": world " << w << " of its " << rows
                                 << " rows ends no episode (no termination or truncation flag "
                                    "is set): the file was cut before an episode finished, or "
                                    "its flags were not written");
}

}  // namespace

std::vector<std::string> dataset_files(const std::vector<std::string>& entries) {
  std::vector<std::string> files;
  for (const auto& e : entries) {
    std::error_code ec;
    if (fs::is_regular_file(e, ec)) {
      files.push_back(e);
      continue;
    }
    MARLSCHED_REQUIRE_INPUT(fs::is_directory(e, ec), "dataset '" << e << "' does not exist");
    std::vector<std::string> segs;
    for (int i = 0; fs::exists(traj_segment_path(e, i)); ++i)
      segs.push_back(traj_segment_path(e, i));
    MARLSCHED_REQUIRE_INPUT(!segs.empty(), "dataset '" << e
                                                       << "' is a directory without trajectory "
                                                          "files (RUN_DIR/trajectories/"
                                                          "segment-000.h5)");
    files.insert(files.end(), segs.begin(), segs.end());
  }
  MARLSCHED_REQUIRE_INPUT(!files.empty(), "no dataset given");
  return files;
}

DatasetInfo inspect_dataset(const std::string& path, const EnvSpec& spec, int num_agents, int share,
                            int shares) {
  h5::Id f = open_trajectory_file(path, false);
  const hid_t r = f.get();
  DatasetInfo info;
  info.path = path;
  info.env = h5::read_attr_string(r, "env");
  MARLSCHED_REQUIRE_INPUT(info.env == spec.name, path << " is a dataset of env '" << info.env
                                                      << "'; this run's env is '" << spec.name
                                                      << "'");
  info.num_agents = static_cast<int>(h5::read_attr_int(r, "num_agents"));
  MARLSCHED_REQUIRE_INPUT(info.num_agents == num_agents, path << " holds " << info.num_agents
                                                              << " agents; this run has "
                                                              << num_agents);
  const auto obs = h5::read_attr_strings(r, "obs_fields");
  MARLSCHED_REQUIRE_INPUT(obs == spec.obs_fields,
                          path << ": its observations " << joined(obs) << " are not this env's "
                               << joined(spec.obs_fields) << " (another config or version)");
  const auto acts = h5::read_attr_strings(r, "action_names");
  MARLSCHED_REQUIRE_INPUT(acts == spec.action_names,
                          path << ": its actions " << joined(acts) << " are not this env's "
                               << joined(spec.action_names) << " (another config)");
  const std::int64_t worlds = h5::read_attr_int(r, "worlds");
  MARLSCHED_REQUIRE_INPUT(worlds >= 1 && worlds <= (1 << 20),
                          path << ": its 'worlds' attribute is " << worlds << " (damaged)");
  info.worlds = static_cast<int>(worlds);
  info.behaviour_policy = h5::has_attr(r, "behaviour_policy")
                              ? h5::read_attr_string(r, "behaviour_policy")
                              : h5::read_attr_string(r, "algo");
  info.behaviour_epsilon = h5::has_attr(r, "behaviour_epsilon")
                               ? h5::read_attr_double(r, "behaviour_epsilon")
                               : std::numeric_limits<double>::quiet_NaN();
  const auto d = static_cast<hsize_t>(spec.obs_dim());
  const auto W = static_cast<hsize_t>(info.worlds), N = static_cast<hsize_t>(num_agents);
  std::int64_t S = -1;
  for (const auto& need : kNeeded) {
    MARLSCHED_REQUIRE_INPUT(h5::exists(r, need.path),
                            path << " lacks the dataset " << need.path
                                 << " (offline learning reads observations, next_observations, "
                                    "actions and rewards: write them with --traj-fields)");
    h5::Id ds = h5::open_dataset(r, need.path, true);
    const auto dims = h5::dims(ds.get());
    std::vector<hsize_t> want = {dims.empty() ? 0 : dims[0], W, N, d};
    want.resize(static_cast<std::size_t>(need.rank));
    MARLSCHED_REQUIRE_INPUT(dims == want, path << ": " << need.path
                                               << " does not have the shape of this layout "
                                                  "(steps, worlds, agents, observation size)");
    if (S < 0) S = static_cast<std::int64_t>(dims[0]);
    MARLSCHED_REQUIRE_INPUT(static_cast<std::int64_t>(dims[0]) == S,
                            path << ": its datasets hold different numbers of rows (damaged)");
  }
  // Only the rows the writer declares: a file extended past its last flush (a killed run, or an
  // edit) holds allocated rows that were never written.
  if (h5::has_attr(r, "rows")) {
    const std::int64_t declared = h5::read_attr_int(r, "rows");
    MARLSCHED_REQUIRE_INPUT(declared >= 0 && declared <= S,
                            path << ": its 'rows' attribute says " << declared
                                 << " rows were written, but its datasets hold " << S
                                 << " (damaged)");
    S = declared;
  }
  MARLSCHED_REQUIRE_INPUT(S > 0, path << " holds no rows");
  info.rows = S;
  // This caller's share of the rows, read through once so that HDF5 checks every chunk's
  // checksum and every value is one an env could have written: the ranks of a job together
  // read every row once before training.
  if (shares > 0) {
    const std::int64_t first = S * share / shares, last = S * (share + 1) / shares;
    check_values(r, path, spec, first, last - first);
    check_episode_ends(r, path, S, info.worlds);
  }
  return info;
}

GlobalObs LocalDataset::global(std::int64_t r, bool next) const {
  const auto& v = next ? next_observations : observations;
  return {v.data() + static_cast<std::size_t>(r) * static_cast<std::size_t>(num_agents) *
                         static_cast<std::size_t>(obs_dim),
          num_agents, obs_dim};
}

LocalDataset read_dataset(const dist::Comm& comm, const std::vector<std::string>& files,
                          const EnvSpec& spec, int first_agent, int local_agents) {
  LocalDataset out;
  out.num_agents = local_agents * comm.size();
  out.first_agent = first_agent;
  out.local_agents = local_agents;
  out.obs_dim = spec.obs_dim();
  h5::Id dxpl = h5::plist(H5P_DATASET_XFER);
  h5::check(H5Pset_dxpl_mpio(dxpl.get(), H5FD_MPIO_COLLECTIVE), "H5Pset_dxpl_mpio");
  const auto N = static_cast<hsize_t>(out.num_agents), d = static_cast<hsize_t>(out.obs_dim);
  const auto f0 = static_cast<hsize_t>(first_agent), K = static_cast<hsize_t>(local_agents);
  std::vector<float> fbuf;
  std::vector<std::int32_t> ibuf;
  std::vector<std::uint8_t> ubuf;
  for (const auto& path : files) {
    const DatasetInfo info = inspect_dataset(path, spec, out.num_agents, 0, 0);
    const auto S = static_cast<hsize_t>(info.rows), W = static_cast<hsize_t>(info.worlds);
    out.file_offsets.push_back(out.rows);
    h5::Id f = h5::open_parallel(path, comm.raw());
    const hid_t r = f.get();
    read_slab(r, path, "observations", dxpl.get(), {0, 0, 0, 0}, {S, W, N, d}, fbuf);
    append_world_major(fbuf, info.rows, info.worlds, N * d, out.observations);
    read_slab(r, path, "next_observations", dxpl.get(), {0, 0, 0, 0}, {S, W, N, d}, fbuf);
    append_world_major(fbuf, info.rows, info.worlds, N * d, out.next_observations);
    read_slab(r, path, "actions", dxpl.get(), {0, 0, f0}, {S, W, K}, ibuf);
    append_world_major(ibuf, info.rows, info.worlds, K, out.actions);
    read_slab(r, path, "rewards", dxpl.get(), {0, 0, 0}, {S, W, N}, fbuf);
    std::vector<float> mean(static_cast<std::size_t>(S * W));
    for (std::size_t i = 0; i < mean.size(); ++i) {
      const float* row = fbuf.data() + i * N;
      double sum = 0;
      for (hsize_t a = 0; a < N; ++a) sum += row[a];
      mean[i] = static_cast<float>(sum / static_cast<double>(N));
    }
    append_world_major(fbuf, info.rows, info.worlds, N, out.rewards);
    append_world_major(mean, info.rows, info.worlds, 1, out.mean_rewards);
    if (h5::exists(r, "log_probs")) {
      read_slab(r, path, "log_probs", dxpl.get(), {0, 0, f0}, {S, W, K}, fbuf);
    } else {
      fbuf.assign(static_cast<std::size_t>(S * W * K), std::numeric_limits<float>::quiet_NaN());
    }
    append_world_major(fbuf, info.rows, info.worlds, K, out.log_probs);
    read_slab(r, path, "terminations", dxpl.get(), {0, 0}, {S, W}, ubuf);
    append_world_major(ubuf, info.rows, info.worlds, 1, out.terminations);
    read_slab(r, path, "truncations", dxpl.get(), {0, 0}, {S, W}, ubuf);
    append_world_major(ubuf, info.rows, info.worlds, 1, out.truncations);
    for (int w = 0; w < info.worlds; ++w) out.block_offsets.push_back(out.rows + w * info.rows);
    out.rows += info.rows * info.worlds;
  }
  out.file_offsets.push_back(out.rows);
  out.block_offsets.push_back(out.rows);
  return out;
}

}  // namespace marlsched
