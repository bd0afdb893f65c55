#include "io/h5.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <mutex>

#include "core/error.hpp"
#include "core/file.hpp"

namespace {
// HDF5 1.10's MPI-IO driver calls MPI_File_sync in every H5Fflush and has no setting to skip it
// (1.14 added HDF5_DO_MPI_FILE_SYNC, for consistency on NFS, not for this). The MPI profiling
// interface lets a program define MPI_File_sync itself and reach the library's through
// PMPI_File_sync, as profilers such as mpiP and Darshan do. This definition passes every call on,
// except one made by h5::flush(file, sync = false) on the same thread.
thread_local bool skip_file_sync = false;
std::atomic<std::int64_t> syncs_seen{0}, syncs_passed{0}, writebacks{0};
}  // namespace

extern "C" int MPI_File_sync(MPI_File fh) {
  syncs_seen.fetch_add(1, std::memory_order_relaxed);
  if (skip_file_sync) return MPI_SUCCESS;
  syncs_passed.fetch_add(1, std::memory_order_relaxed);
  return PMPI_File_sync(fh);
}

namespace marlsched::h5 {

void flush(hid_t file, bool sync, const std::string& what) {
  skip_file_sync = !sync;
  const herr_t status = H5Fflush(file, H5F_SCOPE_GLOBAL);
  skip_file_sync = false;
  check(status, what);
}

void start_writeback(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  writebacks.fetch_add(1, std::memory_order_relaxed);
  (void)::sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);  // a hint: its failure changes nothing
  ::close(fd);
}

FileSyncCounts file_sync_counts() {
  return {syncs_seen.load(std::memory_order_relaxed), syncs_passed.load(std::memory_order_relaxed),
          writebacks.load(std::memory_order_relaxed)};
}

void silence_errors() {
  static std::once_flag once;
  std::call_once(once, [] { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); });
}

namespace {
herr_t collect(unsigned n, const H5E_error2_t* e, void* data) {
  auto& out = *static_cast<std::string*>(data);
  if (n > 2) return 0;  // the innermost frames say what failed; deeper ones repeat it
  out += (out.empty() ? "" : "; ");
  out += std::string(e->func_name ? e->func_name : "?") + ": " + (e->desc ? e->desc : "?");
  return 0;
}
}  // namespace

std::string error_stack() {
  std::string out;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, collect, &out);
  H5Eclear2(H5E_DEFAULT);
  return out;
}

std::int64_t check(std::int64_t status, const std::string& what, bool input) {
  if (status >= 0) return status;
  const std::string stack = error_stack();
  const std::string msg = what + (stack.empty() ? "" : " (HDF5: " + stack + ")");
  if (input) throw InputError(msg);
  throw Error(msg);
}

void Id::reset() {
  if (id_ >= 0 && close_ != nullptr) close_(id_);
  id_ = H5I_INVALID_HID;
}

void Id::close(const std::string& what) {
  if (id_ < 0) return;
  const hid_t id = id_;
  id_ = H5I_INVALID_HID;
  check(close_(id), what);
}

Id file_id(hid_t id, const std::string& what, bool input) {
  check(id, what, input);
  return Id(id, H5Fclose);
}

Id plist(hid_t cls) {
  silence_errors();
  return Id(static_cast<hid_t>(check(H5Pcreate(cls), "H5Pcreate")), H5Pclose);
}

Id space(const std::vector<hsize_t>& dims, const std::vector<hsize_t>* maxdims) {
  return Id(static_cast<hid_t>(check(H5Screate_simple(static_cast<int>(dims.size()), dims.data(),
                                                      maxdims ? maxdims->data() : nullptr),
                                     "H5Screate_simple")),
            H5Sclose);
}

Id dataset_space(hid_t dataset) {
  return Id(static_cast<hid_t>(check(H5Dget_space(dataset), "H5Dget_space")), H5Sclose);
}

Id open_dataset(hid_t loc, const std::string& name, bool input) {
  return Id(static_cast<hid_t>(check(H5Dopen2(loc, name.c_str(), H5P_DEFAULT),
                                     "cannot open dataset " + name, input)),
            H5Dclose);
}

Id create_group(hid_t loc, const std::string& name) {
  Id gcpl = plist(H5P_GROUP_CREATE);
  check(H5Pset_obj_track_times(gcpl.get(), false), "H5Pset_obj_track_times");
  return Id(
      static_cast<hid_t>(check(H5Gcreate2(loc, name.c_str(), H5P_DEFAULT, gcpl.get(), H5P_DEFAULT),
                               "cannot create group " + name)),
      H5Gclose);
}

