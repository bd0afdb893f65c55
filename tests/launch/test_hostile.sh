#!/usr/bin/env bash
# The second hostile trial (issue 42): each class of input that crashed, ran without a bound or
# gave exit 0 on nonsense is refused with one line and exit 2, before anything is written. One
# section per class, with more than the one instance the trial reported. (Classes 1-3, lost
# data, are in test_run_dirs.sh and test_checkpoint.sh.)
source "$(dirname "$0")/common.sh" "$@"
cd "$WORK"
PY=/usr/bin/python3
A=(--agents-per-rank 4 --envs-per-rank 1 --eval-episodes 1)
O=(--iterations 2 --no-eval-after --offline-minibatch 64)
have_h5py=0
"$PY" -c 'import h5py, numpy' 2> /dev/null && have_h5py=1

# A dataset to damage: two episodes of least-loaded.
"$BIN" collect --heuristic least-loaded --episodes 2 "${A[@]}" --quiet --run-dir ll > /dev/null
SEG=ll/trajectories/segment-000.h5

# 4 and 9: dataset values out of the env's range, and dataset defects.
if [ "$have_h5py" -eq 1 ]; then
  edit() {  # edit NAME PYTHON: a copy of the dataset with f (h5py, r+) edited by PYTHON
    cp "$SEG" "$1.h5"
    "$PY" -c "import h5py, numpy as np
with h5py.File('$1.h5', 'r+') as f:
    $2"
  }
  edit act99 "f['actions'][3, 0, 1] = 99"
  for algo in bc awr cql; do
    expect_error "$algo: an action beyond the action count" 2 "act99.h5: actions row 3 (element 1 of the row) holds action 99, but this env has 8 actions (0 to 7)" \
      -- "$BIN" train --algo "$algo" --dataset act99.h5 "${A[@]}" "${O[@]}" --run-dir "r-$algo"
  done
  expect_error "an action beyond the action count at 2 ranks" 2 "act99.h5: actions row 3" \
    -- mpi 2 "$BIN" train --algo bc --dataset act99.h5 --agents-per-rank 2 --envs-per-rank 1 "${O[@]}" --run-dir r-bc2
  edit actneg "f['actions'][0, 0, 0] = -1"
  expect_error "a negative action" 2 "holds action -1" -- "$BIN" train --algo bc --dataset actneg.h5 "${A[@]}" "${O[@]}" --run-dir r1
  edit obsnan "f['observations'][5, 0, 2, 3] = np.nan"
  expect_error "a NaN observation" 2 "obsnan.h5: observations row 5 .* is not finite" -- "$BIN" train --algo bc --dataset obsnan.h5 "${A[@]}" "${O[@]}" --run-dir r2
  edit obsbig "f['next_observations'][7, 0, 0, 0] = 3e38"
  expect_error "an observation of 3e38" 2 "obsbig.h5: next_observations row 7 .* beyond the observations an env writes" -- "$BIN" train --algo awr --dataset obsbig.h5 "${A[@]}" "${O[@]}" --run-dir r3
  edit rewnan "f['rewards'][2, 0, 0] = np.nan"
  expect_error "cql: a NaN reward names the dataset" 2 "rewnan.h5: rewards row 2 .* is not finite" -- "$BIN" train --algo cql --dataset rewnan.h5 "${A[@]}" "${O[@]}" --run-dir r4
  edit term7 "f['terminations'][4, 0] = 7"
  expect_error "a termination flag of 7" 2 "term7.h5: terminations row 4 .* holds 7 (a flag is 0 or 1)" -- "$BIN" train --algo bc --dataset term7.h5 "${A[@]}" "${O[@]}" --run-dir r5
  edit noend "f['terminations'][:] = 0; f['truncations'][:] = 0"
  expect_error "a file that ends no episode" 2 "noend.h5: world 0 of its 192 rows ends no episode" -- "$BIN" train --algo bc --dataset noend.h5 "${A[@]}" "${O[@]}" --run-dir r6
  # Extended past its written rows: 'rows' says 96, the datasets hold 192. Only the 96 rows
  # the writer declares are read: the rows beyond would be zeros of a file cut mid-write.
  edit extended "f.attrs['rows'] = 96; f.attrs['complete'] = 0; f['actions'][96:] = 99"
  "$BIN" train --algo bc --dataset extended.h5 "${A[@]}" "${O[@]}" --run-dir r7 > r7.log 2>&1 \
    || fail "a dataset with undeclared rows beyond its 'rows' was refused: $(cat r7.log)"
  edit overclaim "f.attrs['rows'] = 500"
  expect_error "a 'rows' attribute beyond the datasets" 2 "overclaim.h5: its 'rows' attribute says 500 rows were written, but its datasets hold 192" \
    -- "$BIN" train --algo bc --dataset overclaim.h5 "${A[@]}" "${O[@]}" --run-dir r8
  for r in r1 r2 r3 r4 r5 r6 r8 r-bc r-awr r-cql; do [ ! -e "$r/model-rank-0.pt" ] || fail "$r saved a model"; done
  pass "datasets: values out of range and defects are refused with the file and the row"
