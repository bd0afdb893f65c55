#include "io/trajectory.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iomanip>
#include <sstream>

#include "core/blas.hpp"
#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/version.hpp"
#include "io/h5.hpp"

namespace fs = std::filesystem;

namespace marlsched {

namespace {

constexpr const char* kFormat = "marlsched-trajectories";
constexpr std::int64_t kFormatVersion = 1;

enum class Scope { Agent, World, Row };
enum class Type { F32, I32, I64, U8 };
/// The trailing dimension of per-agent data: none, the observation size, the component count.
enum class Inner { None, ObsDim, Components };
using Bytes = std::pair<const void*, std::size_t>;

template <class T>
Bytes bytes_of(const std::vector<T>& v) {
  return {v.data(), v.size() * sizeof(T)};
}

/// One dataset of the layout, and where its data is in a TrajStep.
struct FieldDef {
  const char* name;  ///< as named in TrajConfig::fields
  const char* path;  ///< inside the file
  Scope scope;
  Type type;
  Inner inner;
  bool optional;
  Bytes (*step)(const TrajStep&);
  const char* description;
};

const std::vector<FieldDef>& field_defs() {
  using S = Scope;
  using T = Type;
  using I = Inner;
  static const std::vector<FieldDef> defs = {
      {"observations", "observations", S::Agent, T::F32, I::ObsDim, true,
       [](const TrajStep& s) { return bytes_of(s.observations); },
       "o_t of each agent before it acts; [step, world, agent, obs_dim]"},
      {"next_observations", "next_observations", S::Agent, T::F32, I::ObsDim, true,
       [](const TrajStep& s) { return bytes_of(s.next_observations); },
       "o_{t+1}; at an episode end the terminal observation, not the next episode's first"},
      {"actions", "actions", S::Agent, T::I32, I::None, true,
       [](const TrajStep& s) { return bytes_of(s.actions); },
       "a_t, index into the attribute action_names"},
      {"rewards", "rewards", S::Agent, T::F32, I::None, true,
       [](const TrajStep& s) { return bytes_of(s.rewards); },
       "r_t: the env's reward of each agent (training mixes in the team reward, see config)"},
      {"log_probs", "log_probs", S::Agent, T::F32, I::None, true,
       [](const TrajStep& s) { return bytes_of(s.log_probs); },
       "log pi(a_t | o_t) of the behaviour policy"},
      {"values", "values", S::Agent, T::F32, I::None, true,
       [](const TrajStep& s) { return bytes_of(s.values); },
       "V(s_t, agent) of the critic, denormalised"},
      {"reward_components", "infos/reward_components", S::Agent, T::F32, I::Components, true,
       [](const TrajStep& s) { return bytes_of(s.reward_components); },
       "r_t's components, names in the attribute 'names'; [step, world, agent, component]"},
      {"terminations", "terminations", S::World, T::U8, I::None, false,
       [](const TrajStep& s) { return bytes_of(s.terminations); },
       "1 where the MDP reached a terminal state at this step"},
      {"truncations", "truncations", S::World, T::U8, I::None, false,
       [](const TrajStep& s) { return bytes_of(s.truncations); },
       "1 where the episode was cut by its time limit at this step (not a terminal state)"},
      {"episode_ids", "infos/episode_ids", S::World, T::I64, I::None, false,
       [](const TrajStep& s) { return bytes_of(s.episode_ids); },
       "run-wide episode id: episode number of the world * worlds + world"},
      {"episode_steps", "infos/episode_steps", S::World, T::I32, I::None, false,
       [](const TrajStep& s) { return bytes_of(s.episode_steps); },
       "step index t within the episode"},
      {"iterations", "infos/iterations", S::Row, T::I32, I::None, false,
       [](const TrajStep& s) {
         return Bytes{&s.iteration, sizeof s.iteration};
       },
       "training iteration of the row"},
  };
  return defs;
}

hid_t mem_type(Type t) {
  switch (t) {
    case Type::I32:
      return H5T_NATIVE_INT32;
    case Type::I64:
      return H5T_NATIVE_INT64;
    case Type::U8:
      return H5T_NATIVE_UINT8;
    default:
      return H5T_NATIVE_FLOAT;
  }
}
hid_t file_type(Type t) {
  switch (t) {
    case Type::I32:
      return H5T_STD_I32LE;
    case Type::I64:
      return H5T_STD_I64LE;
    case Type::U8:
      return H5T_STD_U8LE;
    default:
      return H5T_IEEE_F32LE;
  }
}

}  // namespace

const std::vector<std::string>& traj_optional_fields() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& d : field_defs())
      if (d.optional) v.emplace_back(d.name);
    return v;
  }();
  return names;
}

