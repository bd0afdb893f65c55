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
  python3-torch python3-h5py
  slurm-wlm munge
  libopenblas0-pthread
  coinor-libclp-dev
  libzip-dev
)
missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