else
  echo "skip: datasets (classes 4, 9): Debian's python3-h5py and python3-numpy are not installed"
fi

# 5: --init-from a run with other network sizes.
"$BIN" train "${A[@]}" --iterations 1 --no-eval-after --quiet --run-dir base > /dev/null
expect_error "--init-from with other actor sizes" 2 "base/model-rank-0.pt' holds actor0.fc0.weight of shape \[64, 34\], but this run builds \[32, 34\]" \
  -- "$BIN" train "${A[@]}" --iterations 1 --actor-hidden 32,32 --init-from base --run-dir w1
expect_error "--init-from with other critic sizes" 2 "holds critic.fc0.weight of shape" \
  -- "$BIN" train "${A[@]}" --iterations 1 --critic-hidden 32,32 --init-from base --run-dir w2
expect_error "--init-from with one layer fewer" 2 "base/model-rank-0.pt' holds actor0.fc1.*, which this run's network does not have" \
  -- "$BIN" train "${A[@]}" --iterations 1 --actor-hidden 64 --init-from base --run-dir w3

# 6: options that would fail inside a library.
expect_error "a chunk beyond HDF5's 4 GiB" 2 "traj-chunk-steps 100000000 makes a chunk of .* HDF5 allows at most 4 GiB: give at most [0-9]*" \
  -- "$BIN" train "${A[@]}" --iterations 1 --traj-every 1 --traj-chunk-steps 100000000 --run-dir c1
[ ! -e c1 ] || fail "a refused chunk size created the run directory"

# 7 and 8: sizes without a bound, and finite but absurd physical inputs.
expect_error "arrivals of 1e9 an hour" 2 "arrival-rates: site US-CAL-CISO must be in \[0, 100000\]" \
  -- "$BIN" train "${A[@]}" --arrival-rates 1e9,1,1,1
expect_error "arrivals of 1e308 an hour" 2 "must be in \[0, 100000\]" -- "$BIN" train "${A[@]}" --arrival-rates 1e308,1,1,1
expect_error "agents per rank of 2^31 - 1" 2 "agents-per-rank must be in \[1, 65536\], got 2147483647" \
  -- "$BIN" train --agents-per-rank 2147483647 --replicate-sites
expect_error "every site a target at 8192 agents" 2 "8192 agents with --site-neighbours 0 .* give --site-neighbours K" \
  -- "$BIN" train --agents-per-rank 8192 --replicate-sites
expect_error "env copies per rank beyond the bound" 2 "envs-per-rank must be in \[1, 65536\]" -- "$BIN" train --agents-per-rank 4 --envs-per-rank 100000000
expect_error "a rollout larger than the machine" 2 "needs at least .* GiB per rank for its rollouts, more than the" \
  -- "$BIN" train --agents-per-rank 4096 --envs-per-rank 60000 --site-neighbours 4 --replicate-sites
