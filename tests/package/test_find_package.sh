#!/usr/bin/env bash
# Installs the built project into a temporary prefix and builds a separate CMake project
# against it with find_package(marlsched), then runs the result.
set -euo pipefail
BUILD=$1
HERE=$2
WORK=$(mktemp -d "${TMPDIR:-/tmp}/marlsched-pkg.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
cmake --install "$BUILD" --prefix "$WORK/prefix" > "$WORK/install.log"
[ -f "$WORK/prefix/lib/cmake/marlsched/marlschedConfig.cmake" ] || { echo "no package config installed"; exit 1; }
[ -x "$WORK/prefix/bin/marlsched" ] || { echo "no executable installed"; exit 1; }
cmake -S "$HERE/downstream" -B "$WORK/build" -DCMAKE_PREFIX_PATH="$WORK/prefix" \
      -DCMAKE_BUILD_TYPE=Release > "$WORK/configure.log"
cmake --build "$WORK/build" -j2 > "$WORK/build.log" || { cat "$WORK/build.log"; exit 1; }
"$WORK/build/downstream" | tee "$WORK/run.log"
grep -q "downstream ok" "$WORK/run.log"
echo "1 passed, 0 failed"
