#include "io/trajectory.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iomanip>
#include <mutex>
#include <sstream>
#include <thread>

#include "core/blas.hpp"
#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/file.hpp"
#include "core/version.hpp"
#include "io/h5.hpp"
#include "io/trajectory_layout.hpp"

namespace fs = std::filesystem;

namespace marlsched {

using namespace traj_layout;

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
        "iterations (0: off)")
      .at_least(0)
      .may_change_on_resume();
  b.add("traj-fields", fields, "optional datasets to write (each of the rollout's rows)")
      .one_of(traj_optional_fields())
      .may_change_on_resume();
  b.add("traj-compression", compression, "chunk compression: deflate, szip or none")
      .one_of({"deflate", "szip", "none"})
      .may_change_on_resume();
  b.add("traj-level", level, "deflate level").in(1, 9).may_change_on_resume();
  b.add("traj-shuffle", shuffle, "byte-shuffle chunks before deflate").may_change_on_resume();
  b.add("traj-chunk-steps", chunk_steps, "rows per HDF5 chunk (0: the rollout length)")
      .at_least(0)
      .may_change_on_resume();
  b.add("traj-writer", writer,
        "who writes and compresses: thread (a background thread per rank), inline (the training "
        "thread) or auto (the thread where the rank has a spare core)")
      .one_of({"auto", "thread", "inline"});
  b.add("traj-sync", sync,
        "when a flush waits for the disk (fsync): checkpoint (at checkpoints and the end; other "
        "flushes reach the OS, which keeps them through a crash of the run but not of the node) "
        "or flush (every flush)")
      .one_of({"checkpoint", "flush"});
}

void TrajConfig::validate() const {
  check_declared(*this);
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
    std::vector<std::byte> buffer;   ///< rows appended since the last hand-off
    std::vector<std::byte> pending;  ///< rows handed to the writer, written by the next job
  };
  /// The writer's own communicator (a dup of the run's), so that its collectives — run on the
  /// background thread — never mix with the training thread's.
  dist::Comm comm;
  TrajConfig cfg;
  TrajMeta meta;
  std::string path;
  h5::Id file;
  h5::Id dxpl;
  std::vector<Field> fields;
  bool writeback = false;     ///< this rank starts its node's write-back after unsynced flushes
  std::int64_t rows = 0;      ///< rows handed to the writer (training thread)
  std::int64_t buffered = 0;  ///< rows in `buffer` (training thread)
  double seconds = 0;         ///< training thread's time in append/flush/close
  bool closed = false;

  // One job at a time, double buffered: the training thread fills `buffer` while the writer
  // thread writes `pending`. Everything below is guarded by `mu`.
  std::mutex mu;
  std::condition_variable cv;
  bool job = false, stop = false, job_sync = false;
  std::int64_t job_first = 0, job_rows = 0, rows_on_disk = 0;
  int job_iteration = 0;
  double writer_seconds = 0;
  std::exception_ptr error;
  std::thread thread;

  Impl(const dist::Comm& c, const TrajConfig& cf, std::string p, const TrajMeta& m)
      : comm(c.dup()), cfg(cf), meta(m), path(std::move(p)) {}

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
    writeback = comm.node_rank() == 0;
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
    h5::flush(file.get(), cfg.sync == "flush", "H5Fflush " + path);
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
    h5::write_attr(r, "behaviour_policy",
                   meta.behaviour_policy.empty() ? meta.algo : meta.behaviour_policy);
    h5::write_attr(r, "behaviour_epsilon", meta.behaviour_epsilon);
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
    if (!s.action_heads.empty()) {  // a factored space: action = (h0·n1 + h1)·n2 + h2 ...
      std::string h = "[";
      for (std::size_t i = 0; i < s.action_heads.size(); ++i)
        h += (i ? ", " : "") + std::to_string(s.action_heads[i]);
      h5::write_attr(r, "action_heads", h + "]");
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

  void write_field(Field& f, std::int64_t first, std::int64_t count) {
    const auto dims = global_dims(f, static_cast<hsize_t>(first + count));
    h5::check(H5Dset_extent(f.dataset.get(), dims.data()),
              std::string("cannot extend ") + f.def->path + " in " + path);
    h5::Id fs = h5::dataset_space(f.dataset.get());
    auto n = f.local;
    n.insert(n.begin(), static_cast<hsize_t>(count));
    h5::Id ms = h5::space(n);
    const bool mine = f.def->scope == Scope::Agent || comm.is_root();
    if (mine) {
      std::vector<hsize_t> start(n.size(), 0);
      start[0] = static_cast<hsize_t>(first);
      if (f.def->scope == Scope::Agent)
        start[2] = static_cast<hsize_t>(meta.agents_per_rank) * static_cast<hsize_t>(comm.rank());
      h5::check(
          H5Sselect_hyperslab(fs.get(), H5S_SELECT_SET, start.data(), nullptr, n.data(), nullptr),
          "H5Sselect_hyperslab");
    } else {  // world-level data: rank 0 writes it, the others join the collective call
      h5::check(H5Sselect_none(fs.get()), "H5Sselect_none");
      h5::check(H5Sselect_none(ms.get()), "H5Sselect_none");
    }
    h5::check(H5Dwrite(f.dataset.get(), mem_type(f.def->type), ms.get(), fs.get(), dxpl.get(),
                       f.pending.data()),
              std::string("cannot write ") + f.def->path + " to " + path);
    f.pending.clear();
  }

  /// Collective over `comm`: writes the pending rows, updates the row count, H5Fflush (with an
  /// fsync when `sync`), barrier. Runs on the writer thread (or on the training thread without
  /// one); the only HDF5 calls in the process while the thread lives.
  void write_job(std::int64_t first, std::int64_t count, int last_iteration, bool sync) {
    if (count > 0)
      for (auto& f : fields) write_field(f, first, count);
    h5::write_attr(file.get(), "rows", first + count);
    h5::write_attr(file.get(), "last_flushed_iteration", static_cast<std::int64_t>(last_iteration));
    h5::flush(file.get(), sync, "cannot flush " + path);
    // Unsynced, the rows sit in the node's page cache: start writing them back now, so that the
    // next synced flush (a checkpoint's, the last) does not wait for all of them at once.
    if (!sync && writeback) h5::start_writeback(path);
    // Nobody leaves the flush before everyone's data is on its way to disk: a rank that dies
    // later cannot interrupt another rank's half-written flush.
    comm.barrier();
  }

  void writer_loop() {
    std::unique_lock lk(mu);
    for (;;) {
      cv.wait(lk, [&] { return job || stop; });
      if (!job) return;
      const std::int64_t first = job_first, count = job_rows;
      const int it = job_iteration;
      const bool sync = job_sync;
      lk.unlock();
      const double t0 = now();
      std::exception_ptr e;
      try {
        write_job(first, count, it, sync);
      } catch (...) {
        e = std::current_exception();
      }
      const double dt = now() - t0;
      lk.lock();
      writer_seconds += dt;
      if (e)
        error = e;
      else
        rows_on_disk = first + count;
      job = false;
      cv.notify_all();
    }
  }

  /// Waits until no job is pending; rethrows the writer's error on the training thread.
  void wait_idle() {
    std::unique_lock lk(mu);
    cv.wait(lk, [&] { return !job; });
    if (error) std::rethrow_exception(error);
  }

  /// Hands the buffered rows to the writer (after the previous job is done) and, when `durable`
  /// or without a writer thread, waits until they are written (and, when `durable` or with
  /// --traj-sync flush, synced to the disk).
  void flush(int last_iteration, bool durable) {
    const bool sync = durable || cfg.sync == "flush";
    const double t0 = now();
    wait_idle();
    for (auto& f : fields) f.buffer.swap(f.pending);
    const std::int64_t first = rows, count = buffered;
    rows += buffered;
    buffered = 0;
    if (thread.joinable()) {
      {
        std::lock_guard lk(mu);
        job = true;
        job_first = first;
        job_rows = count;
        job_iteration = last_iteration;
        job_sync = sync;
      }
      cv.notify_all();
      if (durable) wait_idle();
    } else {
      write_job(first, count, last_iteration, sync);
      std::lock_guard lk(mu);
      rows_on_disk = first + count;
    }
    seconds += now() - t0;
  }

  /// Stops the writer thread once it is idle (collective work done).
  void join() {
    if (!thread.joinable()) return;
    {
      std::lock_guard lk(mu);
      stop = true;
    }
    cv.notify_all();
    thread.join();
  }
};