expect_error "2e9 GPUs at a site" 2 "gpus: site US-CAL-CISO must be in \[1, 1000000\], got 2000000000" \
  -- "$BIN" train "${A[@]}" --gpus 2000000000,48,32,48
expect_error "a peak at hour 99" 2 "diurnal-peak-hour must be in \[0, 24), got 99" -- "$BIN" train "${A[@]}" --diurnal-peak-hour 99
expect_error "a PUE of 50" 2 "pue: site US-CAL-CISO must be in \[1, 5\], got 50" -- "$BIN" train "${A[@]}" --pue 50,1.3,1.5,1.4
expect_error "episodes of 1e9 slots" 2 "episode-slots must be in \[1, 100000\]" -- "$BIN" train "${A[@]}" --episode-slots 1000000000
expect_error "eval episodes of 2^31 - 1" 2 "eval-episodes must be in \[1, 1048576\], got 2147483647" -- "$BIN" train --agents-per-rank 4 --eval-episodes 2147483647
printf 'Datetime,Price (USD/MWh)\n' > p1e39.csv
printf 'Datetime (UTC),Country,Zone Name,Zone Id,Carbon Intensity gCO2eq/kWh (direct),Carbon Intensity gCO2eq/kWh (LCA)\n' > c1e39.csv
for h in $(seq 0 400); do
  d=$(printf '2023-01-%02d %02d:00:00' $((1 + h / 24)) $((h % 24)))
  printf '%s,%s\n' "$d" "$([ "$h" -eq 7 ] && echo 1e39 || echo 80)" >> p1e39.csv
  printf '%s,US,X,US-CAL-CISO,%s,%s\n' "$d" 200 "$([ "$h" -eq 9 ] && echo 1e39 || echo 250)" >> c1e39.csv
done
expect_error "a price of 1e39" 2 "p1e39.csv:9: 1e+39 USD/MWh is beyond the plausible range of prices (--max-price 100000)" \
  -- "$BIN" train "${A[@]}" --price-files p1e39.csv,p1e39.csv,p1e39.csv,p1e39.csv --trace-days 10 --run-dir t1
expect_error "a carbon intensity of 1e39" 2 "c1e39.csv:11: 1e+39 gCO2eq/kWh is beyond the plausible range of carbon intensities (--max-carbon 5000)" \
  -- "$BIN" train "${A[@]}" --carbon-files c1e39.csv,c1e39.csv,c1e39.csv,c1e39.csv --trace-days 10 --run-dir t2
sed 's/,1e39$/,1e30/' p1e39.csv > p1e30.csv
expect_error "a price of 1e30" 2 "p1e30.csv:9: 1e+30 USD/MWh" \
  -- "$BIN" train "${A[@]}" --price-files p1e30.csv,p1e30.csv,p1e30.csv,p1e30.csv --trace-days 10 --run-dir t3
[ ! -e t1 ] && [ ! -e t2 ] && [ ! -e t3 ] || fail "a refused trace created a run directory"
# A step that does not end (a hang injected at iteration 2): the first SIGTERM waits for it, a
# second one ends the process at once.
MARLSCHED_HANG_AT=0:2 "$BIN" train "${A[@]}" --iterations 5 --no-eval-after --run-dir hang > hang.log 2>&1 &
hung=$!
for _ in $(seq 300); do [ -f hang/metrics.csv ] && [ "$(wc -l < hang/metrics.csv)" -ge 2 ] && break; sleep 0.1; done
sleep 1
kill -TERM "$hung"
sleep 1
kill -0 "$hung" 2> /dev/null || fail "the first SIGTERM ended a run inside a step"
kill -TERM "$hung"
rc=0
timeout 20 tail --pid="$hung" -f /dev/null || fail "a second SIGTERM did not end the process"
wait "$hung" || rc=$?
[ "$rc" -eq 143 ] || fail "a second SIGTERM: exit $rc, expected 143: $(cat hang.log)"
grep -q "a second stop signal before the run reached a safe point" hang.log || fail "no message: $(cat hang.log)"
pass "sizes and physical inputs are bounded"