void TrajConfig::bind(OptionBinder& b) {
  b.group("Trajectories (HDF5)");
  b.add("traj-every", every,
        "write trajectories to RUN_DIR/trajectories/segment-NNN.h5, flushing every k "
        "iterations (0: off)");
  b.add("traj-fields", fields,
        "optional datasets: observations, next_observations, actions, rewards, log_probs, "
        "values, reward_components");
  b.add("traj-compression", compression, "chunk compression: deflate, szip or none");
  b.add("traj-level", level, "deflate level (1-9)");
  b.add("traj-shuffle", shuffle, "byte-shuffle chunks before deflate");
  b.add("traj-chunk-steps", chunk_steps, "rows per HDF5 chunk (0: the rollout length)");
}

void TrajConfig::validate() const {
  MARLSCHED_REQUIRE(every >= 0, "--traj-every must be >= 0 (0 turns logging off), got " << every);
  for (const auto& f : fields) {
    const auto& known = traj_optional_fields();
    if (std::find(known.begin(), known.end(), f) == known.end()) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      MARLSCHED_THROW(ConfigError,
                      "--traj-fields: unknown field '" << f << "' (known: " << list << ")");
    }
  }
  MARLSCHED_REQUIRE(
      compression == "deflate" || compression == "szip" || compression == "none",
      "--traj-compression must be deflate, szip or none, got '" << compression << "'");
  MARLSCHED_REQUIRE(level >= 1 && level <= 9, "--traj-level must be in 1..9, got " << level);
  MARLSCHED_REQUIRE(chunk_steps >= 0, "--traj-chunk-steps must be >= 0, got " << chunk_steps);
}

std::string traj_segment_path(const std::string& run_dir, int segment) {
  std::ostringstream os;
  os << run_dir << "/trajectories/segment-" << std::setw(3) << std::setfill('0') << segment
     << ".h5";
  return os.str();
}

struct TrajectoryWriter::Impl {
  struct Field {
    const FieldDef* def;
    std::vector<hsize_t> local;  ///< one step of this rank: [W, K, inner] / [W] / []
    std::size_t step_bytes = 0;
    h5::Id dataset;
    std::vector<std::byte> buffer;
  };
  const dist::Comm& comm;
  TrajConfig cfg;
  TrajMeta meta;
  std::string path;
  h5::Id file;
  h5::Id dxpl;
  std::vector<Field> fields;
  std::int64_t rows = 0, buffered = 0;
  double seconds = 0;
  bool closed = false;

  Impl(const dist::Comm& c, const TrajConfig& cf, std::string p, const TrajMeta& m)
      : comm(c), cfg(cf), meta(m), path(std::move(p)) {}

  /// Global dims of a field with `steps` rows.
  std::vector<hsize_t> global_dims(const Field& f, hsize_t steps) const {
    std::vector<hsize_t> d = f.local;
    d.insert(d.begin(), steps);
    if (f.def->scope == Scope::Agent)
      d[2] = static_cast<hsize_t>(meta.agents_per_rank) * static_cast<hsize_t>(comm.size());
    return d;
  }

