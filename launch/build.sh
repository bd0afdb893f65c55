#!/usr/bin/env bash
# Configures and builds marlsched (Release) into build/ (or $MARLSCHED_BUILD).
set -euo pipefail
source "$(dirname "$0")/env.sh"
cmake -S "$MARLSCHED_ROOT" -B "$MARLSCHED_BUILD" -DCMAKE_BUILD_TYPE=Release "$@" > "$MARLSCHED_BUILD.configure.log" 2>&1 \
  || { cat "$MARLSCHED_BUILD.configure.log"; exit 1; }
cmake --build "$MARLSCHED_BUILD" -j"$(nproc)"
# The Python module (python/, docs/python.md): Debian's python3 finds it through a .pth file in
# the user's site-packages, as `pip install --user -e` would do (`cmake --install` copies it
# into the prefix's dist-packages instead).
if ls "$MARLSCHED_BUILD"/python/marlsched/_core*.so > /dev/null 2>&1 && [ -x /usr/bin/python3 ]; then
  site=$(/usr/bin/python3 -m site --user-site)
  mkdir -p "$site" && echo "$MARLSCHED_BUILD/python" > "$site/marlsched.pth"
fi
