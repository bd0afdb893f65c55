// The parallel trajectory writer: every rank writes its agents' block of known values with
// flushes at uneven intervals; rank 0 reads the file back serially and checks every element,
// the layout and the attributes. Also: resume cutting, and the checks on bad files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.hpp"
#include "io/h5.hpp"
#include "io/trajectory.hpp"
#include "test_util.hpp"

using namespace marlsched;

namespace {

constexpr int kW = 2, kK = 2, kD = 3, kC = 2;

EnvSpec test_spec() {
  EnvSpec s;
  s.name = "test-env";
  s.obs_fields = {"a", "b", "c"};
  s.num_public = 1;
  s.action_names = {"left", "right", "stay"};
  s.reward_components = {"cost", "carbon"};
  s.episode_length = 5;
  return s;
}

TrajMeta test_meta(int segment = 0) {
  TrajMeta m;
  m.spec = test_spec();
  m.algo = "mappo";
  m.config_toml = "seed = 7\n";
  m.seed = 7;
  m.agents_per_rank = kK;
  m.worlds = kW;
  m.rollout_steps = 4;
  m.segment = segment;
  return m;
}

/// The value every field holds at (row, world, global agent, j): distinct everywhere.
float val(int row, int w, int agent, int j, int field) {
  return static_cast<float>(field * 100000 + row * 1000 + w * 100 + agent * 10 + j);
}

TrajStep make_step(int row, int first_agent) {
  TrajStep s;
  s.iteration = row / 4 + 1;
  for (int w = 0; w < kW; ++w) {
    for (int k = 0; k < kK; ++k) {
      const int a = first_agent + k;
      for (int j = 0; j < kD; ++j) {
        s.observations.push_back(val(row, w, a, j, 1));
        s.next_observations.push_back(val(row, w, a, j, 2));
      }
      s.actions.push_back(static_cast<std::int32_t>(val(row, w, a, 0, 3)));
      s.rewards.push_back(val(row, w, a, 0, 4));
      s.log_probs.push_back(-val(row, w, a, 0, 5));
      s.values.push_back(val(row, w, a, 0, 6));
      for (int j = 0; j < kC; ++j) s.reward_components.push_back(val(row, w, a, j, 7));
    }
    s.terminations.push_back(static_cast<std::uint8_t>((row + w) % 7 == 0));
    s.truncations.push_back(static_cast<std::uint8_t>(row % 5 == 4));
    s.episode_ids.push_back(static_cast<std::int64_t>(row / 5) * kW + w);
    s.episode_steps.push_back(row % 5);
  }
  return s;
}

template <class T>
std::vector<T> read_all(hid_t file, const std::string& path, std::vector<hsize_t>* dims_out) {
  h5::Id ds = h5::open_dataset(file, path);
  const auto d = h5::dims(ds.get());
  hsize_t n = 1;
  for (auto x : d) n *= x;
  std::vector<T> v(static_cast<std::size_t>(n));
  h5::check(H5Dread(ds.get(), h5::native<T>(), H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()),
            "read " + path);
  if (dims_out) *dims_out = d;
  return v;
}

}  // namespace