# 10: seeds and names that must round-trip through config.toml.
expect_error "a seed of 2^64" 2 "seed: '18446744073709551616' is not an integer in \[0, 9223372036854775807\]" -- "$BIN" train --seed 18446744073709551616
expect_error "an eval seed of 2^63" 2 "eval-seed: '9223372036854775808' is not an integer" -- "$BIN" train --eval-seed 9223372036854775808
expect_error "a negative seed" 2 "seed: '-1' is not an integer" -- "$BIN" train --seed -1
"$BIN" train "${A[@]}" --iterations 1 --checkpoint-every 1 --no-eval-after --quiet \
  --seed 9223372036854775807 --run-dir "$(printf 'nl\nrun')" > /dev/null || fail "the largest seed and a newline in the run directory did not train"
"$BIN" train --resume "$(printf 'nl\nrun')" --iterations 2 --quiet > /dev/null \
  || fail "a run with the largest seed and a newline in its directory name did not resume from its own config.toml"
expect_error "a run directory that is not UTF-8" 2 "run-dir: the value is not valid UTF-8" -- "$BIN" train --run-dir "$(printf 'bad\xffdir')"
pass "seeds and names round-trip through config.toml"

# 11: config ambiguity.
printf '[a]\nseed = 1\n[b]\nseed = 2\n' > twotables.toml
expect_error "a key under an unknown table" 2 "twotables.toml:1: unknown table \[a\]" -- "$BIN" train --config twotables.toml
printf '[run]\nseed = 1\n[eval]\nseed = 2\n' > twice.toml
expect_error "one option in two tables" 2 "twice.toml:4: 'eval.seed' sets seed again (line 2 sets it as 'run.seed')" -- "$BIN" train --config twice.toml
printf 'lr_actor = 0.001\nlr-actor = 0.002\n' > spelled.toml
expect_error "one option in two spellings" 2 "spelled.toml:2: 'lr-actor' sets lr-actor again (line 1" -- "$BIN" train --config spelled.toml
printf '[geodc]\ngpus = [8, 8, 8, 8]\n[algo.mappo]\nlr-actor = 0.001\n' > tables.toml
"$BIN" train --config tables.toml --print-config > tables.out || fail "known tables were refused"
grep -q '^gpus = \[8, 8, 8, 8\]' tables.out || fail "a key under [geodc] was not applied"
pass "config tables and repeated options"

# 12: options without effect.
expect_error "--dataset with an online learner" 2 "dataset is read by the offline learners (.*bc.*); --algo mappo learns online" \
  -- "$BIN" train "${A[@]}" --dataset ll
expect_error "--workload-file without --workload alibaba" 2 "workload-file is read only with --workload alibaba" \
  -- "$BIN" train "${A[@]}" --workload-file nowhere.csv
expect_error "--trace-repair none with a repair" 2 "trace-repair: 'none' (strict reading) does not go with repairs" \
  -- "$BIN" train "${A[@]}" --trace-repair none,drop-duplicates
expect_error "a flag taken as a site name" 2 "sites: '--run-dir' looks like an option" -- "$BIN" train --sites --run-dir runs/x
sed 's/US,X,US-CAL-CISO/DE,X,DE-LU/; s/,1e39$/,250/' c1e39.csv > de.csv
"$BIN" train "${A[@]}" --iterations 1 --no-eval-after --carbon-files de.csv,de.csv,de.csv,de.csv --trace-days 10 --run-dir zone > zone.log 2>&1 \
  || fail "a zone mismatch stopped the run: $(cat zone.log)"
grep -q "warning: de.csv holds zone DE-LU, but it is given for site US-CAL-CISO" zone.log || fail "no zone warning: $(cat zone.log)"
pass "options without effect are refused, a zone mismatch is warned about"

