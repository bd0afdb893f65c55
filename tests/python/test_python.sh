#!/usr/bin/env bash
# The Python module (label `python`): a C++ run of one rank (marlsched collect) replayed through
# marlsched.make with the same config, seed and actions must give identical observations and
# rewards; auto-reset, per-copy seeds, baselines, the PettingZoo-style wrapper and the CLI's
# config messages (tests/python/test_env.py). Skips, with the reason, where Debian's python3,
# NumPy, h5py or the built module is missing.
source "$(dirname "$0")/../launch/common.sh" "$@"
PY=/usr/bin/python3
MODULE_DIR=$(dirname "$BIN")/../python
skip() { echo "SKIPPED: $*"; exit 77; }
[ -x "$PY" ] || skip "no $PY"
"$PY" -c "import numpy, h5py" 2>/dev/null || skip "$PY lacks numpy or h5py (python3-numpy, python3-h5py)"
ls "$MODULE_DIR"/marlsched/_core*.so > /dev/null 2>&1 || skip "the module was not built (pybind11-dev, python3-dev)"
cd "$WORK"
cat > small.toml <<'TOML'
env = "geodc"
seed = 5
envs-per-rank = 3
slot-minutes = 60
episode-slots = 12
TOML
printf 'env = "geodc"\nslot-minutes = 0\n' > bad.toml
mpi 1 "$BIN" collect --config small.toml --agents-per-rank 4 --heuristic least-loaded --epsilon 0.3 \
  --episodes 2 --run-dir data --quiet > collect.log
PYTHONPATH="$MODULE_DIR" "$PY" "$SRC/tests/python/test_env.py" data small.toml 5 3 bad.toml
