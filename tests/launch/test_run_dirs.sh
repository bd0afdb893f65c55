#!/usr/bin/env bash
# Run directories (issue 22): one job at a time (a second job into a busy directory stops with
# one message and leaves the first job's files alone; a killed job leaves no lock behind), a fresh
# training never mixes with an earlier run (refused; --force removes the earlier run's files and
# nothing else), and evaluations write to their own folder unless told.
source "$(dirname "$0")/common.sh" "$@"
cd "$WORK"
ARGS=(train --agents-per-rank 2 --envs-per-rank 2 --quiet)

mpi 2 "$BIN" "${ARGS[@]}" --iterations 2 --eval-episodes 2 --run-dir run > run.log
cp run/metrics.csv before.csv
cp run/eval.csv eval-before.csv

# A fresh training into a directory that holds a run: refused, the run untouched.
expect_error "a fresh training into an earlier run" 2 "already holds a run (config.toml, .*metrics.csv" \
  -- mpi 2 "$BIN" "${ARGS[@]}" --iterations 3 --run-dir run
cmp -s before.csv run/metrics.csv || fail "the refused training changed metrics.csv"
expect_error "--force with --resume" 2 "does not go with --resume" \
  -- mpi 2 "$BIN" train --resume run --force

# Evaluations write to a new evals/K unless --out says otherwise; the run's tables stay.
mpi 2 "$BIN" eval --model run --eval-episodes 2 --baselines random > e1.log
mpi 2 "$BIN" eval --model run --eval-episodes 2 --baselines random > e2.log
grep -q "wrote run/evals/1/eval.csv" e1.log || fail "first evaluation: $(cat e1.log)"
grep -q "wrote run/evals/2/eval.csv" e2.log || fail "second evaluation: $(cat e2.log)"
[ -f run/evals/1/eval-episodes.csv ] && [ -f run/evals/2/eval.md ] || fail "evals/K incomplete"
cmp -s eval-before.csv run/eval.csv || fail "an evaluation replaced the training's eval.csv"
pass "evaluations write to run/evals/1, run/evals/2; the training's eval.csv is unchanged"

# --force removes the earlier run's files and nothing else.
echo "my notes" > run/notes.txt
touch run/job-train.sbatch run/slurm-123.out
mpi 2 "$BIN" "${ARGS[@]}" --iterations 3 --no-eval-after --run-dir run --force > force.log
[ "$(tail -n +2 run/metrics.csv | wc -l)" -eq 3 ] || fail "--force: metrics.csv is not the new run's"
[ ! -e run/eval.csv ] && [ ! -e run/evals ] || fail "--force left the earlier run's evaluations"
[ -f run/notes.txt ] && [ -f run/job-train.sbatch ] && [ -f run/slurm-123.out ] \
  || fail "--force removed files that are not the run's"
pass "--force starts afresh and keeps the user's and Slurm's files"

# A second job into a directory in use: refused at once; the first job finishes intact (400
# iterations, so that it is still running when the second starts).
mpi 2 "$BIN" "${ARGS[@]}" --iterations 400 --no-eval-after --traj-every 1 --run-dir busy > busy.log &
first=$!
for _ in $(seq 600); do
  [ -f busy/metrics.csv ] && [ "$(wc -l < busy/metrics.csv)" -ge 3 ] && break
  sleep 0.1
done
[ -f busy/metrics.csv ] || fail "the first job never started"
expect_error "a second job into a busy run directory" 2 "in use by another marlsched job (pid [0-9]* on .* since" \
  -- mpi 2 "$BIN" "${ARGS[@]}" --iterations 3 --run-dir busy --force
wait "$first" || fail "the first job failed: $(cat busy.log)"
[ "$(tail -n +2 busy/metrics.csv | wc -l)" -eq 400 ] || fail "the first job's metrics.csv is damaged"
/usr/bin/python3 -c 'import h5py' 2> /dev/null && /usr/bin/python3 - <<'PY'
import h5py
with h5py.File("busy/trajectories/segment-000.h5") as f:
    assert f.attrs["complete"] == 1 and f["actions"].shape[0] == f.attrs["rows"], "trajectory damaged"
PY
pass "the busy job finished intact (400 rows, complete trajectory file)"

# A killed job leaves no lock: the next job starts.
rc=0
MARLSCHED_KILL_AT=1:2 timeout 120 mpi 2 "$BIN" "${ARGS[@]}" --iterations 5 --run-dir killed \
  > killed.log 2>&1 || rc=$?
[ "$rc" -ne 0 ] || fail "the killed job exited 0"
mpi 2 "$BIN" "${ARGS[@]}" --iterations 2 --no-eval-after --run-dir killed --force > after.log \
  || fail "a killed job's directory stayed locked: $(cat after.log)"
pass "a killed job leaves no lock behind"

# Issue 42: --force never removes what the command is about to read, and no write follows a link
# planted in a run directory.
"$BIN" collect --heuristic least-loaded --episodes 1 --agents-per-rank 4 --envs-per-rank 1 \
  --quiet --run-dir ds > /dev/null
cp -a ds dsc
expect_error "--force over the dataset it reads" 2 "--force would remove 'dsc/.*', but this command reads --dataset 'dsc'" \
  -- "$BIN" train --algo bc --dataset dsc --run-dir dsc --force --agents-per-rank 4 \
  --envs-per-rank 1 --iterations 2 --no-eval-after --offline-minibatch 64
[ -f dsc/trajectories/segment-000.h5 ] || fail "the refused --force removed the dataset"
cp -a run initrun
expect_error "--force over the run --init-from reads" 2 "this command reads --init-from 'initrun'" \
  -- mpi 2 "$BIN" "${ARGS[@]}" --iterations 2 --init-from initrun --run-dir initrun --force
[ -f initrun/model-rank-0.pt ] || fail "the refused --force removed the model"
pass "--force refuses to remove the inputs of its own command"
echo "precious" > p.txt
mkdir -p planted
ln -s ../p.txt planted/.lock-rank-0
expect_error "a lock file planted as a link" 2 "planted/.lock-rank-0' is a symbolic link to '../p.txt'" \
  -- mpi 2 "$BIN" "${ARGS[@]}" --iterations 2 --run-dir planted
mpi 2 "$BIN" "${ARGS[@]}" --iterations 2 --checkpoint-every 1 --no-eval-after --run-dir linked > /dev/null
ln -sf ../p.txt linked/metrics.csv
expect_error "a resume over a linked metrics.csv" 2 "linked/metrics.csv' is a symbolic link" \
  -- mpi 2 "$BIN" train --resume linked --iterations 3
mkdir -p evlinks
ln -s ../p.txt evlinks/eval.csv
expect_error "an evaluation table planted as a link" 2 "evlinks/eval.csv' is a symbolic link" \
  -- mpi 2 "$BIN" eval --model run --eval-episodes 1 --out evlinks
[ "$(cat p.txt)" = "precious" ] || fail "a write followed a planted link: p.txt is now $(cat p.txt)"
pass "no write follows a link planted in a run or output directory"