/// Every rank writes its block with `writer` and `compression`; rank 0 reads the whole file back.
static void write_and_read_back(const std::string& writer, const std::string& compression) {
  SCOPED_TRACE("--traj-writer " + writer + " --traj-compression " + compression);
  auto comm = dist::Comm::world();
  const auto dir = test::shared_temp_dir(comm, "traj-" + writer + "-" + compression);
  const int n = kK * comm.size(), first = kK * comm.rank();
  const int rows = 11;  // flushes after rows 3, 4 and 11: uneven, and not chunk aligned
  {
    TrajConfig cfg;
    cfg.chunk_steps = 4;
    cfg.writer = writer;
    cfg.compression = compression;
    TrajectoryWriter w(comm, cfg, traj_segment_path(dir, 0), test_meta());
    EXPECT_EQ(w.background(), writer == "thread");
    for (int r = 0; r < rows; ++r) {
      w.append(make_step(r, first));
      if (r == 2) w.flush(1);  // returns at once with a writer thread
      if (r == 3) {
        w.flush(1, /*durable=*/true);  // a checkpoint's flush: on disk when it returns
        EXPECT_EQ(w.rows_written(), 4);
      }
    }
    w.close(3);
    EXPECT_EQ(w.rows_written(), rows);
    EXPECT_EQ(w.writer_seconds() > 0, writer == "thread");
  }
  if (comm.is_root()) {
    h5::Id f = h5::open_serial(traj_segment_path(dir, 0), false);
    EXPECT_EQ(h5::read_attr_string(f.get(), "format"), "marlsched-trajectories");
    EXPECT_EQ(h5::read_attr_int(f.get(), "format_version"), 1);
    EXPECT_EQ(h5::read_attr_int(f.get(), "ranks"), comm.size());
    EXPECT_EQ(h5::read_attr_int(f.get(), "num_agents"), n);
    EXPECT_EQ(h5::read_attr_int(f.get(), "rows"), rows);
    EXPECT_EQ(h5::read_attr_int(f.get(), "complete"), 1);
    EXPECT_EQ(h5::read_attr_int(f.get(), "last_flushed_iteration"), 3);
    EXPECT_EQ(h5::read_attr_string(f.get(), "env"), "test-env");
    EXPECT_EQ(h5::read_attr_string(f.get(), "action_space"), "Discrete(3)");
    EXPECT_EQ(h5::read_attr_string(f.get(), "config"), "seed = 7\n");

    std::vector<hsize_t> d;
    const auto obs = read_all<float>(f.get(), "observations", &d);
    EXPECT_EQ(d, (std::vector<hsize_t>{rows, kW, static_cast<hsize_t>(n), kD}));
    const auto nobs = read_all<float>(f.get(), "next_observations", nullptr);
    const auto act = read_all<std::int32_t>(f.get(), "actions", &d);
    EXPECT_EQ(d, (std::vector<hsize_t>{rows, kW, static_cast<hsize_t>(n)}));
    const auto rew = read_all<float>(f.get(), "rewards", nullptr);
    const auto lp = read_all<float>(f.get(), "log_probs", nullptr);
    const auto val_ = read_all<float>(f.get(), "values", nullptr);
    const auto comp = read_all<float>(f.get(), "infos/reward_components", &d);
    EXPECT_EQ(d, (std::vector<hsize_t>{rows, kW, static_cast<hsize_t>(n), kC}));
    const auto term = read_all<std::uint8_t>(f.get(), "terminations", &d);
    EXPECT_EQ(d, (std::vector<hsize_t>{rows, kW}));
    const auto trunc = read_all<std::uint8_t>(f.get(), "truncations", nullptr);
    const auto eid = read_all<std::int64_t>(f.get(), "infos/episode_ids", nullptr);
    const auto est = read_all<std::int32_t>(f.get(), "infos/episode_steps", nullptr);
    const auto its = read_all<std::int32_t>(f.get(), "infos/iterations", &d);
    EXPECT_EQ(d, (std::vector<hsize_t>{rows}));
    int bad = 0;
    for (int r = 0; r < rows; ++r) {
      bad += its[static_cast<std::size_t>(r)] != r / 4 + 1;
      for (int w = 0; w < kW; ++w) {
        const auto rw = static_cast<std::size_t>(r * kW + w);
        bad += term[rw] != ((r + w) % 7 == 0);
        bad += trunc[rw] != (r % 5 == 4);
        bad += eid[rw] != (r / 5) * kW + w;
        bad += est[rw] != r % 5;
        for (int a = 0; a < n; ++a) {
          const auto i = rw * static_cast<std::size_t>(n) + static_cast<std::size_t>(a);
          for (int j = 0; j < kD; ++j) {
            bad += obs[i * kD + static_cast<std::size_t>(j)] != val(r, w, a, j, 1);
            bad += nobs[i * kD + static_cast<std::size_t>(j)] != val(r, w, a, j, 2);
          }
          bad += act[i] != static_cast<std::int32_t>(val(r, w, a, 0, 3));
          bad += rew[i] != val(r, w, a, 0, 4);
          bad += lp[i] != -val(r, w, a, 0, 5);
          bad += val_[i] != val(r, w, a, 0, 6);
          for (int j = 0; j < kC; ++j)
            bad += comp[i * kC + static_cast<std::size_t>(j)] != val(r, w, a, j, 7);
        }
      }
    }
    EXPECT_EQ(bad, 0) << "elements that differ from what the ranks wrote";

    // Resume: cut the segment back to 8 rows; newer segments disappear.
    f.reset();
    std::ofstream(traj_segment_path(dir, 1)) << "stale";
    check_segment_for_resume(dir, 0, 8);
    cut_segments_for_resume(dir, 0, 8, 2);
    EXPECT_FALSE(std::filesystem::exists(traj_segment_path(dir, 1)));
    h5::Id g = h5::open_serial(traj_segment_path(dir, 0), false);
    EXPECT_EQ(h5::read_attr_int(g.get(), "rows"), 8);
    EXPECT_EQ(h5::read_attr_int(g.get(), "last_flushed_iteration"), 2);
    EXPECT_EQ(h5::read_attr_int(g.get(), "continued_in_segment"), 1);
    for (const char* p : {"observations", "actions", "truncations", "infos/iterations"}) {
      h5::Id ds = h5::open_dataset(g.get(), p);
      EXPECT_EQ(h5::dims(ds.get())[0], 8u) << p;
    }
    const auto cut_obs = read_all<float>(g.get(), "observations", nullptr);
    EXPECT_TRUE(std::equal(cut_obs.begin(), cut_obs.end(), obs.begin()));
  }
  comm.barrier();
}