  void create() {
    const int W = meta.worlds, K = meta.agents_per_rank;
    const int d = meta.spec.obs_dim(), C = static_cast<int>(meta.spec.reward_components.size());
    const std::size_t obs_step_bytes = static_cast<std::size_t>(W * K * d) * sizeof(float);
    hsize_t cs = static_cast<hsize_t>(cfg.chunk_steps > 0 ? cfg.chunk_steps : meta.rollout_steps);
    if (cfg.chunk_steps == 0)  // keep the largest chunk within 1 MiB
      while (cs > 1 && cs * obs_step_bytes > (1u << 20)) cs = (cs + 1) / 2;

    file = h5::create_parallel(path, comm.raw());
    dxpl = h5::plist(H5P_DATASET_XFER);
    h5::check(H5Pset_dxpl_mpio(dxpl.get(), H5FD_MPIO_COLLECTIVE), "H5Pset_dxpl_mpio");
    h5::Id infos = h5::create_group(file.get(), "infos");

    if (cfg.compression == "szip") {
      unsigned info = 0;
      if (H5Zfilter_avail(H5Z_FILTER_SZIP) <= 0 || H5Zget_filter_info(H5Z_FILTER_SZIP, &info) < 0 ||
          !(info & H5Z_FILTER_CONFIG_ENCODE_ENABLED))
        MARLSCHED_THROW(ConfigError,
                        "--traj-compression szip: this HDF5 library cannot encode szip");
    }
    for (const auto& def : field_defs()) {
      const bool on = !def.optional ||
                      std::find(cfg.fields.begin(), cfg.fields.end(), def.name) != cfg.fields.end();
      if (!on) continue;
      Field f;
      f.def = &def;
      const int inner = def.inner == Inner::ObsDim ? d : def.inner == Inner::Components ? C : 0;
      if (def.scope == Scope::Agent) {
        f.local = {static_cast<hsize_t>(W), static_cast<hsize_t>(K)};
        if (inner > 0) f.local.push_back(static_cast<hsize_t>(inner));
      } else if (def.scope == Scope::World) {
        f.local = {static_cast<hsize_t>(W)};
      }
      hsize_t elems = 1;
      for (auto x : f.local) elems *= x;
      f.step_bytes = static_cast<std::size_t>(elems) * H5Tget_size(mem_type(def.type));

      const auto dims = global_dims(f, 0);
      auto maxdims = dims;
      maxdims[0] = H5S_UNLIMITED;
      auto chunk = f.local;  // a chunk is this rank's block: [cs, W, K, inner]
      chunk.insert(chunk.begin(), cs);
      h5::Id sp = h5::space(dims, &maxdims);
      h5::Id dcpl = h5::plist(H5P_DATASET_CREATE);
      h5::check(H5Pset_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data()),
                "H5Pset_chunk");
      h5::check(H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_NEVER), "H5Pset_fill_time");
      h5::check(H5Pset_obj_track_times(dcpl.get(), false), "H5Pset_obj_track_times");
      if (cfg.compression == "deflate") {
        if (cfg.shuffle) h5::check(H5Pset_shuffle(dcpl.get()), "H5Pset_shuffle");
        h5::check(H5Pset_deflate(dcpl.get(), static_cast<unsigned>(cfg.level)), "H5Pset_deflate");
      } else if (cfg.compression == "szip") {
        // szip codes blocks of an even number (<= 32) of elements; tiny chunks stay raw.
        hsize_t n = 1;
        for (auto x : chunk) n *= x;
        const unsigned ppb = static_cast<unsigned>(std::min<hsize_t>(16, n & ~hsize_t{1}));
        if (ppb >= 2)
          h5::check(H5Pset_szip(dcpl.get(), H5_SZIP_NN_OPTION_MASK, ppb), "H5Pset_szip");
      }
      // Last in the pipeline: the checksum covers the chunk's stored (compressed) bytes, so any
      // damaged chunk fails its read with a checksum error instead of inflating garbage.
      h5::check(H5Pset_fletcher32(dcpl.get()), "H5Pset_fletcher32");
      f.dataset = h5::Id(static_cast<hid_t>(h5::check(
                             H5Dcreate2(file.get(), def.path, file_type(def.type), sp.get(),
                                        H5P_DEFAULT, dcpl.get(), H5P_DEFAULT),
                             std::string("cannot create dataset ") + def.path + " in " + path)),
                         H5Dclose);
      h5::write_attr(f.dataset.get(), "description", std::string(def.description));
      if (def.inner == Inner::Components)
        h5::write_attr(f.dataset.get(), "names", meta.spec.reward_components);
      fields.push_back(std::move(f));
    }
    write_root_attributes();
    h5::check(H5Fflush(file.get(), H5F_SCOPE_GLOBAL), "H5Fflush " + path);
    comm.barrier();
  }

  void write_root_attributes() {
    const hid_t r = file.get();
    const auto& s = meta.spec;
    h5::write_attr(r, "format", std::string(kFormat));
    h5::write_attr(r, "format_version", kFormatVersion);
    h5::write_attr(r, "marlsched_version", std::string(MARLSCHED_VERSION));
    h5::write_attr(r, "git_revision", std::string(MARLSCHED_GIT_REVISION));
    h5::write_attr(r, "blas", blas_info().describe());
    h5::write_attr(r, "env", s.name);
    h5::write_attr(r, "algo", meta.algo);
    h5::write_attr(r, "config", meta.config_toml);
    h5::write_attr(r, "observation_space",
                   "Box(-inf, inf, (" + std::to_string(s.obs_dim()) + ",), float32)");
    h5::write_attr(r, "action_space", "Discrete(" + std::to_string(s.num_actions()) + ")");
    h5::write_attr(r, "obs_fields", s.obs_fields);
    h5::write_attr(r, "num_public_obs_fields", static_cast<std::int64_t>(s.num_public));
    h5::write_attr(r, "action_names", s.action_names);
    if (s.num_targets() > 0) {  // targeted actions: action = m·T + t acts on agent targets[i][t]
      std::string t = "[";
      for (std::size_t i = 0; i < s.targets.size(); ++i) {
        t += i ? ", [" : "[";
        for (std::size_t j = 0; j < s.targets[i].size(); ++j)
          t += (j ? ", " : "") + std::to_string(s.targets[i][j]);
        t += "]";
      }
      h5::write_attr(r, "action_targets", t + "]");
    }
    h5::write_attr(r, "reward_components", s.reward_components);
    // Components that are rates, which reports average over agents instead of summing.
    if (!s.mean_components.empty()) h5::write_attr(r, "mean_components", s.mean_components);
    h5::write_attr(r, "episode_length", static_cast<std::int64_t>(s.episode_length));
    h5::write_attr(r, "global_state",
                   std::string("observations[s, w] flattened over agents: every agent's "
                               "observation, the centralized critic's input"));
    h5::write_attr(r, "seed", static_cast<std::int64_t>(meta.seed));
    h5::write_attr(r, "ranks", static_cast<std::int64_t>(comm.size()));
    h5::write_attr(r, "agents_per_rank", static_cast<std::int64_t>(meta.agents_per_rank));
    h5::write_attr(r, "num_agents", static_cast<std::int64_t>(meta.agents_per_rank) * comm.size());
    h5::write_attr(r, "worlds", static_cast<std::int64_t>(meta.worlds));
    h5::write_attr(r, "rollout_steps", static_cast<std::int64_t>(meta.rollout_steps));
    h5::write_attr(r, "segment", static_cast<std::int64_t>(meta.segment));
    h5::write_attr(r, "first_iteration", static_cast<std::int64_t>(meta.first_iteration));
    h5::write_attr(r, "rows", std::int64_t{0});
    h5::write_attr(r, "last_flushed_iteration",
                   static_cast<std::int64_t>(meta.first_iteration - 1));
    h5::write_attr(r, "complete", std::int64_t{0});
  }

  void write_field(Field& f) {
    const auto dims = global_dims(f, static_cast<hsize_t>(rows + buffered));
    h5::check(H5Dset_extent(f.dataset.get(), dims.data()),
              std::string("cannot extend ") + f.def->path + " in " + path);
    h5::Id fs = h5::dataset_space(f.dataset.get());
    auto count = f.local;
    count.insert(count.begin(), static_cast<hsize_t>(buffered));
    h5::Id ms = h5::space(count);
    const bool mine = f.def->scope == Scope::Agent || comm.is_root();
    if (mine) {
      std::vector<hsize_t> start(count.size(), 0);
      start[0] = static_cast<hsize_t>(rows);
      if (f.def->scope == Scope::Agent)
        start[2] = static_cast<hsize_t>(meta.agents_per_rank) * static_cast<hsize_t>(comm.rank());
      h5::check(H5Sselect_hyperslab(fs.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(),
                                    nullptr),
                "H5Sselect_hyperslab");
    } else {  // world-level data: rank 0 writes it, the others join the collective call
      h5::check(H5Sselect_none(fs.get()), "H5Sselect_none");
      h5::check(H5Sselect_none(ms.get()), "H5Sselect_none");
    }
    h5::check(H5Dwrite(f.dataset.get(), mem_type(f.def->type), ms.get(), fs.get(), dxpl.get(),
                       f.buffer.data()),
              std::string("cannot write ") + f.def->path + " to " + path);
    f.buffer.clear();
  }

  void flush(int last_iteration) {
    const double t0 = now();
    if (buffered > 0) {
      for (auto& f : fields) write_field(f);
      rows += buffered;
      buffered = 0;
    }
    h5::write_attr(file.get(), "rows", rows);
    h5::write_attr(file.get(), "last_flushed_iteration", static_cast<std::int64_t>(last_iteration));
    h5::check(H5Fflush(file.get(), H5F_SCOPE_GLOBAL), "cannot flush " + path);
    // Nobody leaves the flush before everyone's data is on its way to disk: a rank that dies
    // later cannot interrupt another rank's half-written flush.
    comm.barrier();
    seconds += now() - t0;
  }
};

