/// \file trajectory_resume.cpp
/// Resume-time checks and cuts of trajectory segments (declared in trajectory.hpp); serial HDF5 on
/// rank 0 before any writer exists.

#include <filesystem>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "io/h5.hpp"
#include "io/trajectory.hpp"
#include "io/trajectory_layout.hpp"

namespace fs = std::filesystem;

namespace marlsched {

using namespace traj_layout;

namespace {

int segment_index(const fs::path& p) {
  const std::string n = p.filename().string();
  if (n.size() != 14 || n.rfind("segment-", 0) != 0 || n.substr(11) != ".h5") return -1;
  for (int i = 8; i < 11; ++i)
    if (n[static_cast<std::size_t>(i)] < '0' || n[static_cast<std::size_t>(i)] > '9') return -1;
  return std::stoi(n.substr(8, 3));
}

}  // namespace

h5::Id traj_layout::open_trajectory_file(const std::string& path, bool writable) {
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

void traj_layout::verify_rows(hid_t ds, const std::string& path, const char* name,
                              std::int64_t first, std::int64_t rows) {
  auto d = h5::dims(ds);
  h5::Id type(H5Tget_native_type(h5::Id(H5Dget_type(ds), H5Tclose).get(), H5T_DIR_DEFAULT),
              H5Tclose);
  hsize_t row_bytes = H5Tget_size(type.get());
  for (std::size_t i = 1; i < d.size(); ++i) row_bytes *= d[i];
  const hsize_t slab = std::max<hsize_t>(1, (hsize_t{64} << 20) / std::max<hsize_t>(1, row_bytes));
  std::vector<unsigned char> buf;
  h5::Id file_space = h5::dataset_space(ds);
  const auto end = static_cast<hsize_t>(first + rows);
  for (auto r0 = static_cast<hsize_t>(first); r0 < end; r0 += slab) {
    const hsize_t n = std::min<hsize_t>(slab, end - r0);
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

void check_segment_for_resume(const std::string& run_dir, int segment, std::int64_t rows) {
  if (segment < 0) return;
  const std::string path = traj_segment_path(run_dir, segment);
  if (!fs::exists(path))
    MARLSCHED_THROW(InputError, "the checkpoint's trajectory file " << path << " is missing");
  h5::Id f = open_trajectory_file(path, false);
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
    verify_rows(ds.get(), path, def.path, 0, rows);
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
  h5::Id f = open_trajectory_file(path, true);
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
