#!/usr/bin/env bash
# Faults during a run: a rank that hangs (watchdog), SIGTERM to every rank and SIGINT to one
# (checkpoint, exit 75, exact resume), SIGTERM and SIGINT to mpirun through launch/mpirun.sh, a full disk (clear error naming the file; the last
# complete checkpoint is untouched and resumes), a read-only run directory. A rank killed with
# SIGKILL and a rank that throws are in test_checkpoint.sh and test_cli_errors.sh.
source "$(dirname "$0")/common.sh" "$@"
cd "$WORK"
ARGS=(train --agents-per-rank 2 --envs-per-rank 2 --quiet --no-eval-after)

# 1. A rank stops making progress: the watchdog aborts the whole job, naming the rank and phase.
start=$(date +%s)
rc=0
out=$(MARLSCHED_HANG_AT=1:3 timeout 120 "$MPIEXEC" -n 2 --oversubscribe "$BIN" "${ARGS[@]}" \
      --iterations 8 --watchdog-s 3 --run-dir hang 2>&1) || rc=$?
elapsed=$(( $(date +%s) - start ))
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "hung rank: exit code $rc (124: the job hung)"
grep -q "marlsched: error on rank [01] of 2: watchdog: no progress for [0-9]* s" <<<"$out" \
  || fail "hung rank: no watchdog message: $out"
[ "$elapsed" -lt 60 ] || fail "hung rank: took ${elapsed}s to abort"
pass "a hung rank aborts the job through the watchdog (exit $rc, ${elapsed}s)"

# The uninterrupted reference run.
mpi 2 "$BIN" "${ARGS[@]}" --iterations 8 --checkpoint-every 2 --traj-every 0 --run-dir straight \
  > straight.log

# rank_pids RUN_DIR: the pids of the rank processes of the run writing into RUN_DIR (not mpirun).
rank_pids() { pgrep -f "^$BIN train .*--run-dir $1" || true; }
# wait_rows FILE N: until FILE has N data rows (60 s at most).
wait_rows() {
  for _ in $(seq 600); do
    [ -f "$1" ] && [ "$(($(wc -l < "$1") - 1))" -ge "$2" ] && return 0
    sleep 0.1
  done
  fail "$1 never reached $2 rows"
}

