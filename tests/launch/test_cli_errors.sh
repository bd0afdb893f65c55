#!/usr/bin/env bash
# Bad input gets one clear message from one rank and a non-zero exit, never a hang; a rank that
# fails mid-run aborts the whole job with its message.
source "$(dirname "$0")/common.sh" "$@"
cd "$WORK"

expect_error "agent count mismatch (2 ranks)" 2 "defines 4 data centers but the run has 2 agents" -- \
  mpi 2 "$BIN" train --iterations 1
expect_error "negative capacity" 2 "gpus: site DE-LU must be in \\[1, 1000000\\], got -4" -- \
  mpi 2 "$BIN" train --agents-per-rank 2 --gpus 64,-4,32,48
expect_error "aset: cluster count mismatch (2 ranks)" 2 "defines 4 edge clusters but the run has 2 agents" -- \
  mpi 2 "$BIN" train --env aset --iterations 1
expect_error "aset: per-class list of the wrong length" 2 "deadline-ms has 2 values but --classes has 4" -- \
  "$BIN" train --env aset --agents-per-rank 4 --deadline-ms 10,20
expect_error "dqn: warmup larger than the buffer" 2 "dqn-warmup must be between" -- \
  "$BIN" train --env aset --algo dqn --agents-per-rank 4 --dqn-buffer 1000 --dqn-warmup 5000
printf 'model,gpu\nx,y\n' > badprofile.csv
expect_error "lstcb: malformed batch profile file" 2 "badprofile.csv: expected the header" -- \
  "$BIN" train --env lstcb --agents-per-rank 4 --profile-file badprofile.csv
expect_error "tsdqn on an env without a long/short action" 2 "tsdqn needs an env with a long and a short action head" -- \
  "$BIN" train --env aset --algo tsdqn --agents-per-rank 4 --iterations 1
expect_error "per-target actor on an env without targets" 2 "actor targets needs an env with a targeted action space" -- \
  mpi 2 "$BIN" train --env aset --agents-per-rank 2 --actor targets --iterations 1
expect_error "neighbourhood reward on an env without targets" 2 "team-scope targets needs an env with a targeted action space" -- \
  "$BIN" train --env aset --agents-per-rank 4 --team-scope targets --iterations 1
expect_error "more neighbours than sites" 2 "site-neighbours must be in \\[0, 3\\] with 4 agents, got 4" -- \
  "$BIN" train --agents-per-rank 4 --site-neighbours 4 --iterations 1
expect_error "ES with an odd number of env copies" 2 "envs-per-rank must be a multiple of 2, got 3" -- \
  mpi 2 "$BIN" train --algo es --agents-per-rank 2 --envs-per-rank 3 --iterations 1
expect_error "zero time slot" 2 "slot-minutes must divide 60" -- \
  "$BIN" train --agents-per-rank 4 --slot-minutes 0
printf 'iterations = 2\nagents-per-rank = 4\nlr_actr = 0.1\n' > typo.toml
expect_error "misspelled config key" 2 "unknown config key 'lr_actr'.*did you mean 'lr-actor'" -- \
  mpi 2 "$BIN" train --config typo.toml
# Malformed TOML: file, line and column from the TOML parser, exit 2, nothing trained.
bad_toml() {
  printf "$2" > bad.toml
  expect_error "config file: $1" 2 "$3" -- "$BIN" train --config bad.toml --agents-per-rank 4 --run-dir badtoml
  [ ! -e badtoml/metrics.csv ] || fail "config file: $1: a run started"
}
bad_toml "a key without a value" 'iterations =\n' "bad.toml:1:13: not valid TOML: .*expected value"
bad_toml "an unterminated string" 'run-dir = "/tmp/x\n' "bad.toml:1:18: not valid TOML"
bad_toml "an unterminated array" 'gpus = [64, 48\n' "bad.toml:1:16: not valid TOML: .*array"
bad_toml "a section given twice" '[run]\nseed = 1\n[run]\nseed = 2\n' "bad.toml:3:1: not valid TOML: .*redefine existing table 'run'"
bad_toml "a key given twice" 'seed = 1\nseed = 2\n' "bad.toml:2:.*redefine existing integer 'seed'"
bad_toml "an unquoted date" 'trace-start = 2023-01-01T00:00:00\n' "write dates and times as strings"
head -c 300 "$BIN" > binary.toml
expect_error "a binary file as config" 2 "binary.toml:1:[0-9]*: not valid TOML" -- "$BIN" train --config binary.toml
expect_error "a missing config file" 2 "File does not exist: nowhere.toml" -- "$BIN" train --config nowhere.toml
expect_error "a directory as config file" 2 "File is actually a directory" -- "$BIN" train --config .
# Command-line typos: one line, exit 2 (not CLI11's 109), the nearest option.
expect_error "a misspelled flag" 2 "not expected: .*--lr-actr.*(did you mean --lr-actor?)" -- \
  "$BIN" train --lr-actr 0.1