Id create_parallel(const std::string& path, MPI_Comm comm) {
  Id fapl = plist(H5P_FILE_ACCESS);
  check(H5Pset_fapl_mpio(fapl.get(), comm, MPI_INFO_NULL), "H5Pset_fapl_mpio");
  // Metadata reads and writes are collective: one rank touches the disk, the rest listen.
  check(H5Pset_all_coll_metadata_ops(fapl.get(), true), "H5Pset_all_coll_metadata_ops");
  check(H5Pset_coll_metadata_write(fapl.get(), true), "H5Pset_coll_metadata_write");
  Id fcpl = plist(H5P_FILE_CREATE);
  check(H5Pset_obj_track_times(fcpl.get(), false), "H5Pset_obj_track_times");
  refuse_link(path);  // HDF5 follows a link it is given: its target would be truncated
  return file_id(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, fcpl.get(), fapl.get()),
                 "cannot create HDF5 file '" + path + "'");
}

Id open_parallel(const std::string& path, MPI_Comm comm) {
  silence_errors();
  Id fapl = plist(H5P_FILE_ACCESS);
  check(H5Pset_fapl_mpio(fapl.get(), comm, MPI_INFO_NULL), "H5Pset_fapl_mpio");
  check(H5Pset_all_coll_metadata_ops(fapl.get(), true), "H5Pset_all_coll_metadata_ops");
  return file_id(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get()),
                 "cannot open '" + path + "' as an HDF5 file", true);
}

Id open_serial(const std::string& path, bool writable) {
  silence_errors();
  return file_id(H5Fopen(path.c_str(), writable ? H5F_ACC_RDWR : H5F_ACC_RDONLY, H5P_DEFAULT),
                 "cannot open '" + path + "' as an HDF5 file", true);
}

bool exists(hid_t loc, const std::string& path) {
  return check(H5Lexists(loc, path.c_str(), H5P_DEFAULT), "H5Lexists " + path) > 0;
}

bool has_attr(hid_t obj, const std::string& name) {
  return check(H5Aexists(obj, name.c_str()), "H5Aexists " + name, true) > 0;
}

std::vector<hsize_t> dims(hid_t dataset) {
  Id s = dataset_space(dataset);
  const int n = static_cast<int>(check(H5Sget_simple_extent_ndims(s.get()), "H5Sget_ndims"));
  std::vector<hsize_t> d(static_cast<std::size_t>(n));
  check(H5Sget_simple_extent_dims(s.get(), d.data(), nullptr), "H5Sget_simple_extent_dims");
  return d;
}

namespace {
Id vlen_string_type() {
  Id t(static_cast<hid_t>(check(H5Tcopy(H5T_C_S1), "H5Tcopy")), H5Tclose);
  check(H5Tset_size(t.get(), H5T_VARIABLE), "H5Tset_size");
  check(H5Tset_cset(t.get(), H5T_CSET_UTF8), "H5Tset_cset");
  return t;
}
Id scalar_space() {
  return Id(static_cast<hid_t>(check(H5Screate(H5S_SCALAR), "H5Screate")), H5Sclose);
}
/// Opens attribute `name` of `obj` for writing: the existing one when its type and shape are
/// the same (an in-place update, as for the counters a flush refreshes), else a new one.
Id attr_for_write(hid_t obj, const std::string& name, hid_t type, hid_t sp) {
  if (check(H5Aexists(obj, name.c_str()), "H5Aexists " + name) > 0) {
    Id a(static_cast<hid_t>(check(H5Aopen(obj, name.c_str(), H5P_DEFAULT), "H5Aopen " + name)),
         H5Aclose);
    Id t(static_cast<hid_t>(check(H5Aget_type(a.get()), "H5Aget_type")), H5Tclose);
    Id s(static_cast<hid_t>(check(H5Aget_space(a.get()), "H5Aget_space")), H5Sclose);
    if (check(H5Tequal(t.get(), type), "H5Tequal") > 0 &&
        check(H5Sextent_equal(s.get(), sp), "H5Sextent_equal") > 0)
      return a;
    a.reset();
    check(H5Adelete(obj, name.c_str()), "H5Adelete " + name);
  }
  return Id(
      static_cast<hid_t>(check(H5Acreate2(obj, name.c_str(), type, sp, H5P_DEFAULT, H5P_DEFAULT),
                               "cannot create attribute " + name)),
      H5Aclose);
}
Id attr_for_read(hid_t obj, const std::string& name) {
  silence_errors();
  if (check(H5Aexists(obj, name.c_str()), "H5Aexists " + name, true) <= 0)
    throw InputError("attribute '" + name + "' is missing");
  return Id(static_cast<hid_t>(check(H5Aopen(obj, name.c_str(), H5P_DEFAULT),
                                     "cannot open attribute " + name, true)),
            H5Aclose);
}
}  // namespace

