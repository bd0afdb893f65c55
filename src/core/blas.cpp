#include "core/blas.hpp"

#include <dlfcn.h>
#include <link.h>

#include <climits>
#include <cstdlib>
#include <string_view>

namespace marlsched {

namespace {

template <class Fn>
Fn lookup(const char* symbol) {
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, symbol));
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
  if (auto config = lookup<char* (*)()>("openblas_get_config")) {
    b.name = "OpenBLAS";
    b.version = config();
  } else if (auto version = lookup<const char* (*)()>("bli_info_get_version_str")) {
    b.name = "BLIS";
    b.version = version();
  } else if (b.path.find("/blas/") != std::string::npos) {
    b.name = "reference";  // Debian's libblas3: the netlib Fortran BLAS
    b.version = "netlib";
  } else {
    b.name = "unknown";
  }
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
  if (auto f = lookup<int (*)()>("openblas_get_num_threads")) return f();
  if (auto f = lookup<long (*)()>("bli_thread_get_num_threads")) return static_cast<int>(f());
  return 0;
}

}  // namespace marlsched
