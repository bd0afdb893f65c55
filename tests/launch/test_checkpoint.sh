#!/usr/bin/env bash
# Checkpoint and resume: a run killed with SIGKILL and resumed reproduces the uninterrupted
# run's metrics exactly, with no duplicated rows; old checkpoints are pruned; bad resumes
# (other rank count, other config, corrupted or truncated files) fail with one message and
# touch nothing.
source "$(dirname "$0")/common.sh" "$@"
cd "$WORK"
ARGS=(train --agents-per-rank 2 --envs-per-rank 2 --iterations 8 --checkpoint-every 4 --traj-every 1 --quiet --no-eval-after)
mpi 2 "$BIN" "${ARGS[@]}" --run-dir straight > straight.log
rc=0
MARLSCHED_KILL_AT=1:6:40 timeout 120 "$MPIEXEC" -n 2 --oversubscribe "$BIN" "${ARGS[@]}" --run-dir crashed > crashed.log 2>&1 || rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "the killed run exited with $rc"
grep -q "process rank 1 .*exited on signal 9" crashed.log || fail "the lost rank is not named: $(cat crashed.log)"
[ -f crashed/checkpoints/ckpt-00000004/MANIFEST ] || fail "no checkpoint 4 before the crash"
[ ! -e crashed/checkpoints/ckpt-00000008 ] || fail "a checkpoint after the crash point exists"
[ "$(wc -l < crashed/metrics.csv)" -eq 6 ] || fail "expected 5 iterations logged before the kill"
pass "rank 1 killed with SIGKILL in the rollout of iteration 6 (exit $rc); checkpoint 4 complete"
PY=/usr/bin/python3
CHECK="$SRC/tests/io/check_trajectories.py"
# Trajectories are flushed every iteration (--traj-every 1): the killed run's file holds iterations 1-5 and opens.
"$PY" "$CHECK" crashed crashed/trajectories/segment-000.h5 $((5 * 96)) 5
mpi 2 "$BIN" train --resume crashed > resumed.log
grep -q "resuming from crashed/checkpoints/ckpt-00000004 at iteration 5" resumed.log || fail "resume point: $(cat resumed.log)"
cmp straight/metrics.csv crashed/metrics.csv || fail "resumed metrics differ from the uninterrupted run"
[ "$(cut -d, -f1 crashed/metrics.csv | sort | uniq -d | wc -l)" -eq 0 ] || fail "duplicated iterations"
pass "kill -9 + resume reproduces the uninterrupted metrics.csv exactly, no duplicate rows"
"$PY" "$CHECK" resumed straight crashed

mpi 2 "$BIN" train --agents-per-rank 2 --envs-per-rank 1 --iterations 5 --checkpoint-every 1 \
    --keep-checkpoints 2 --quiet --no-eval-after --run-dir keep > keep.log
[ "$(ls keep/checkpoints)" = "$(printf 'ckpt-00000004\nckpt-00000005')" ] || fail "kept: $(ls keep/checkpoints)"
pass "only the last 2 checkpoints are kept"

cp crashed/metrics.csv before.csv
expect_error "resume with another rank count" 2 "'crashed' was trained by 2 ranks .* resume it with mpirun -n 2" -- \
  "$BIN" train --resume crashed --agents-per-rank 4
expect_error "resume with another config" 2 "different configuration" -- \
  mpi 2 "$BIN" train --resume crashed --gpus 8,8,8,8
cp crashed/config.toml config-before.toml
expect_error "resume with fewer iterations" 2 "checkpoint holds 8 iterations but --iterations is 3" -- \
  mpi 2 "$BIN" train --resume crashed --iterations 3
cmp config-before.toml crashed/config.toml || fail "a refused resume rewrote config.toml"
cp -r crashed corrupt
ck=corrupt/checkpoints/ckpt-00000008
head -c 100 "$ck/rank-1.state" > "$ck/x" && mv "$ck/x" "$ck/rank-1.state"
expect_error "truncated state file" 2 "rank-1.state is corrupted" -- mpi 2 "$BIN" train --resume corrupt
sed -i 's/^ranks 2/ranks two/' "$ck/MANIFEST"
expect_error "malformed manifest" 2 "MANIFEST:4: malformed 'ranks' entry" -- mpi 2 "$BIN" train --resume corrupt
cp -r crashed oldver
sed -i 's/^version .*/version 0.0.1/' oldver/checkpoints/ckpt-00000008/MANIFEST
"$PY" "$SRC/tests/launch/damage.py" resum oldver/checkpoints/ckpt-00000008/MANIFEST > /dev/null
expect_error "checkpoint of another version" 2 "written by marlsched 0.0.1" -- mpi 2 "$BIN" train --resume oldver
mkdir -p empty && cp crashed/config.toml empty/
expect_error "no checkpoint" 2 "no complete checkpoint" -- mpi 2 "$BIN" train --resume empty
# A flipped bit in a count the resume trusts (traj_rows cuts the trajectories back): the
# manifest's own checksum refuses it (issue 42).
cp -r crashed flipped
"$PY" "$SRC/tests/launch/damage.py" manifest flipped/checkpoints/ckpt-00000008/MANIFEST traj_rows > /dev/null
expect_error "manifest with a flipped digit" 2 "fails its checksum" -- mpi 2 "$BIN" train --resume flipped
cmp crashed/metrics.csv flipped/metrics.csv || fail "a refused resume changed metrics.csv"
# The same for config.toml, which a resume reads: a changed digit is refused; deleting the
# checksum line takes the file as the user's.
cp -r crashed edited
sed -i 's/^checkpoint-every = 4$/checkpoint-every = 5/' edited/config.toml
grep -q '^checkpoint-every = 5$' edited/config.toml || fail "the test's edit of config.toml did not apply"
expect_error "a changed config.toml" 2 "edited/config.toml fails its checksum: a byte changed since marlsched wrote it" -- \
  mpi 2 "$BIN" train --resume edited
