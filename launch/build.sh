#!/usr/bin/env bash
# Configures and builds marlsched (Release) into build/ (or $MARLSCHED_BUILD).
set -euo pipefail
source "$(dirname "$0")/env.sh"
cmake -S "$MARLSCHED_ROOT" -B "$MARLSCHED_BUILD" -DCMAKE_BUILD_TYPE=Release "$@" > "$MARLSCHED_BUILD.configure.log" 2>&1 \
  || { cat "$MARLSCHED_BUILD.configure.log"; exit 1; }
cmake --build "$MARLSCHED_BUILD" -j"$(nproc)"
