#!/usr/bin/env bash
# marlsched on a real Slurm: munged, slurmctld and slurmd (Debian's slurm-wlm) started by this
# test on this host, state and spool in a temp directory, torn down at exit. Jobs are written
# and submitted by `marlsched slurm` and launch their ranks with `srun --mpi=pmix`:
#   1. a 2-rank training job completes;
#   2. a job sent the warning signal (as --signal=B:USR1 delivers it, to the batch shell)
#      checkpoints, requeues itself, resumes and ends with the uninterrupted run's metrics and
#      trajectories exactly;
#   3. a job array of 3 small runs (a seed sweep), each in its own run directory;
#   4. an evaluation job of the trained policy.
source "$(dirname "$0")/../launch/common.sh" "$@"
source "$(dirname "$0")/cluster.sh"
cd "$WORK"
for c in munged slurmctld slurmd sbatch; do
  command -v "$c" > /dev/null || fail "$c is missing (launch/install-deps.sh installs slurm-wlm and munge)"
done
trap 'slurm_stop; rm -rf "$WORK"' EXIT
slurm_start "$WORK/slurm" 4 || fail "the local Slurm did not start"
PY=/usr/bin/python3
BASE=(--agents-per-rank 2 --envs-per-rank 2 --quiet --no-eval-after)
# Long enough (about 20 ms an iteration at 2 ranks) that the warning signal below reaches the
# job before it ends: at 30 iterations the job once finished between two polls.
ITER=300
ARGS=("${BASE[@]}" --iterations "$ITER")

