#include "core/blas.hpp"

#include <dlfcn.h>
#include <link.h>

#include <climits>
#include <cstdlib>
#include <string_view>

namespace marlsched {

namespace {

/// `symbol` in `library` (a handle of an object already loaded), or anywhere in the process.
template <class Fn>
Fn lookup(const char* symbol, void* library = RTLD_DEFAULT) {
  return reinterpret_cast<Fn>(dlsym(library, symbol));
}

/// The first loaded object whose file name looks like a BLAS (libblas.so.3 itself resolves,
/// through the alternatives symlinks, to the chosen implementation's file).
std::string loaded_blas_path() {
  std::string found;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* out) -> int {
        const std::string_view name = info->dlpi_name ? info->dlpi_name : "";
        const auto slash = name.rfind('/');
        const auto base = name.substr(slash == std::string_view::npos ? 0 : slash + 1);
        if (base.find("blas") == std::string_view::npos &&
            base.find("blis") == std::string_view::npos)
          return 0;
        // A GPU BLAS (a CUDA libtorch loads libcublas) does not multiply host matrices.
        if (base.find("cublas") != std::string_view::npos ||
            base.find("hipblas") != std::string_view::npos ||
            base.find("rocblas") != std::string_view::npos)
          return 0;
        *static_cast<std::string*>(out) = std::string(name);
        return 1;
      },
      &found);
  if (found.empty()) return found;
  char resolved[PATH_MAX];
  return realpath(found.c_str(), resolved) ? std::string(resolved) : found;
}

BlasInfo probe() {
  BlasInfo b;
  b.path = loaded_blas_path();
  // Ask the BLAS file itself: another library may export the same symbols (Debian's
  // liblapack.so.3 alternative can be OpenBLAS's while libblas.so.3 is the reference BLAS).
  void* lib = b.path.empty() ? nullptr : dlopen(b.path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  if (!lib) lib = RTLD_DEFAULT;
  if (auto config = lookup<char* (*)()>("openblas_get_config", lib)) {
    b.name = "OpenBLAS";
    b.version = config();
    b.openmp = b.version.find("USE_OPENMP") != std::string::npos;
    b.threaded = b.version.find("SINGLE_THREADED") == std::string::npos;
  } else if (auto version = lookup<const char* (*)()>("bli_info_get_version_str", lib)) {
    b.name = "BLIS";
    b.version = version();
    if (auto omp = lookup<long (*)()>("bli_info_get_enable_openmp", lib)) b.openmp = omp() != 0;
    if (auto any = lookup<long (*)()>("bli_info_get_enable_threading", lib))
      b.threaded = any() != 0;
  } else if (b.path.find("/blas/") != std::string::npos) {
    b.name = "reference";  // Debian's libblas3: the netlib Fortran BLAS
    b.version = "netlib";
  } else if (b.path.empty()) {
    b.name = "built into libtorch";  // no BLAS library in the process: libtorch's own products
  } else {
    b.name = "unknown";
  }
  if (lib != RTLD_DEFAULT) dlclose(lib);  // drops the reference RTLD_NOLOAD took
  return b;
}

}  // namespace

std::string BlasInfo::describe() const {
  std::string s = name;
  if (!version.empty() && version.rfind(name, 0) == 0)
    s = version;  // OpenBLAS's config string starts with its own name
  else if (!version.empty())
    s += " " + version;
  if (!path.empty()) s += " (" + path + ")";
  return s;
}

const BlasInfo& blas_info() {
  static const BlasInfo info = probe();
  return info;
}

// Every loaded OpenBLAS or BLIS obeys (the first one the dynamic linker finds; one per process in
// practice), including a LAPACK's that is not the BLAS libtorch calls.
bool set_blas_threads(int n) {
  if (auto f = lookup<void (*)(int)>("openblas_set_num_threads")) {
    f(n);
    return true;
  }
  if (auto f = lookup<void (*)(long)>("bli_thread_set_num_threads")) {
    f(n);
    return true;
  }
  return false;
}

int blas_threads() {
  if (blas_info().name != "OpenBLAS" && blas_info().name != "BLIS") return 0;
  if (auto f = lookup<int (*)()>("openblas_get_num_threads")) return f();
  if (auto f = lookup<long (*)()>("bli_thread_get_num_threads")) return static_cast<int>(f());
  return 0;
}

}  // namespace marlsched