expect_error "a value of the wrong type" 2 "Could not convert: --iterations = abc" -- \
  "$BIN" train --iterations abc
expect_error "a negative seed" 2 "seed: '-1' is not an integer in \\[0, 9223372036854775807\\]" -- "$BIN" train --seed -1
expect_error "a job mix that does not sum to 1" 2 "type-mix are probabilities and must sum to 1, got 0.7" -- \
  "$BIN" train --agents-per-rank 4 --type-mix 0.5,0.1,0.1
expect_error "an impossible UTC offset" 2 "utc-offsets: site JP-TK must be in \[-12, 14\], got 30" -- \
  "$BIN" train --agents-per-rank 4 --utc-offsets -8,1,8,30
printf 'agents-per-rank = "many"\n' > badval.toml
expect_error "bad config value" 2 "bad value for 'agents-per-rank'" -- "$BIN" train --config badval.toml
printf 'Datetime,Price (USD/MWh)\n2023-01-01 00:00:00,1\n2023-01-01 03:00:00,2\n' > gap.csv
expect_error "trace with a gap" 2 "gap.csv:3: expected hourly timestamps" -- \
  mpi 2 "$BIN" train --agents-per-rank 2 --price-files gap.csv,gap.csv,gap.csv,gap.csv
printf 'Datetime,Price (USD/MWh)\n2023-01-01 00:00:00,1\n2023-01-01 01:00:00,2\n2023-01-01 02:00:00,2\n' > short.csv
expect_error "trace shorter than an episode" 2 "short.csv holds 3 hours, shorter than one episode" -- \
  mpi 2 "$BIN" train --agents-per-rank 2 --price-files short.csv,short.csv,short.csv,short.csv
expect_error "trace that does not cover --trace-start" 2 "short.csv covers 2023-01-01 00:00:00 to 2023-01-01 02:00:00 UTC; --trace-start 2024-06-01" -- \
  "$BIN" train --agents-per-rank 4 --episode-slots 8 --price-files short.csv,short.csv,short.csv,short.csv --trace-start "2024-06-01 00:00"
printf 'Datetime,Cost\n2023-01-01 00:00:00,1\n' > nocol.csv
expect_error "trace with a missing column" 2 "nocol.csv.*not a price CSV" -- \
  "$BIN" train --agents-per-rank 4 --price-files nocol.csv,nocol.csv,nocol.csv,nocol.csv
printf 'Datetime,Price (USD/MWh)\n2023-01-01 00:00:00,1\n2023-13-45 99:00:00,2\n' > badts.csv
expect_error "unparsable timestamp" 2 "badts.csv:3: unparsable timestamp" -- \
  mpi 2 "$BIN" train --agents-per-rank 2 --price-files badts.csv,badts.csv,badts.csv,badts.csv
printf 'Datetime,Price (USD/MWh)\n2023-01-01 00:00:00,1\n2023-01-01 01:00:00,nan\n' > nanv.csv
expect_error "NaN in a trace" 2 "nanv.csv:3" -- \
  "$BIN" train --agents-per-rank 4 --price-files nanv.csv,nanv.csv,nanv.csv,nanv.csv
expect_error "NaN reward weight" 2 "w-carbon must be in \[-1000000, 1000000\], got nan" -- \
  mpi 2 "$BIN" train --agents-per-rank 2 --w-carbon nan
expect_error "a reward weight beyond float range" 2 "w-cost must be in \[-1000000, 1000000\], got 1e+308" -- \
  mpi 2 "$BIN" train --agents-per-rank 2 --w-cost 1e308
# Non-finite numbers during the run: the first one stops it, named, before any model is saved.
printf 'Datetime,Price (USD/MWh)\n2023-01-01 00:00:00,1e308\n' > huge.csv
for h in $(seq 1 400); do printf '2023-01-%02d %02d:00:00,1e308\n' $((1 + h / 24)) $((h % 24)); done >> huge.csv
expect_error "a trace value that overflows the reward" 2 "error on rank 0 of 1: the env gave agent 0 a non-finite reward (-inf) at iteration 1, step 1, env copy 0 (site US-CAL-CISO near .*largest price 1e+308 at huge.csv:[0-9]*)" -- \
  "$BIN" train --agents-per-rank 4 --price-files huge.csv,huge.csv,huge.csv,huge.csv --trace-days 10 --max-price 1e308 --run-dir huge
[ ! -e huge/model-rank-0.pt ] || fail "a run with an infinite reward saved a model"
expect_error "--trace-days beyond the trace" 2 "huge.csv ends at 2023-01-17 16:00:00, but --trace-days 30 from --trace-start 2023-01-01 00:00:00 starts episodes up to 2023-01-30 23:00:00: give --trace-days 16 or less" -- \
  "$BIN" train --agents-per-rank 4 --price-files huge.csv,huge.csv,huge.csv,huge.csv --trace-days 30