# 2. SIGTERM to every rank (what Slurm's scancel and a node drain send): all ranks stop after
#    the same update, write a checkpoint and exit 75; the resumed run equals the straight one.
for sig in TERM INT; do
  dir=sig$sig
  rc=0
  "$MPIEXEC" -n 2 --oversubscribe "$BIN" "${ARGS[@]}" --iterations 400 --checkpoint-every 2 --traj-every 0 \
    --run-dir "$dir" \
    > "$dir.log" 2>&1 &
  job=$!
  wait_rows "$dir/metrics.csv" 2
  pids=$(rank_pids "$dir")
  [ -n "$pids" ] || fail "SIG$sig: no rank processes found"
  if [ "$sig" = TERM ]; then
    kill -TERM $pids
  else
    kill -INT "$(head -1 <<<"$pids")"  # one rank only: the stop is agreed collectively
  fi
  wait "$job" || rc=$?
  [ "$rc" -eq 75 ] || fail "SIG$sig: exit code $rc, expected 75: $(cat "$dir.log")"
  grep -q "stopping after iteration [0-9]* on signal" "$dir.log" || fail "SIG$sig: $(cat "$dir.log")"
  last=$(ls "$dir/checkpoints" | tail -1)
  [ -f "$dir/checkpoints/$last/MANIFEST" ] || fail "SIG$sig: no complete checkpoint"
  # The run was stopped after some iteration s < 400. Resume to 8 iterations, or to s when the
  # stop came later (a resume never shrinks a run; then there is nothing left to do), and
  # compare what both runs have: the first min(s, 8) rows.
  s=$((10#${last#ckpt-}))
  mpi 2 "$BIN" train --resume "$dir" --iterations $(( s > 8 ? s : 8 )) > "$dir.resumed.log"
  n=$(( $(wc -l < "$dir/metrics.csv") ))
  [ "$n" -le "$(wc -l < straight/metrics.csv)" ] || n=$(wc -l < straight/metrics.csv)
  cmp <(head -"$n" straight/metrics.csv) <(head -"$n" "$dir/metrics.csv") \
    || fail "SIG$sig: resumed metrics differ from the uninterrupted run"
  pass "SIG$sig ($( [ $sig = TERM ] && echo every rank || echo one rank)): checkpoint $last, exit 75, resume matches"
done

# 2b. The same signals to mpirun itself, through launch/mpirun.sh (mpirun alone would SIGTERM
#     and then SIGKILL the ranks and exit 1): exit 75, and the stop line says which signal came.
for sig in TERM INT; do
  dir=wrap$sig
  rc=0
  set -m  # a background job of a non-interactive shell would ignore SIGINT
  bash "$SRC/launch/mpirun.sh" -n 2 "$BIN" "${ARGS[@]}" --iterations 400 --checkpoint-every 2 \
    --traj-every 0 --run-dir "$dir" > "$dir.log" 2>&1 &
  job=$!
  set +m
  wait_rows "$dir/metrics.csv" 2
  kill -"$sig" "$job"
  wait "$job" || rc=$?
  [ "$rc" -eq 75 ] || fail "SIG$sig to launch/mpirun.sh: exit code $rc, expected 75: $(cat "$dir.log")"
  if [ "$sig" = TERM ]; then want="signal 10 (User defined signal 1: .*SIGTERM forwarded by launch/mpirun.sh)"
  else want="signal 12 (User defined signal 2: SIGINT forwarded by launch/mpirun.sh)"; fi
  grep -q "stopping after iteration [0-9]* on $want: checkpoint written" "$dir.log" \
    || fail "SIG$sig to launch/mpirun.sh: $(cat "$dir.log")"
  grep -q "marlsched: SIG$sig received" "$dir.log" || fail "SIG$sig: the launcher said nothing"
  pass "SIG$sig to launch/mpirun.sh: every rank checkpoints, exit 75, the signal is named"
done

# unmount DIR: the ranks of a failed job may still be closing their files when mpirun returns
# (seen under load: "target is busy"), so retry for up to 30 s.
unmount() {
  for _ in $(seq 60); do
    umount "$1" 2> /dev/null && return 0
    sleep 0.5
  done
  fail "cannot unmount $1: $(umount "$1" 2>&1)"
}

# 3. The disk fills up during the run (a 2 MiB tmpfs; needs mount rights, skipped otherwise).
mkdir -p small
if mount -t tmpfs -o size=2m tmpfs small 2> /dev/null; then
  trap 'umount "$WORK/small" 2> /dev/null || true; rm -rf "$WORK"' EXIT
  out=$(timeout 120 "$MPIEXEC" -n 2 --oversubscribe "$BIN" "${ARGS[@]}" --iterations 40 \
        --checkpoint-every 1 --keep-checkpoints 1 --traj-every 1 --run-dir small/run 2>&1) && fail "disk full: exit 0"
  grep -q "marlsched: error on rank [01] of 2: cannot write '.*': No space left on device" <<<"$out" \
    || fail "disk full: no clear message: $out"
  if grep -q "terminate called\|frame #" <<<"$out"; then fail "disk full: a raw exception escaped: $out"; fi
  good=$(ls small/run/checkpoints | grep -v tmp | tail -1)
  [ -n "$good" ] || fail "disk full: no complete checkpoint was left"
  cp -r small/run fullcopy
  unmount small
  mpi 2 "$BIN" train --resume fullcopy --iterations 12 --checkpoint-every 4 > fullcopy.log \
    || fail "disk full: the last good checkpoint does not resume: $(cat fullcopy.log)"
  grep -q "resuming from fullcopy/checkpoints/$good" fullcopy.log || fail "disk full: $(cat fullcopy.log)"
  pass "full disk: one clear error ($(grep -o "cannot write '[^']*'" <<<"$out" | head -1)); $good intact and resumes"

  # 4. A read-only run directory.
  mkdir -p ro
  mount -t tmpfs -o size=1m,ro tmpfs ro
  trap 'umount "$WORK/ro" 2> /dev/null || true; rm -rf "$WORK"' EXIT
  expect_error "read-only run directory" 2 "Read-only file system" -- \
    mpi 2 "$BIN" "${ARGS[@]}" --iterations 2 --run-dir ro/run
  unmount ro
else
  echo "skip: full-disk and read-only checks need 'mount -t tmpfs' (not permitted here)"
fi
echo "all fault checks passed"
