#pragma once
/// \file blas.hpp
/// The BLAS that libtorch's matrix products actually run on. Debian's libtorch calls
/// `libblas.so.3`, which the alternatives system points at the netlib reference BLAS, OpenBLAS or
/// BLIS, whichever is installed with the highest priority; the difference is 4-8x in update time
/// (docs/performance.md). This module names the library that the process loaded and sets its
/// thread count, through the libraries' own entry points looked up at run time, so that the
/// binary needs no BLAS at link time and works with any of them.

#include <string>

namespace marlsched {

struct BlasInfo {
  std::string name;     ///< "OpenBLAS", "BLIS", "reference" (netlib), "built into libtorch" (no
                        ///< BLAS library loaded) or "unknown"
  std::string version;  ///< the library's own version/config string, when it reports one
  std::string path;     ///< the loaded file, symlinks resolved ("" when none was found)
  /// Its threads are OpenMP's (OpenBLAS built with USE_OPENMP, BLIS with OpenMP threading): one
  /// pool with libtorch's and oneDNN's. A BLAS with its own pthreads pool competes with that pool
  /// for a rank's cores when the rank runs several threads (docs/performance.md, "BLAS and
  /// threads").
  bool openmp = false;
  /// It multiplies on several threads at all (OpenBLAS's and BLIS's serial builds do not).
  bool threaded = false;
  /// The netlib reference BLAS: correct but unoptimized (several times slower here).
  bool reference() const { return name == "reference"; }
  /// An optimized BLAS that runs its own thread pool beside libtorch's OpenMP one.
  bool own_threads() const { return threaded && !openmp; }
  /// An optimized BLAS built to multiply on one thread only.
  bool single_threaded() const { return (name == "OpenBLAS" || name == "BLIS") && !threaded; }
  /// One line: "OpenBLAS 0.3.21 ... (/usr/lib/.../libopenblasp-r0.3.21.so)".
  std::string describe() const;
};

/// Which BLAS this process has loaded (looked up once; cheap afterwards).
const BlasInfo& blas_info();

/// Sets the BLAS's own thread pool to `n` threads, so that ranks sharing a node do not each
/// start one BLAS thread per core. Returns false when no loaded library has such a control (the
/// reference BLAS is single-threaded anyway).
bool set_blas_threads(int n);

/// The BLAS's current thread count, or 0 when it does not say.
int blas_threads();

}  // namespace marlsched
