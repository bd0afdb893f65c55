#!/usr/bin/env bash
# For bench/cuda_check.sh on a GPU machine whose image is not Debian 12 and has no Open MPI or
# parallel HDF5 (e.g. a CUDA image with only PyTorch's wheel), and no network:
#   on a Debian 12 machine:   bash bench/cuda_image_deps.sh download DIR
#   on the GPU machine, root: bash bench/cuda_image_deps.sh install DIR
# `install` unpacks the packages into /opt/dsys and copies into / only the files the image lacks
# (nothing of the image is replaced), so that Debian's paths resolve as on Debian. Then:
#   CMAKE_ARGS="-DMPI_C_COMPILER=/usr/bin/mpicc.openmpi -DMPI_CXX_COMPILER=/usr/bin/mpicxx.openmpi
#     -DHDF5_C_COMPILER_EXECUTABLE=/usr/bin/h5pcc.openmpi" MPIEXEC=/usr/bin/mpirun.openmpi \
#     bash bench/cuda_check.sh
# (the alternatives links mpicc, h5pcc and mpirun are not made by unpacking).
set -euo pipefail
# What the launcher links and its build needs, with their run-time libraries (from ldd of
# libmpi, Open MPI's plugins, libhdf5, libClp, libzip and libtomlplusplus; about 31 MB).
PACKAGES=(
  libopenmpi-dev openmpi-bin openmpi-common libopenmpi3
  libhdf5-openmpi-dev libhdf5-openmpi-103-1 libhdf5-openmpi-hl-100 libhdf5-openmpi-cpp-103-1
  libhdf5-openmpi-hl-cpp-100 libcli11-dev libtomlplusplus-dev libtomlplusplus3
  coinor-libclp-dev coinor-libclp1 coinor-libcoinutils-dev coinor-libcoinutils3v5
  coinor-libosi-dev coinor-libosi1v5 libzip-dev libzip4 pkgconf pkgconf-bin libpkgconf3
  ibverbs-providers libaec0 libaec-dev libsz2 libbrotli1 libcurl4 libevent-core-2.1-7
  libevent-pthreads-2.1-7 libfabric1 libgfortran5 libhwloc15 libibverbs1 libmunge2 libnl-3-200
  libnl-route-3-200 libnuma1 libpmix2 libpsm-infinipath1 libpsm2-2 librdmacm1 libucx0 libblas3
  liblapack3 libltdl7 libpciaccess0 libssh2-1 librtmp1 libnghttp2-14 libpsl5 libldap-2.5-0
  libsasl2-2 libgssapi-krb5-2 libkrb5-3 libk5crypto3 libkrb5support0 libbz2-1.0 libzstd1
  libgnutls30 libnettle8 libhogweed6 libgmp10 libidn2-0 libunistring2 libtasn1-6 libp11-kit0
  libffi8 libssl3 libkeyutils1 libcom-err2 libquadmath0 libcap2 libbz2-dev zlib1g-dev libssl-dev
  libcurl4-openssl-dev
)
what=${1:?usage: cuda_image_deps.sh download|install DIR} dir=${2:?usage: cuda_image_deps.sh download|install DIR}
case $what in
  download)
    mkdir -p "$dir"
    (cd "$dir" && apt-get download "${PACKAGES[@]}")
    ;;
  install)
    root=${DSYS_ROOT:-/opt/dsys} dest=${DSYS_DEST:-/}
    rm -rf "$root"
    mkdir -p "$root"
    for d in "$dir"/*.deb; do dpkg -x "$d" "$root"; done
    # Debian 12 packages still put some files under /lib and /bin; the image merges them into /usr.
    for d in lib bin sbin; do
      if [ -d "$root/$d" ] && [ ! -L "$root/$d" ]; then
        mkdir -p "$root/usr/$d"
        cp -an "$root/$d/." "$root/usr/$d/"
        rm -rf "${root:?}/$d"
      fi
    done
    cp -an "$root/." "$dest" 2> /dev/null || true  # dangling doc symlinks are refused: harmless
    L=${dest%/}/usr/lib/x86_64-linux-gnu
    for n in blas lapack; do  # update-alternatives' links, which dpkg -x does not make
      [ -e "$L/lib$n.so.3" ] || ln -s "$n/lib$n.so.3" "$L/lib$n.so.3"
      [ -e "$L/lib$n.so" ] || ln -s "lib$n.so.3" "$L/lib$n.so"
    done
    [ "$dest" != / ] || ldconfig
    echo "cuda_image_deps: $(ls "$dir"/*.deb | wc -l) packages unpacked; $(mpicc.openmpi --showme:version 2>&1 | head -1)"
    ;;
  *) echo "usage: cuda_image_deps.sh download|install DIR" >&2; exit 2 ;;
esac