TEST(Trajectory, EveryRankWritesItsBlockAndRankZeroReadsItBack) {
  write_and_read_back("inline", "deflate");
}

TEST(Trajectory, AWriterThreadWritesTheSameFile) {
  ASSERT_TRUE(dist::thread_multiple()) << "the MPI test main asks for MPI_THREAD_MULTIPLE";
  write_and_read_back("thread", "none");
  write_and_read_back("thread", "deflate");
}

TEST(Trajectory, AnUnclosedWriterWithAThreadLeavesItsLastFlushOnDisk) {
  // An error unwinding past a writer whose thread is idle: the thread stops, the file keeps
  // what its last completed flush wrote (the collective close is skipped).
  auto comm = dist::Comm::world();
  const auto dir = test::shared_temp_dir(comm, "traj-unclosed");
  const auto path = traj_segment_path(dir, 0);
  {
    TrajConfig cfg;
    cfg.writer = "thread";
    TrajectoryWriter w(comm, cfg, path, test_meta());
    for (int r = 0; r < 5; ++r) w.append(make_step(r, kK * comm.rank()));
    w.flush(1, /*durable=*/true);
    w.append(make_step(5, kK * comm.rank()));
  }
  comm.barrier();
  if (comm.is_root()) {
    h5::Id f = h5::open_serial(path, false);
    EXPECT_EQ(h5::read_attr_int(f.get(), "rows"), 5);
    EXPECT_EQ(h5::read_attr_int(f.get(), "complete"), 0);
    h5::Id ds = h5::open_dataset(f.get(), "actions");
    EXPECT_EQ(h5::dims(ds.get())[0], 5u);
  }
  comm.barrier();
}

TEST(Trajectory, OnlyDurableFlushesSyncTheDiskUnlessEveryFlushIsAsked) {
  // HDF5 calls MPI_File_sync in every H5Fflush; h5.cpp's definition of MPI_File_sync sees each
  // call and passes on only those of a durable flush (a checkpoint's, the last), or all of them
  // with --traj-sync flush. `seen` counting the calls shows that HDF5's calls do reach it.
  auto comm = dist::Comm::world();
  const auto dir = test::shared_temp_dir(comm, "traj-sync");
  const int node_rank = comm.node_rank();
  for (const std::string writer : {"inline", "thread"}) {
    for (const std::string sync : {"checkpoint", "flush"}) {
      TrajConfig cfg;
      cfg.writer = writer;
      cfg.sync = sync;
      const auto before = h5::file_sync_counts();
      {
        TrajectoryWriter w(comm, cfg, traj_segment_path(dir, 0), test_meta());
        for (int r = 0; r < 4; ++r) w.append(make_step(r, kK * comm.rank()));
        w.flush(1, /*durable=*/false);
        for (int r = 4; r < 8; ++r) w.append(make_step(r, kK * comm.rank()));
        w.flush(2, /*durable=*/false);
        // A durable flush first waits for the writer thread's previous one.
        w.flush(2, /*durable=*/true);
        const auto after = h5::file_sync_counts();
        // create's flush, two plain ones, one durable
        EXPECT_EQ(after.seen - before.seen, 4) << writer << ", sync " << sync;
        EXPECT_EQ(after.synced - before.synced, sync == "flush" ? 4 : 1)
            << writer << ", sync " << sync;
        // the two unsynced flushes of rows start the kernel's write-back, on each node's first rank
        EXPECT_EQ(after.writebacks - before.writebacks, sync == "flush" || node_rank != 0 ? 0 : 2)
            << writer << ", sync " << sync;
        w.close(2);  // its flush is durable
        const auto closed = h5::file_sync_counts();
        EXPECT_EQ(closed.seen - after.seen, 1) << writer << ", sync " << sync;
        EXPECT_EQ(closed.synced - after.synced, 1) << writer << ", sync " << sync;
        EXPECT_EQ(closed.writebacks, after.writebacks) << writer << ", sync " << sync;
      }
      if (comm.is_root()) {  // what the unsynced flushes wrote reads back like the rest
        h5::Id f = h5::open_serial(traj_segment_path(dir, 0), false);
        EXPECT_EQ(h5::read_attr_int(f.get(), "rows"), 8);
        EXPECT_EQ(h5::read_attr_int(f.get(), "complete"), 1);
      }
      comm.barrier();
    }
  }
  comm.barrier();
}