# 14: messages that name the real cause.
mpi 2 "$BIN" train --agents-per-rank 2 --envs-per-rank 1 --iterations 2 --checkpoint-every 1 --no-eval-after --quiet --run-dir two > /dev/null
expect_error "a 2-rank run resumed at 1 rank" 2 "resume: 'two' was trained by 2 ranks .* resume it with mpirun -n 2" \
  -- "$BIN" train --resume two --iterations 3
printf 'Datetime,Price (USD/MWh)\n' > swapped.csv
for h in 0 1 3 2 4; do printf '2023-01-01 %02d:00:00,80\n' "$h" >> swapped.csv; done
expect_error "two swapped trace rows" 2 "swapped.csv:4: rows out of time order: 2023-01-01 03:00:00 comes before the earlier 2023-01-01 02:00:00 at line 5; sort the file by time" \
  -- "$BIN" train "${A[@]}" --price-files swapped.csv,swapped.csv,swapped.csv,swapped.csv --trace-repair fill-gaps
# A second --auto-resume while a resume runs: refused as busy, not called damaged.
mpi 2 "$BIN" train --resume two --iterations 400 --traj-every 1 --quiet > live.log 2>&1 &
live=$!
for _ in $(seq 600); do [ "$(wc -l < two/metrics.csv)" -ge 5 ] && break; sleep 0.1; done
expect_error "--auto-resume racing a live resume" 2 "in use by another marlsched job" \
  -- mpi 2 "$BIN" train --agents-per-rank 2 --envs-per-rank 1 --iterations 400 --run-dir two --auto-resume
"$BIN" export two --out live-policy.pt > export.log 2>&1 || true
grep -q "warning: 'two' is in use by a running training" export.log || fail "export of a live run says nothing: $(cat export.log)"
wait "$live" || fail "the live resume failed: $(cat live.log)"
pass "messages name the real cause"

# 15: aggregates.
"$BIN" train "${A[@]}" --iterations 1 --quiet --run-dir s1 > /dev/null
expect_error "compare of one run twice" 2 "'s1' is given twice" -- "$BIN" compare s1 s1 --out cmp
expect_error "compare of a run and a link to it" 2 "is given twice" -- bash -c "ln -sfn s1 s1link && '$BIN' compare s1 s1link --out cmp"
cp -a s1 s2
sed -i '2s/,[^,]*$/,1e308/' s2/eval-episodes.csv
expect_error "a utility of 1e308" 2 "s2/eval-episodes.csv:2: utility 1e308 is not a number within ±1e15" -- "$BIN" compare s1 s2 --out cmp
expect_error "a baseline named twice" 2 "baselines names 'least-loaded' twice" -- "$BIN" baselines "${A[@]}" --baselines least-loaded,least-loaded
pass "aggregates refuse duplicates and absurd values"

# 16: a zip bomb as a policy.
if [ "$have_h5py" -eq 1 ]; then
  "$BIN" export s1 --out s1.pt > /dev/null
  "$PY" - <<'PY'
import zipfile
src = zipfile.ZipFile("s1.pt")
with zipfile.ZipFile("bomb.pt", "w") as out:
    for info in src.infolist():
        out.writestr(info, src.read(info.filename))
    out.writestr("s1/data/bomb", b"\0" * (64 << 20), compress_type=zipfile.ZIP_DEFLATED)
PY
  expect_error "a zip bomb as a policy" 2 "bomb.pt': its record 's1/data/bomb' inflates to 67108864 bytes from" \
    -- "$BIN" eval --policy bomb.pt --eval-episodes 1
  pass "a compressed record is refused before it is inflated"
fi

# Also: a misspelled subcommand, and std::filesystem's own texts.
expect_error "a misspelled subcommand" 2 "did you mean train?" -- "$BIN" trian
expect_error "gen-data into a file" 2 "cannot use '.*notadir/x'.*Not a directory\|cannot create directory" -- bash -c "touch notadir && '$BIN' gen-data --out notadir/x"
pass "the trial's remaining messages"
