#pragma once
/// \file h5.hpp
/// A thin, checked RAII layer over the HDF5 C API (the HighFive idea, kept small because
/// HighFive is not packaged in Debian 12). Every C call's status goes through `check()`, which
/// turns a failure into a `marlsched::Error` (or `InputError` for files a user handed us) whose
/// message carries HDF5's own error stack; HDF5's automatic error printing is silenced so that
/// a failure prints exactly one line, from `main`.
///
/// Only this header and io/*.cpp include <hdf5.h>; the trainer sees io/trajectory.hpp only.

#include <hdf5.h>
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

namespace marlsched::h5 {

/// Turns off HDF5's printing of error stacks (idempotent; called by every entry point here).
void silence_errors();

/// HDF5's current error stack as one line ("H5Dwrite: can't write data; ..."), then cleared.
std::string error_stack();

/// Throws `Error` (or `InputError` when `input` is true) with `what`, the error stack and the
/// call site if `status < 0`; returns `status` otherwise.
std::int64_t check(std::int64_t status, const std::string& what, bool input = false);

/// Owns one HDF5 identifier and closes it with the matching H5?close function.
class Id {
 public:
  using Closer = herr_t (*)(hid_t);
  Id() = default;
  Id(hid_t id, Closer close) : id_(id), close_(close) {}
  ~Id() { reset(); }
  Id(Id&& o) noexcept : id_(o.id_), close_(o.close_) { o.id_ = H5I_INVALID_HID; }
  Id& operator=(Id&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = o.id_;
      close_ = o.close_;
      o.id_ = H5I_INVALID_HID;
    }
    return *this;
  }
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  /// Closes now and reports a failure (destructors cannot).
  void close(const std::string& what);
  void reset();

 private:
  hid_t id_ = H5I_INVALID_HID;
  Closer close_ = nullptr;
};

Id file_id(hid_t id, const std::string& what, bool input = false);
Id plist(hid_t cls);
Id space(const std::vector<hsize_t>& dims, const std::vector<hsize_t>* maxdims = nullptr);
Id dataset_space(hid_t dataset);
Id open_dataset(hid_t loc, const std::string& name, bool input = false);
Id create_group(hid_t loc, const std::string& name);

/// Creates `path` for parallel access by every rank of `comm` (collective); truncates.
Id create_parallel(const std::string& path, MPI_Comm comm);
/// Opens an existing file read-only for parallel access by every rank of `comm` (collective).
Id open_parallel(const std::string& path, MPI_Comm comm);
/// Opens an existing file on this process alone (serial driver).
Id open_serial(const std::string& path, bool writable);

/// Collective for a parallel file: H5Fflush(file, H5F_SCOPE_GLOBAL), which writes HDF5's
/// metadata cache and hands every byte to the OS, so that the file on disk is consistent and
/// readable by any process, also after this one is killed. With `sync`, the flush also asks the
/// storage to persist it (fsync, surviving a node crash), as HDF5 1.10's MPI-IO driver always
/// does; without, that sync is skipped: the same page-cache state, without waiting for the disk.
/// Every rank must pass the same `sync` (MPI_File_sync is collective).
void flush(hid_t file, bool sync, const std::string& what);

/// h5.cpp defines MPI_File_sync (the MPI profiling interface) to make that choice, so a program
/// linking this library gets that definition: it passes every call on to PMPI_File_sync except
/// those inside `flush(file, false)`, and takes the place of a profiler's own MPI_File_sync
/// wrapper.
///
/// How often this process's MPI_File_sync was reached (`seen`), how often it was passed on to
/// the MPI library (`synced`), and how many times start_writeback asked the kernel for a
/// write-back (`writebacks`); for the tests that check that interposition and its use.
struct FileSyncCounts {
  std::int64_t seen = 0, synced = 0, writebacks = 0;
};
FileSyncCounts file_sync_counts();

/// Asks the kernel to start writing the dirty pages of the file at `path` to the disk and returns
/// at once (sync_file_range with SYNC_FILE_RANGE_WRITE alone: it neither waits nor makes anything
/// durable). After an unsynced flush, the bytes then reach the disk while the program goes on,
/// and the next sync (a checkpoint's, the last) waits only for what came after, as PostgreSQL's
/// checkpoint_flush_after and RocksDB's bytes_per_sync keep an fsync from stalling on a backlog.
/// The page cache is the node's: one process per node is enough. A hint: where the file system
/// has no write-back to start, or the file cannot be opened, nothing happens. Local, not
/// collective.
void start_writeback(const std::string& path);

bool exists(hid_t loc, const std::string& path);
/// Whether `obj` has an attribute `name`.
bool has_attr(hid_t obj, const std::string& name);
/// Dimensions of a dataset.
std::vector<hsize_t> dims(hid_t dataset);

// Attributes (written collectively with identical values when the file is parallel).
void write_attr(hid_t obj, const std::string& name, const std::string& value);
void write_attr(hid_t obj, const std::string& name, const std::vector<std::string>& value);
void write_attr(hid_t obj, const std::string& name, std::int64_t value);
void write_attr(hid_t obj, const std::string& name, double value);
/// Reads attributes; throws InputError naming the attribute if it is absent or of another type.
std::string read_attr_string(hid_t obj, const std::string& name);
std::int64_t read_attr_int(hid_t obj, const std::string& name);
double read_attr_double(hid_t obj, const std::string& name);
/// A one-dimensional attribute of variable-length strings (as write_attr and h5py write them).
std::vector<std::string> read_attr_strings(hid_t obj, const std::string& name);

/// HDF5 native type for a C++ arithmetic type.
template <class T>
hid_t native();
template <>
inline hid_t native<float>() {
  return H5T_NATIVE_FLOAT;
}
template <>
inline hid_t native<double>() {
  return H5T_NATIVE_DOUBLE;
}
template <>
inline hid_t native<std::int32_t>() {
  return H5T_NATIVE_INT32;
}
template <>
inline hid_t native<std::int64_t>() {
  return H5T_NATIVE_INT64;
}
template <>
inline hid_t native<std::uint8_t>() {
  return H5T_NATIVE_UINT8;
}

}  // namespace marlsched::h5
