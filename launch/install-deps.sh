#!/usr/bin/env bash
# Installs the Debian 12 packages marlsched needs. Idempotent and quiet when all are present.
set -euo pipefail
PACKAGES=(
  g++ cmake make git pkg-config clang-format
  clang libclang-rt-14-dev
  libtorch-dev
  libopenmpi-dev openmpi-bin
  libhdf5-openmpi-dev hdf5-tools
  libcli11-dev libtomlplusplus-dev libbenchmark-dev libgtest-dev
  python3-torch python3-h5py python3-numpy python3-dev pybind11-dev
  slurm-wlm munge
  libopenblas0-openmp
  coinor-libclp-dev
  libzip-dev
)
missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# libtorch calls libblas.so.3 and libopenblas.so.0, which Debian's alternatives point at the
# installed implementation with the highest priority: OpenBLAS's pthreads build (100) over its
# OpenMP build (95) when both are installed. The pthreads build keeps its own thread pool beside
# libtorch's OpenMP one, and a rank with --threads > 1 then runs several times slower
# (docs/performance.md, "BLAS and threads"), so the OpenMP build is selected for all three links,
# unless another OpenMP build is chosen already.
blas_links() {
  local multiarch
  multiarch=$(gcc -print-multiarch)
  for link in libblas.so.3 liblapack.so.3 libopenblas.so.0; do
    local dir=/usr/lib/$multiarch/openblas-openmp current
    current=$(update-alternatives --query "$link-$multiarch" 2>/dev/null | sed -n 's/^Value: //p')
    [ -e "$dir/$link" ] || continue
    case "$current" in */*-openmp/*) continue ;; esac
    echo "$link-$multiarch $dir/$link"
  done
}
SUDO=""
need_root() {
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "install-deps: need root or sudo to $1" >&2; exit 1; }
    SUDO=sudo
  fi
}
if [ ${#missing[@]} -gt 0 ]; then
  need_root "install: ${missing[*]}"
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
mapfile -t switch < <(blas_links)
for s in "${switch[@]}"; do
  need_root "select OpenBLAS's OpenMP build"
  read -r name path <<< "$s"
  echo "install-deps: selecting $path for $name"
  $SUDO update-alternatives --quiet --set "$name" "$path"
done
[ ${#missing[@]} -eq 0 ] && [ ${#switch[@]} -eq 0 ] || echo "install-deps: done"
