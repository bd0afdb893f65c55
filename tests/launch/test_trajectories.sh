#!/usr/bin/env bash
# HDF5 trajectories from a real 4-rank training run, read back with h5py (Debian's
# python3-h5py): layout, dtypes, episode boundaries (episodes end inside rollouts here) and the
# values against what the trainer recorded in metrics.csv. Then: logging off, and bad options.
source "$(dirname "$0")/common.sh" "$@"
cd "$WORK"
PY=/usr/bin/python3
"$PY" -c "import h5py" || fail "python3-h5py is missing (launch/install-deps.sh installs it)"
mpi 4 "$BIN" train --envs-per-rank 2 --iterations 3 --rollout-steps 48 --episode-slots 40 \
  --traj-every 2 --quiet --no-eval-after --run-dir run4 > run4.log
"$PY" "$SRC/tests/io/check_trajectories.py" run run4 4
h5dump -H -p run4/trajectories/segment-000.h5 > header.txt
for ds in observations next_observations actions rewards terminations truncations log_probs values \
          reward_components episode_ids episode_steps iterations; do
  grep -q "DATASET \"$ds\"" header.txt || fail "h5dump -H shows no dataset $ds"
done
grep -q "CHECKSUM FLETCHER32" header.txt || fail "datasets carry no Fletcher32 checksum"
! grep -q "COMPRESSION DEFLATE" header.txt || fail "datasets are compressed by default"
pass "h5dump -H lists every dataset, uncompressed and checksummed by default"
grep -q "trajectory logging" run4.log || fail "the time split lacks trajectory logging"

# The same run written and deflated by a background thread on every rank: the same datasets.
mpi 4 "$BIN" train --envs-per-rank 2 --iterations 3 --rollout-steps 48 --episode-slots 40 \
  --traj-every 2 --traj-compression deflate --traj-writer thread --quiet --no-eval-after \
  --run-dir run4t > run4t.log
grep -q "trajectory writer thread" run4t.log || fail "the time split does not report the writer thread"
h5dump -H -p run4t/trajectories/segment-000.h5 > header_t.txt
grep -q "COMPRESSION DEFLATE" header_t.txt || fail "--traj-compression deflate did not compress"
"$PY" - run4/trajectories/segment-000.h5 run4t/trajectories/segment-000.h5 <<'PYEOF' ||
import sys, h5py, numpy as np
a, b = (h5py.File(p, "r") for p in sys.argv[1:3])
names = []
a.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
assert len(names) == 12, names
for n in names:
    assert np.array_equal(a[n][()], b[n][()]), n
assert a.attrs["rows"] == b.attrs["rows"] and b.attrs["complete"] == 1
PYEOF
  fail "the writer thread's file holds other data than the training thread's"
pass "--traj-writer thread with deflate writes the same datasets"

mpi 2 "$BIN" train --agents-per-rank 2 --envs-per-rank 1 --iterations 1 --rollout-steps 8 --traj-every 0 --quiet \
  --no-eval-after --run-dir off > /dev/null
[ ! -e off/trajectories ] || fail "--traj-every 0 still wrote trajectories"
pass "--traj-every 0 writes no trajectory file"

mpi 2 "$BIN" train --agents-per-rank 2 --envs-per-rank 1 --iterations 2 --rollout-steps 8 --traj-fields actions,rewards \
  --traj-compression none --quiet --no-eval-after --run-dir few > /dev/null
"$PY" - few/trajectories/segment-000.h5 <<'PYEOF' || fail "--traj-fields did not select the datasets"
import sys, h5py
f = h5py.File(sys.argv[1], "r")
assert "actions" in f and "rewards" in f and "truncations" in f and "observations" not in f
assert f["actions"].shape[0] == 16 and f["actions"].compression is None
PYEOF
pass "--traj-fields and --traj-compression none are honoured"

expect_error "misspelled trajectory field" 2 "traj-fields\[1\] must be one of observations, .*, got 'obsevations'" -- \
  mpi 2 "$BIN" train --agents-per-rank 2 --traj-fields observations,obsevations --run-dir bad
expect_error "unknown compression" 2 "one of deflate, szip, none" -- \
  "$BIN" train --traj-compression lz4 --run-dir bad
expect_error "unknown writer" 2 "one of auto, thread, inline" -- \
  "$BIN" train --traj-writer async --run-dir bad
[ ! -e bad ] || fail "a rejected run created its run directory"