TrajectoryWriter::TrajectoryWriter(const dist::Comm& comm, const TrajConfig& cfg,
                                   const std::string& path, const TrajMeta& meta)
    : impl_(std::make_unique<Impl>(comm, cfg, path, meta)) {
  const double t0 = now();
  if (comm.is_root()) fs::create_directories(fs::path(path).parent_path());
  comm.barrier();
  impl_->create();
  impl_->seconds += now() - t0;
}

TrajectoryWriter::~TrajectoryWriter() {
  // Not closed: an error is unwinding on this rank alone, and H5Fclose is collective. Leave the
  // file as of its last flush (consistent on disk) and the handles to the dying process.
  if (impl_ && !impl_->closed) {
    for (auto& f : impl_->fields) (void)H5Iinc_ref(f.dataset.get());
    (void)H5Iinc_ref(impl_->file.get());
  }
}

void TrajectoryWriter::append(const TrajStep& step) {
  const double t0 = now();
  auto& m = *impl_;
  for (auto& f : m.fields) {
    const auto [p, n] = f.def->step(step);
    MARLSCHED_CHECK(n == f.step_bytes, "trajectory field " << f.def->name << ": " << n
                                                           << " bytes, expected " << f.step_bytes);
    const auto* b = static_cast<const std::byte*>(p);
    f.buffer.insert(f.buffer.end(), b, b + n);
  }
  m.buffered += 1;
  m.seconds += now() - t0;
}