TrajectoryWriter::TrajectoryWriter(const dist::Comm& comm, const TrajConfig& cfg,
                                   const std::string& path, const TrajMeta& meta,
                                   int compute_threads)
    : impl_(std::make_unique<Impl>(comm, cfg, path, meta)) {
  const double t0 = now();
  if (comm.is_root()) make_dirs(fs::path(path).parent_path().string());
  comm.barrier();
  impl_->create();
  // Every rank decides alike (the writers' collectives must match): the thread only where each
  // rank has a core to spare.
  const bool spare =
      cfg.writer == "auto" && comm.allreduce_min(comm.cores_per_rank()) >= compute_threads + 1;
  const bool multiple = comm.allreduce_min(dist::thread_multiple() ? 1 : 0) == 1;
  if ((cfg.writer == "thread" || spare) && multiple)
    impl_->thread = std::thread([m = impl_.get()] { m->writer_loop(); });
  impl_->seconds += now() - t0;
}

TrajectoryWriter::~TrajectoryWriter() {
  // Not closed: an error is unwinding on this rank alone, and H5Fclose is collective. Leave the
  // file as of its last flush (consistent on disk) and the handles to the dying process.
  if (!impl_ || impl_->closed) return;
  auto& m = *impl_;
  if (m.thread.joinable()) {
    bool idle = false;
    {
      std::lock_guard lk(m.mu);
      idle = !m.job;
      m.stop = true;
    }
    m.cv.notify_all();
    if (!idle) {
      // The writer is inside a collective the other ranks may never join: leave it, and its
      // state, to the process's end (the launcher aborts after an error) rather than hang here.
      m.thread.detach();
      (void)impl_.release();
      return;
    }
    m.thread.join();
  }
  for (auto& f : m.fields) (void)H5Iinc_ref(f.dataset.get());
  (void)H5Iinc_ref(m.file.get());
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

void TrajectoryWriter::flush(int last_iteration, bool durable) {
  impl_->flush(last_iteration, durable);
}

void TrajectoryWriter::close(int last_iteration) {
  auto& m = *impl_;
  m.flush(last_iteration, true);
  const double t0 = now();
  m.join();
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
  std::lock_guard lk(impl_->mu);
  return impl_->rows_on_disk;
}
double TrajectoryWriter::seconds() const {
  return impl_->seconds;
}
double TrajectoryWriter::writer_seconds() const {
  std::lock_guard lk(impl_->mu);
  return impl_->writer_seconds;
}
bool TrajectoryWriter::background() const {
  return impl_->thread.joinable();
}

}  // namespace marlsched