expect_error "a learning rate beyond 1" 2 "lr-actor must be in (0, 1\], got 1e+308" -- \
  "$BIN" train --agents-per-rank 4 --iterations 3 --lr-actor 1e308 --run-dir hugelr
[ ! -e hugelr ] || fail "a refused learning rate created the run directory"
expect_error "an update that diverges" 2 "mappo's update at iteration 2 gave a non-finite policy_loss" -- \
  env MARLSCHED_NAN_AT=0:2 "$BIN" train --agents-per-rank 4 --iterations 3 --run-dir hugelr
[ ! -e hugelr/model-rank-0.pt ] || fail "a run with a NaN loss saved a model"
expect_error "NaN learning rate" 2 "lr-actor must be in (0, 1\], got nan" -- \
  "$BIN" train --agents-per-rank 4 --lr-actor nan
expect_error "unknown device" 2 "device must be cpu, cuda or cuda:N, got 'gpu'" -- \
  mpi 2 "$BIN" train --agents-per-rank 2 --replicate-sites --device gpu
if ! ldd "$BIN" | grep -q libtorch_cuda; then
  # A libtorch without CUDA (Debian's): the request is refused up front, from one rank.
  expect_error "CUDA device without CUDA" 2 "device cuda: this libtorch has no CUDA support or sees no GPU" -- \
    mpi 2 "$BIN" train --agents-per-rank 2 --replicate-sites --device cuda
fi
expect_error "negative watchdog" 2 "watchdog-s must be >= 0" -- \
  "$BIN" train --agents-per-rank 4 --watchdog-s -1
expect_error "missing workload file" 2 "cannot open" -- \
  "$BIN" train --agents-per-rank 4 --workload alibaba --workload-file nothere.csv

# Mismatches that used to pass silently or crash (issue 22).
expect_error "replicated sites over fewer agents" 2 "cycles 4 sites over the run's agents, but the run has only 3 agents" -- \
  mpi 3 "$BIN" train --replicate-sites --iterations 1 --run-dir "$WORK/three"
[ ! -e "$WORK/three/config.toml" ] || fail "a refused run wrote config.toml"
expect_error "gen-data with negative days" 2 "--days must be in \[1, 36600\], got -1" -- \
  "$BIN" gen-data --days -1 --out "$WORK/gen"
expect_error "gen-data with zero days" 2 "--days must be in \[1, 36600\], got 0" -- "$BIN" gen-data --days 0 --out "$WORK/gen"
[ ! -e "$WORK/gen" ] || fail "a refused gen-data wrote files"
expect_error "aset arrival rate that overflows" 2 "edge-rates 1e+308/s .* allows at most 1e6" -- \
  "$BIN" train --env aset --agents-per-rank 4 --edge-rates 1e308 20 20 20
expect_error "aset decision interval of 1e-300 ms" 2 "decision-ms must be in \[0.001, 3600000\]" -- \
  "$BIN" train --env aset --agents-per-rank 4 --decision-ms 1e-300

# CLI11 parse errors: printed once (rank 0), non-zero.
out=$(timeout 60 "$MPIEXEC" -n 2 --oversubscribe "$BIN" train --no-such-flag 2>&1) && fail "unknown flag accepted"
[ "$(grep -c "no-such-flag" <<<"$out")" -eq 1 ] || fail "unknown flag: expected one message: $out"
pass "unknown flag"

# One rank throws in the middle of training: the job aborts within seconds, naming the rank.
start=$(date +%s)
rc=0
out=$(MARLSCHED_FAIL_AT=1:2 timeout 120 "$MPIEXEC" -n 2 --oversubscribe "$BIN" train \
      --agents-per-rank 2 --iterations 5 --run-dir "$WORK/fault" --no-eval-after --quiet 2>&1) || rc=$?
elapsed=$(( $(date +%s) - start ))
[ "$rc" -ne 0 ] || fail "injected fault: exit code 0"
[ "$rc" -ne 124 ] || fail "injected fault: job hung"
grep -q "marlsched: error on rank 1 of 2: injected fault" <<<"$out" || fail "fault message: $out"
[ "$(grep -c "marlsched: error" <<<"$out")" -eq 1 ] || fail "fault: more than one error line: $out"
[ "$elapsed" -lt 60 ] || fail "fault: took ${elapsed}s to abort"
pass "rank failure aborts the job (exit $rc, ${elapsed}s)"
# The same at 4 ranks, the last rank failing in the middle of a rollout (peers in a collective).
rc=0
out=$(MARLSCHED_FAIL_AT=3:2:50 timeout 120 "$MPIEXEC" -n 4 --oversubscribe "$BIN" train \
      --iterations 5 --run-dir "$WORK/fault4" --no-eval-after --quiet 2>&1) || rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "4-rank fault: exit code $rc"
grep -q "marlsched: error on rank 3 of 4: injected fault" <<<"$out" || fail "4-rank fault message: $out"
pass "rank failure at 4 ranks aborts the job (exit $rc)"
echo "all CLI error checks passed"