void TrajectoryWriter::flush(int last_iteration) {
  impl_->flush(last_iteration);
}

void TrajectoryWriter::close(int last_iteration) {
  auto& m = *impl_;
  m.flush(last_iteration);
  const double t0 = now();
  h5::write_attr(m.file.get(), "complete", std::int64_t{1});
  for (auto& f : m.fields) f.dataset.close("closing a dataset of " + m.path);
  m.file.close("cannot close " + m.path);
  m.closed = true;
  m.comm.barrier();
  m.seconds += now() - t0;
}

int TrajectoryWriter::segment() const {
  return impl_->meta.segment;
}
std::int64_t TrajectoryWriter::rows_written() const {
  return impl_->rows;
}
double TrajectoryWriter::seconds() const {
  return impl_->seconds;
}

namespace {

int segment_index(const fs::path& p) {
  const std::string n = p.filename().string();
  if (n.size() != 14 || n.rfind("segment-", 0) != 0 || n.substr(11) != ".h5") return -1;
  for (int i = 8; i < 11; ++i)
    if (n[static_cast<std::size_t>(i)] < '0' || n[static_cast<std::size_t>(i)] > '9') return -1;
  return std::stoi(n.substr(8, 3));
}

/// Opens a segment and checks that it is a marlsched trajectory file of this format version.
h5::Id open_segment(const std::string& path, bool writable) {
  h5::Id f = h5::open_serial(path, writable);
  std::string format;
  try {
    format = h5::read_attr_string(f.get(), "format");
  } catch (const InputError&) {
  }
  if (format != kFormat)
    MARLSCHED_THROW(InputError, path << " is not a marlsched trajectory file (no format attribute '"
                                     << kFormat << "')");
  const auto v = h5::read_attr_int(f.get(), "format_version");
  if (v != kFormatVersion)
    MARLSCHED_THROW(InputError, path << " has trajectory format version " << v
                                     << "; this marlsched reads version " << kFormatVersion);
  return f;
}

/// Reads rows [0, rows) of a dataset, a slab of at most 64 MiB at a time, so that HDF5 checks
/// every chunk's Fletcher32 checksum (and that each inflates); throws InputError naming the file,
/// the dataset and the first bad slab.
void verify_rows(hid_t ds, const std::string& path, const char* name, std::int64_t rows) {
  auto d = h5::dims(ds);
  h5::Id type(H5Tget_native_type(h5::Id(H5Dget_type(ds), H5Tclose).get(), H5T_DIR_DEFAULT),
              H5Tclose);
  hsize_t row_bytes = H5Tget_size(type.get());
  for (std::size_t i = 1; i < d.size(); ++i) row_bytes *= d[i];
  const hsize_t slab = std::max<hsize_t>(1, (hsize_t{64} << 20) / std::max<hsize_t>(1, row_bytes));
  std::vector<unsigned char> buf;
  h5::Id file_space = h5::dataset_space(ds);
  for (hsize_t r0 = 0; r0 < static_cast<hsize_t>(rows); r0 += slab) {
    const hsize_t n = std::min<hsize_t>(slab, static_cast<hsize_t>(rows) - r0);
    std::vector<hsize_t> start(d.size(), 0), count = d;
    start[0] = r0;
    count[0] = n;
    h5::check(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr,
                                  count.data(), nullptr),
              "H5Sselect_hyperslab");
    h5::Id ms = h5::space(count);
    buf.resize(static_cast<std::size_t>(n * row_bytes));
    if (H5Dread(ds, type.get(), ms.get(), file_space.get(), H5P_DEFAULT, buf.data()) < 0)
      MARLSCHED_THROW(InputError, path << " is damaged: " << name << " rows " << r0 << " to "
                                       << r0 + n - 1 << " fail their checksum or cannot be "
                                       << "read (" << h5::error_stack() << ")");
  }
}

}  // namespace

