#!/usr/bin/env bash
# Threads per rank (issue 20): libtorch runs on OpenBLAS's OpenMP build (one thread pool with
# libtorch's own), two threads per rank give identical metrics twice, and each thread layout that
# would run several times slower gets one warning line from one rank.
source "$(dirname "$0")/common.sh" "$@"
cd "$WORK"
blas=$("$BIN" --version | grep '^BLAS:')
case "$blas" in
  *OpenBLAS*USE_OPENMP*) pass "libtorch runs on OpenBLAS's OpenMP build: $blas" ;;
  *OpenBLAS*) fail "an OpenBLAS build other than the OpenMP one is in use (launch/install-deps.sh selects the OpenMP build): $blas" ;;
  *) echo "skip: the BLAS is not OpenBLAS, so its build is not checked: $blas" ;;
esac
ARGS=(train --envs-per-rank 2 --iterations 3 --seed 5 --quiet --no-eval-after --threads 2)
warnings() { grep -c "marlsched: warning" "$1" || true; }

if [ "$(nproc)" -ge 2 ]; then
  for i in 1 2; do
    "$MPIEXEC" -n 1 --bind-to none "$BIN" "${ARGS[@]}" --agents-per-rank 4 --run-dir two-$i \
      > two-$i.log 2>&1 || fail "--threads 2 on two cores: $(cat two-$i.log)"
  done
  [ "$(warnings two-1.log)" -eq 0 ] || fail "a warning for two threads on two cores: $(cat two-1.log)"
  cmp two-1/metrics.csv two-2/metrics.csv || fail "metrics.csv differs between two runs at --threads 2"
  pass "--threads 2 on two cores: no warning, identical metrics.csv twice"

  # mpirun binds each of two ranks to one core: two threads each would share it.
  "$MPIEXEC" -n 2 --bind-to core "$BIN" "${ARGS[@]}" --agents-per-rank 2 --run-dir bound \
    > bound.log 2>&1 || fail "two ranks bound to a core each: $(cat bound.log)"
  n=$(grep -c "warning: --threads 2, but a rank has 1 core(s) to itself" bound.log || true)
  [ "$n" -eq 1 ] || fail "expected one warning about the ranks' cores, got $n: $(cat bound.log)"
  grep -q -- "--map-by slot:PE=2" bound.log || fail "the warning does not say how to give a rank 2 cores"
  pass "two threads on a rank bound to one core: one warning line, naming mpirun --map-by slot:PE=2"
else
  echo "skip: one CPU here, so two threads cannot have a core each, nor two ranks a core each"
fi

# OpenBLAS's other builds, where installed beside the OpenMP one: one warning line each.
# other_build BUILD PACKAGE PATTERN
other_build() {
  local dir
  dir=/usr/lib/$(gcc -print-multiarch)/openblas-$1
  if [ ! -e "$dir/libblas.so.3" ] || [ "$(nproc)" -lt 2 ]; then
    echo "skip: OpenBLAS's $1 build ($2) is not installed, or one CPU: its warning is not exercised"
    return
  fi
  LD_LIBRARY_PATH=$dir "$MPIEXEC" -x LD_LIBRARY_PATH -n 1 --bind-to none "$BIN" "${ARGS[@]}" \
    --agents-per-rank 4 --run-dir "$1" > "$1.log" 2>&1 || fail "$1 build: $(cat "$1.log")"
  n=$(grep -c -- "$3" "$1.log" || true)
  [ "$n" -eq 1 ] && [ "$(warnings "$1.log")" -eq 1 ] ||
    fail "expected one warning about OpenBLAS's $1 build, got $n: $(cat "$1.log")"
  pass "--threads 2 on OpenBLAS's $1 build: one warning line"
}
other_build pthread libopenblas0-pthread "with OpenBLAS's own thread pool"
other_build serial libopenblas0-serial "but OpenBLAS is its single-threaded build"