void write_attr(hid_t obj, const std::string& name, const std::string& value) {
  Id t = vlen_string_type();
  Id sp = scalar_space();
  Id a = attr_for_write(obj, name, t.get(), sp.get());
  const char* p = value.c_str();
  check(H5Awrite(a.get(), t.get(), &p), "cannot write attribute " + name);
}

void write_attr(hid_t obj, const std::string& name, const std::vector<std::string>& value) {
  Id t = vlen_string_type();
  Id sp = space({static_cast<hsize_t>(value.size())});
  Id a = attr_for_write(obj, name, t.get(), sp.get());
  std::vector<const char*> p;
  for (const auto& s : value) p.push_back(s.c_str());
  check(H5Awrite(a.get(), t.get(), p.data()), "cannot write attribute " + name);
}

void write_attr(hid_t obj, const std::string& name, std::int64_t value) {
  Id sp = scalar_space();
  Id a = attr_for_write(obj, name, H5T_STD_I64LE, sp.get());
  check(H5Awrite(a.get(), H5T_NATIVE_INT64, &value), "cannot write attribute " + name);
}

void write_attr(hid_t obj, const std::string& name, double value) {
  Id sp = scalar_space();
  Id a = attr_for_write(obj, name, H5T_IEEE_F64LE, sp.get());
  check(H5Awrite(a.get(), H5T_NATIVE_DOUBLE, &value), "cannot write attribute " + name);
}

std::string read_attr_string(hid_t obj, const std::string& name) {
  Id a = attr_for_read(obj, name);
  Id t(static_cast<hid_t>(check(H5Aget_type(a.get()), "H5Aget_type", true)), H5Tclose);
  if (H5Tget_class(t.get()) != H5T_STRING || H5Tis_variable_str(t.get()) <= 0)
    throw InputError("attribute '" + name + "' is not a string");
  Id mt = vlen_string_type();
  char* p = nullptr;
  check(H5Aread(a.get(), mt.get(), &p), "cannot read attribute " + name, true);
  std::string out = p ? p : "";
  H5free_memory(p);
  return out;
}

std::int64_t read_attr_int(hid_t obj, const std::string& name) {
  Id a = attr_for_read(obj, name);
  Id t(static_cast<hid_t>(check(H5Aget_type(a.get()), "H5Aget_type", true)), H5Tclose);
  if (H5Tget_class(t.get()) != H5T_INTEGER)
    throw InputError("attribute '" + name + "' is not an integer");
  std::int64_t v = 0;
  check(H5Aread(a.get(), H5T_NATIVE_INT64, &v), "cannot read attribute " + name, true);
  return v;
}

double read_attr_double(hid_t obj, const std::string& name) {
  Id a = attr_for_read(obj, name);
  Id t(static_cast<hid_t>(check(H5Aget_type(a.get()), "H5Aget_type", true)), H5Tclose);
  const auto cls = H5Tget_class(t.get());
  if (cls != H5T_FLOAT && cls != H5T_INTEGER)
    throw InputError("attribute '" + name + "' is not a number");
  double v = 0;
  check(H5Aread(a.get(), H5T_NATIVE_DOUBLE, &v), "cannot read attribute " + name, true);
  return v;
}

std::vector<std::string> read_attr_strings(hid_t obj, const std::string& name) {
  Id a = attr_for_read(obj, name);
  Id t(static_cast<hid_t>(check(H5Aget_type(a.get()), "H5Aget_type", true)), H5Tclose);
  Id sp(static_cast<hid_t>(check(H5Aget_space(a.get()), "H5Aget_space", true)), H5Sclose);
  if (H5Tget_class(t.get()) != H5T_STRING || H5Tis_variable_str(t.get()) <= 0 ||
      H5Sget_simple_extent_ndims(sp.get()) != 1)
    throw InputError("attribute '" + name + "' is not a list of strings");
  const auto n = static_cast<std::size_t>(H5Sget_simple_extent_npoints(sp.get()));
  Id mt = vlen_string_type();
  std::vector<char*> p(n, nullptr);
  check(H5Aread(a.get(), mt.get(), p.data()), "cannot read attribute " + name, true);
  std::vector<std::string> out;
  for (char* s : p) {
    out.emplace_back(s ? s : "");
    H5free_memory(s);
  }
  return out;
}

}  // namespace marlsched::h5