sed -i '$d' edited/config.toml
mpi 2 "$BIN" train --resume edited --quiet > edited.log 2>&1 || fail "config.toml without its checksum line was refused: $(cat edited.log)"
cmp before.csv crashed/metrics.csv || fail "a failed resume modified metrics.csv"
pass "failed resumes leave the run directory untouched"

# Bad trajectory files on resume: one clear error, nothing touched.
cp -r crashed badtraj
echo "garbage" > badtraj/trajectories/segment-001.h5
cp badtraj/trajectories/segment-000.h5 seg0.h5
expect_error "damaged trajectory file" 2 "segment-001.h5' as an HDF5 file" -- mpi 2 "$BIN" train --resume badtraj
"$PY" -c "import h5py; h5py.File('badtraj/trajectories/segment-001.h5', 'w').attrs['title'] = 'other'"
expect_error "HDF5 file of another layout" 2 "is not a marlsched trajectory file" -- \
  mpi 2 "$BIN" train --resume badtraj
cmp seg0.h5 badtraj/trajectories/segment-000.h5 || fail "a failed resume modified a trajectory file"
pass "resumes over damaged or foreign trajectory files fail cleanly and touch nothing"

# Damaged files (issue 22): a flipped bit in the newest checkpoint or in a trajectory chunk, a
# missing trajectory segment. Each stops the resume with one message saying what to do; with
# --quarantine-damaged the damaged files move to RUN_DIR/quarantine/ and the run continues.
DAMAGE="$SRC/tests/launch/damage.py"
cp -r crashed dmg
"$PY" "$DAMAGE" zip dmg/checkpoints/ckpt-00000008/rank-1.pt > /dev/null
expect_error "damaged newest checkpoint" 2 "error on rank 1: checkpoint file dmg/checkpoints/ckpt-00000008/rank-1.pt is corrupted (size or checksum differs from the manifest); the newest intact checkpoint is dmg/checkpoints/ckpt-00000004: give --quarantine-damaged" -- \
  mpi 2 "$BIN" train --resume dmg
cmp crashed/metrics.csv dmg/metrics.csv || fail "a refused resume changed metrics.csv"
mpi 2 "$BIN" train --resume dmg --quarantine-damaged > dmg.log 2>&1
grep -q "moved the damaged dmg/checkpoints/ckpt-00000008 to dmg/quarantine/ckpt-00000008" dmg.log &&
  grep -q "resuming from dmg/checkpoints/ckpt-00000004 at iteration 5" dmg.log || fail "quarantine: $(cat dmg.log)"
cmp straight/metrics.csv dmg/metrics.csv || fail "the resume from the intact checkpoint differs from the uninterrupted run"
"$PY" "$CHECK" resumed straight dmg
pass "a damaged checkpoint names the newest intact one; --quarantine-damaged resumes from it exactly"

cp -r crashed badchunk
"$PY" "$DAMAGE" h5 badchunk/trajectories/segment-001.h5 observations > /dev/null
"$PY" - badchunk/trajectories/segment-001.h5 <<'PY' || fail "h5py read a damaged chunk without error"
import sys, h5py
try:
    h5py.File(sys.argv[1], "r")["observations"][:]
except OSError as e:
    assert "checksum" in str(e).lower() or "filter" in str(e).lower(), e
    sys.exit(0)
sys.exit(1)
PY
expect_error "trajectory chunk with a flipped bit" 2 "segment-001.h5 is damaged: observations rows 0 to .* fail their checksum .*; give --quarantine-damaged to move it to badchunk/quarantine/" -- \
  mpi 2 "$BIN" train --resume badchunk --iterations 10
mpi 2 "$BIN" train --resume badchunk --iterations 10 --quarantine-damaged > badchunk.log 2>&1 || fail "$(cat badchunk.log)"
[ -f badchunk/quarantine/segment-001.h5 ] && [ -f badchunk/trajectories/segment-002.h5 ] ||
  fail "quarantined segment: $(ls badchunk/quarantine badchunk/trajectories)"
[ "$(tail -n +2 badchunk/metrics.csv | wc -l)" -eq 10 ] || fail "the quarantined resume did not run to 10"
pass "a trajectory chunk with a flipped bit fails its Fletcher32 checksum; --quarantine-damaged moves the segment aside"

cp -r crashed noseg
rm noseg/trajectories/segment-001.h5
expect_error "missing trajectory segment" 2 "segment-001.h5 is missing; give --quarantine-damaged" -- \
  mpi 2 "$BIN" train --resume noseg --iterations 10 --traj-every 0
mpi 2 "$BIN" train --resume noseg --iterations 10 --traj-every 0 --quarantine-damaged > noseg.log 2>&1 || fail "$(cat noseg.log)"
[ "$(tail -n +2 noseg/metrics.csv | wc -l)" -eq 10 ] || fail "the resume without its segment did not run to 10"
pass "a missing trajectory segment: the resume says how to go on, and goes on when told"