job_id() { sed -n 's/^submitted job \([0-9_]*\):.*/\1/p' "$1"; }
job_field() { scontrol -o show job "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1; }

"$BIN" slurm "${ARGS[@]}" --run-dir dry --dry-run > dry.sbatch
grep -q '^#SBATCH --ntasks=2$' dry.sbatch || fail "dry run: no '--ntasks=2' in $(cat dry.sbatch)"
grep -q '^#SBATCH --signal=B:USR1@120$' dry.sbatch || fail "dry run: no warning signal"
grep -q 'srun --mpi=pmix' dry.sbatch || fail "dry run: ranks are not launched with srun --mpi=pmix"
grep -q -- 'srun --mpi=pmix .*--cpus-per-task=1 ' dry.sbatch ||
  fail "dry run: srun is not given the cores per task (since Slurm 22.05 it does not inherit them)"
"$BIN" slurm "${ARGS[@]}" --cpus-per-task 2 --run-dir dry2 --dry-run > dry2.sbatch
grep -q '^#SBATCH --cpus-per-task=2$' dry2.sbatch &&
  grep -q -- 'srun --mpi=pmix .*--cpus-per-task=2 ' dry2.sbatch &&
  grep -q -- '--threads 2' dry2.sbatch || fail "dry run with --cpus-per-task 2: $(cat dry2.sbatch)"
cmp dry.sbatch dry/job-train.sbatch || fail "the dry run printed another script than it wrote"
grep -q -- "--config $WORK/dry/job-train.toml" dry.sbatch && [ -f dry/job-train.toml ] ||
  fail "the dry run's script reads a config file it did not write"
ls dry/slurm-*.out > /dev/null 2>&1 && fail "the dry run submitted a job"
pass "marlsched slurm --dry-run writes and prints the script and its config, submits nothing (2 ranks derived from 4 sites / 2 agents per rank)"

# 1. A training job.
"$BIN" slurm "${ARGS[@]}" --run-dir straight > straight.sub
jid=$(job_id straight.sub)
[ -n "$jid" ] || fail "no job id: $(cat straight.sub)"
slurm_wait "$jid" 180 || fail "job $jid did not finish"
[ "$(job_field "$jid" JobState)" = COMPLETED ] || fail "job $jid: $(scontrol show job "$jid"); $(cat straight/slurm-*.out)"
[ "$(wc -l < straight/metrics.csv)" -eq $((ITER + 1)) ] || fail "straight: $(cat straight/slurm-*.out)"
grep -q "parameters identical on all ranks: yes" straight/slurm-"$jid".out || fail "no identity check in the job output"
pass "a 2-rank training job ran through sbatch + srun --mpi=pmix and completed"

# 2. Warning signal -> checkpoint -> requeue -> resume.
"$BIN" slurm "${ARGS[@]}" --run-dir pre > pre.sub
jid=$(job_id pre.sub)
for _ in $(seq 120); do
  [ -f pre/metrics.csv ] && [ "$(wc -l < pre/metrics.csv)" -ge 3 ] && break
  sleep 0.5
done
[ "$(wc -l < pre/metrics.csv)" -le "$ITER" ] || fail "the job finished before it could be signalled"
scancel --signal=USR1 --batch "$jid"
# Slurm holds a requeued batch job back for a while (BeginTime); release it once it is requeued.
for _ in $(seq 120); do
  [ "$(job_field "$jid" Restarts)" = 1 ] && [ "$(job_field "$jid" JobState)" = PENDING ] && break
  sleep 0.5
done
[ "$(job_field "$jid" Restarts)" = 1 ] || fail "the job did not requeue: $(scontrol show job "$jid"); $(cat pre/slurm-*.out)"
scontrol update JobId="$jid" StartTime=now
slurm_wait "$jid" 180 || fail "the requeued job did not finish"
out=pre/slurm-$jid.out
[ "$(job_field "$jid" JobState)" = COMPLETED ] || fail "requeued job: $(scontrol show job "$jid"); $(cat "$out")"
grep -q "SIGUSR1 received" "$out" || fail "the batch shell did not forward the signal: $(cat "$out")"
grep -q "requeueing job $jid" "$out" || fail "no requeue: $(cat "$out")"
grep -q "resuming from .*/pre/checkpoints/ckpt-" "$out" || fail "the requeued job did not resume: $(cat "$out")"
cmp straight/metrics.csv pre/metrics.csv || fail "metrics of the preempted run differ from the uninterrupted run"
"$PY" "$SRC/tests/io/check_trajectories.py" resumed straight pre
pass "warning signal: checkpoint, requeue (restart 1), resume; final metrics identical to the uninterrupted run"

# 3. A job array: a seed sweep of 3 runs.
printf -- '--seed 1\n--seed 2\n--seed 3\n' > seeds.txt
"$BIN" slurm "${BASE[@]}" --iterations 3 --kind sweep --sweep seeds.txt --run-dir sweep > sweep.sub
jid=$(job_id sweep.sub)
slurm_wait "$jid" 240 || fail "the array did not finish"
for t in 0 1 2; do
  [ "$(wc -l < "sweep/task-$t/metrics.csv")" -eq 4 ] || fail "array task $t: $(cat sweep/slurm-*_"$t".out)"
  grep -q "^seed = $((t + 1))$" "sweep/task-$t/config.toml" || fail "array task $t ran with the wrong seed"
done
cmp <(head -n 4 straight/metrics.csv) sweep/task-0/metrics.csv || fail "task 0 (seed 1) differs from the first iterations of the seed-1 run"
if cmp -s sweep/task-1/metrics.csv sweep/task-2/metrics.csv; then fail "seeds 2 and 3 gave identical runs"; fi
pass "a job array of 3 runs, each in its own run directory with its own seed"

# 4. Evaluation of the trained policy.
"$BIN" slurm --kind eval --model straight --eval-episodes 1 > eval.sub
jid=$(job_id eval.sub)
slurm_wait "$jid" 180 || fail "the eval job did not finish"
grep -q '^mappo' straight/eval.csv || fail "no eval table: $(cat straight/slurm-"$jid".out)"
pass "an evaluation job compared the trained policy with the baselines"

expect_error "sweep without a file" 2 "needs one of --sweep FILE and --seeds N" -- "$BIN" slurm --kind sweep --dry-run
"$BIN" slurm "${BASE[@]}" --kind sweep --seeds 3 --run-dir seeds --dry-run > seeds.sbatch
grep -q "^#SBATCH --array=0-2$" seeds.sbatch || fail "--seeds 3 is no 3-task array: $(cat seeds.sbatch)"
pass "marlsched slurm --kind sweep --seeds 3 makes a 3-task array"
expect_error "ranks that do not divide the sites" 2 "3 agents per rank do not divide" -- \
  "$BIN" slurm --agents-per-rank 3 --dry-run
printf -- '--seed 2\n--lr-actr 0.1\n' > typo.txt
printf -- '--seed 2\n--clip -1\n' > badvalue.txt
expect_error "sweep line with a misspelled flag" 2 "sweep line 2 ('--lr-actr 0.1'): .*did you mean --lr-actor" -- \
  "$BIN" slurm "${BASE[@]}" --kind sweep --sweep typo.txt --run-dir typo
expect_error "sweep line with a bad value" 2 "sweep line 2 ('--clip -1'): --clip must be positive" -- \
  "$BIN" slurm "${BASE[@]}" --kind sweep --sweep badvalue.txt --run-dir badvalue --dry-run
expect_error "a time limit Slurm does not know" 2 "'garbage' is not a Slurm time limit" -- \
  "$BIN" slurm "${BASE[@]}" --time garbage --dry-run
expect_error "zero nodes" 2 "nodes: Value 0 not in range" -- "$BIN" slurm "${BASE[@]}" --nodes 0 --dry-run
# Issue 42: sweep lines that give the script's own flags, and names that would break the script.
printf -- '--seed 2\n--run-dir elsewhere\n' > rundir.txt
printf -- '--threads 2\n' > threads.txt
expect_error "sweep line with --run-dir" 2 "sweep line 2 ('--run-dir elsewhere'): --run-dir is set by the job script for every task" -- \
  "$BIN" slurm "${BASE[@]}" --kind sweep --sweep rundir.txt --run-dir rundir --dry-run
expect_error "sweep line with --threads" 2 "sweep line 1 ('--threads 2'): --threads is set by the job script" -- \
  "$BIN" slurm "${BASE[@]}" --kind sweep --sweep threads.txt --run-dir threads --dry-run
expect_error "a job name with a newline" 2 "job-name 'x\\\\necho injected' must be one word of printable characters" -- \
  "$BIN" slurm "${BASE[@]}" --job-name "$(printf 'x\necho injected')" --run-dir inj --dry-run
expect_error "a partition with a space" 2 "partition 'a b' must be one word" -- \
  "$BIN" slurm "${BASE[@]}" --partition 'a b' --run-dir part --dry-run
expect_error "an account with a quote" 2 "account 'a\"b' must be one word" -- \
  "$BIN" slurm "${BASE[@]}" --account 'a"b' --run-dir acct --dry-run
[ ! -e typo ] && [ ! -e badvalue ] && [ ! -e rundir ] && [ ! -e threads ] && [ ! -e inj ] &&
  [ ! -e part ] || fail "a refused job wrote files"
pass "sweep lines, time limits and node counts are checked before anything is written or submitted"
