#!/usr/bin/env bash
# Installs the built project into a temporary prefix and builds a separate CMake project
# against it with find_package(marlsched), then runs the result, which also loads a policy
# that the installed `marlsched` trained and exported.
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
# A policy trained and exported by the installed binary, for the consumer to load.
(cd "$WORK" && "$WORK/prefix/bin/marlsched" train --agents-per-rank 4 --envs-per-rank 1 \
  --iterations 1 --rollout-steps 8 --quiet --no-eval-after --traj-every 0 --run-dir run > train.log &&
  "$WORK/prefix/bin/marlsched" export run > export.log) || { cat "$WORK"/*.log; exit 1; }
"$WORK/build/downstream" "$WORK/run/policy.pt" | tee "$WORK/run.log"
grep -q "exported policy" "$WORK/run.log"
grep -q "downstream ok" "$WORK/run.log"
# The installed Python package, where the module was built: Debian's python3 imports it from the
# prefix's dist-packages, steps geodc and refuses a config the CLI refuses with its message.
if ls "$BUILD"/python/marlsched/_core*.so > /dev/null 2>&1; then
  site=$(ls -d "$WORK"/prefix/lib/python3*/dist-packages)
  printf 'env = "geodc"\nslot-minutes = 0\n' > "$WORK/bad.toml"
  (cd "$WORK" && PYTHONPATH="$site" /usr/bin/python3 - "$WORK/bad.toml" <<'PY') || exit 1
import sys
import numpy as np
import marlsched
assert "/prefix/" in marlsched.__file__, marlsched.__file__  # not the build tree
env = marlsched.make("geodc", num_envs=4)
obs = env.reset()
obs, rew, term, trunc, info = env.step(np.zeros((4, env.num_agents), dtype=int))
assert obs.shape == (4, env.num_agents, len(env.obs_fields)) and rew.shape == (4, env.num_agents)
try:
    marlsched.make(config=sys.argv[1])
    sys.exit("a config the CLI refuses was accepted")
except ValueError as e:
    assert "--slot-minutes must divide 60, got 0" in str(e), e
print("installed python package ok:", marlsched.__file__)
PY
  echo "2 passed, 0 failed"
else
  echo "1 passed, 0 failed (no Python module built: python3-dev and pybind11-dev)"
fi