TEST(Trajectory, OptionalFieldsAndCompressionChoices) {
  auto comm = dist::Comm::world();
  const auto dir = test::shared_temp_dir(comm, "traj-fields");
  for (const std::string comp : {"none", "szip"}) {
    TrajConfig cfg;
    cfg.compression = comp;
    cfg.fields = {"actions"};
    const auto path = dir + "/" + comp + ".h5";
    {
      TrajectoryWriter w(comm, cfg, path, test_meta());
      for (int r = 0; r < 6; ++r) w.append(make_step(r, kK * comm.rank()));
      w.close(2);
    }
    if (comm.is_root()) {
      h5::Id f = h5::open_serial(path, false);
      EXPECT_TRUE(h5::exists(f.get(), "actions"));
      EXPECT_TRUE(h5::exists(f.get(), "truncations"));        // always written
      EXPECT_TRUE(h5::exists(f.get(), "infos/episode_ids"));  // always written
      EXPECT_FALSE(h5::exists(f.get(), "observations"));
      EXPECT_FALSE(h5::exists(f.get(), "values"));
      const auto act = read_all<std::int32_t>(f.get(), "actions", nullptr);
      EXPECT_EQ(act.back(), static_cast<std::int32_t>(val(5, kW - 1, kK * comm.size() - 1, 0, 3)));
    }
  }
  comm.barrier();
}

TEST(Trajectory, ConfigValidationNamesTheBadValue) {
  TrajConfig c;
  c.fields = {"observations", "obsevations"};
  try {
    c.validate();
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--traj-fields[1] must be one of observations, "),
              std::string::npos);
  }
  c = TrajConfig{};
  c.compression = "lz4";
  EXPECT_THROW(c.validate(), ConfigError);
  c = TrajConfig{};
  c.every = -1;
  EXPECT_THROW(c.validate(), ConfigError);
  c = TrajConfig{};
  c.level = 0;
  EXPECT_THROW(c.validate(), ConfigError);
  c = TrajConfig{};
  c.writer = "async";
  EXPECT_THROW(c.validate(), ConfigError);
  c = TrajConfig{};
  c.sync = "never";
  EXPECT_THROW(c.validate(), ConfigError);
}

TEST(Trajectory, ResumeRefusesFilesOfAnotherLayoutOrDamagedOnes) {
  auto comm = dist::Comm::world();
  if (!comm.is_root()) return;
  const auto dir = test::temp_dir("traj-bad");
  std::filesystem::create_directories(dir + "/trajectories");
  const auto path = traj_segment_path(dir, 0);
  auto message = [&](int segment, std::int64_t rows) -> std::string {
    try {
      check_segment_for_resume(dir, segment, rows);
    } catch (const InputError& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(message(-1, 0), "no error");  // nothing was logged: nothing to check
  EXPECT_NE(message(0, 4).find("is missing"), std::string::npos);
  std::ofstream(path) << "not an HDF5 file\n";
  EXPECT_NE(message(0, 4).find("cannot open '" + path + "' as an HDF5 file"), std::string::npos);
  {  // a valid HDF5 file of another layout
    h5::Id f = h5::file_id(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), "");
    h5::write_attr(f.get(), "title", std::string("someone else's data"));
  }
  EXPECT_NE(message(0, 4).find("is not a marlsched trajectory file"), std::string::npos);
  {  // another format version
    h5::Id f = h5::file_id(H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), "");
    h5::write_attr(f.get(), "format", std::string("marlsched-trajectories"));
    h5::write_attr(f.get(), "format_version", std::int64_t{99});
  }
  EXPECT_NE(message(0, 4).find("format version 99; this marlsched reads version 1"),
            std::string::npos);
  // A real file with fewer rows than the checkpoint says.
  {
    dist::Comm self(MPI_COMM_SELF, false);
    TrajectoryWriter w(self, TrajConfig{}, path, test_meta());
    for (int r = 0; r < 3; ++r) w.append(make_step(r, 0));
    w.close(1);
  }
  EXPECT_EQ(message(0, 3), "no error");
  EXPECT_NE(message(0, 4).find("holds 3 rows; the checkpoint needs 4"), std::string::npos);
}