void check_segment_for_resume(const std::string& run_dir, int segment, std::int64_t rows) {
  if (segment < 0) return;
  const std::string path = traj_segment_path(run_dir, segment);
  if (!fs::exists(path))
    MARLSCHED_THROW(InputError, "the checkpoint's trajectory file " << path << " is missing");
  h5::Id f = open_segment(path, false);
  for (const auto& def : field_defs()) {
    if (!h5::exists(f.get(), def.path)) {
      if (def.optional) continue;
      MARLSCHED_THROW(InputError, path << " lacks the dataset " << def.path);
    }
    h5::Id ds = h5::open_dataset(f.get(), def.path, true);
    const auto d = h5::dims(ds.get());
    if (d.empty() || static_cast<std::int64_t>(d[0]) < rows)
      MARLSCHED_THROW(InputError, path << ": " << def.path << " holds " << (d.empty() ? 0 : d[0])
                                       << " rows; the checkpoint needs " << rows
                                       << " (the file is damaged)");
    verify_rows(ds.get(), path, def.path, rows);
  }
}

void cut_segments_for_resume(const std::string& run_dir, int segment, std::int64_t rows,
                             int last_iteration) {
  const fs::path dir = fs::path(run_dir) / "trajectories";
  std::error_code ec;
  if (fs::is_directory(dir, ec))
    for (const auto& e : fs::directory_iterator(dir))
      if (segment_index(e.path()) > segment) fs::remove(e.path());
  if (segment < 0) return;
  const std::string path = traj_segment_path(run_dir, segment);
  if (!fs::exists(path)) return;  // quarantined: the resume checked it and was told to go on
  h5::Id f = open_segment(path, true);
  for (const auto& def : field_defs()) {
    if (!h5::exists(f.get(), def.path)) continue;
    h5::Id ds = h5::open_dataset(f.get(), def.path, true);
    auto d = h5::dims(ds.get());
    if (static_cast<std::int64_t>(d[0]) > rows) {
      d[0] = static_cast<hsize_t>(rows);
      h5::check(H5Dset_extent(ds.get(), d.data()),
                std::string("cannot cut ") + def.path + " in " + path);
    }
  }
  h5::write_attr(f.get(), "rows", rows);
  h5::write_attr(f.get(), "last_flushed_iteration", static_cast<std::int64_t>(last_iteration));
  h5::write_attr(f.get(), "continued_in_segment", static_cast<std::int64_t>(segment + 1));
  h5::write_attr(f.get(), "complete", std::int64_t{1});
  f.close("cannot close " + path);
}

}  // namespace marlsched
