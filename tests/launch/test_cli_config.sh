#!/usr/bin/env bash
# The TOML config file and flags: the shipped default config equals the built-in defaults, a
# config file is applied, flags override it, and a run directory's config.toml reproduces it.
source "$(dirname "$0")/common.sh" "$@"
cd "$WORK"
"$BIN" train --print-config > builtin.toml
"$BIN" train --config "$SRC/launch/configs/default.toml" --print-config > shipped.toml
diff <(grep -v '^#' builtin.toml) <(grep -v '^#' shipped.toml) || fail "launch/configs/default.toml differs from the built-in defaults"
pass "default.toml == built-in defaults"
"$BIN" --version | grep -q "^BLAS: [A-Za-z]" || fail "--version names no BLAS: $("$BIN" --version)"
pass "--version names the BLAS"
# Every shipped example config parses, and its env and learner accept each other (a run of 0
# iterations builds both and stops; 4 agents, what the fixed-site configs define).
for cfg in "$SRC"/launch/configs/*.toml; do
  name=$(basename "$cfg" .toml)
  "$BIN" train --config "$cfg" --agents-per-rank 4 --iterations 0 --no-eval-after --quiet \
    --run-dir "cfg-$name" \
    > "cfg-$name.log" 2>&1 || fail "launch/configs/$name.toml: $(cat "cfg-$name.log")"
done
pass "every launch/configs/*.toml builds its env and learner"
printf '[run]\niterations = 7\nagents_per_rank = 4\n[env]\ngpus = [8, 8, 8, 8]\nshare-actor = false\n' > c.toml
"$BIN" train --config c.toml --iterations 9 --print-config > resolved.toml
grep -qx 'iterations = 9' resolved.toml || fail "flag did not override the file"
grep -qx 'agents-per-rank = 4' resolved.toml || fail "underscore key not applied"
grep -qx 'gpus = \[8, 8, 8, 8\]' resolved.toml || fail "array not applied"
grep -qx 'share-actor = false' resolved.toml || fail "bool not applied"
"$BIN" train --config resolved.toml --print-config | grep -v '^#' > again.toml
diff <(grep -v '^#' resolved.toml) again.toml || fail "printed config does not round-trip"
pass "config file, overrides and round trip"
# A choice (an enum in the config struct) is read from a flag and a config file by its name,
# printed back by its name, and refused, with the choices, for any other.
printf 'critic = "pooled"\nagents-per-rank = 4\n' > choice.toml
"$BIN" train --config choice.toml --actor targets --print-config > choice-resolved.toml
grep -qx 'critic = "pooled"' choice-resolved.toml || fail "choice from the file not applied"
grep -qx 'actor = "targets"' choice-resolved.toml || fail "choice from the flag not applied"
"$BIN" train --config choice-resolved.toml --print-config | grep -v '^#' > choice-again.toml
diff <(grep -v '^#' choice-resolved.toml) choice-again.toml || fail "a choice does not round-trip"
bad=$("$BIN" train --agents-per-rank 4 --critic poold --iterations 0 2>&1) && fail "--critic poold accepted"
grep -q "critic must be one of concat, pooled, got 'poold'" <<<"$bad" || fail "bad choice message: $bad"
printf 'es-actor = "agnet"\n' > badchoice.toml
bad=$("$BIN" train --config badchoice.toml --agents-per-rank 4 --iterations 0 2>&1) && fail "es-actor agnet accepted"
grep -q "es-actor must be one of agent, targets, got 'agnet'" <<<"$bad" || fail "bad choice in a file: $bad"
grep -q -- "--critic TEXT[:A-Z]*=concat" <<<"$("$BIN" train --help)" || fail "--help lacks the choice's default"
pass "choices: by name from flags and files, printed back, refused with the names"
help=$("$BIN" train --help)
for opt in --agents-per-rank --envs-per-rank --config --print-config --w-carbon --sites --clip --share-actor; do
  grep -q -- "$opt" <<<"$help" || fail "--help lacks $opt"
done
listing=$("$BIN" list)
grep -q "least-loaded" <<<"$listing" || fail "list lacks baselines"
grep -q "^  mappo   multi-agent PPO: " <<<"$listing" || fail "list lacks the learners' descriptions: $listing"
pass "help and list"

# --version names the revision of the source tree the binary was built from (refreshed at every
# build by cmake/version.cmake, not frozen at configure time).
if rev=$(git -C "$SRC" rev-parse --short HEAD 2>/dev/null); then
  ver=$("$BIN" --version)
  [[ "$ver" == *"($rev)"* || "$ver" == *"($rev-dirty)"* ]] || fail "--version says '$ver', the tree is at $rev"
  pass "--version names the source revision ($ver)"
else
  echo "skip: $SRC is not a git checkout, so there is no revision to compare --version with"
fi

# Output that says what it means (issue 23): --help shows no "{false}" beside a flag whose
# default is true; a statistic without a value yet prints "-", not nan; "1 rank", not "1 ranks".
"$BIN" train --help > help.txt
grep -q -- "^  --eval-after,--no-eval-after$" help.txt || fail "--help: $(grep -- '--eval-after' help.txt)"
if grep -q "{false}\|{true}" help.txt; then fail "--help still shows {false}: $(grep '{false}' help.txt | head -3)"; fi
"$BIN" train --algo dqn --agents-per-rank 4 --iterations 1 --no-eval-after --traj-every 0 --run-dir dqn > dqn.log
grep -q "4 agents on 1 rank (4 per rank)" dqn.log || fail "rank count wording: $(head -1 dqn.log)"
grep -q "| td_loss - q_mean - epsilon [0-9.]* grad_norm - |" dqn.log || fail "warm-up statistics: $(grep iter dqn.log)"
pass "--help without {false}; warm-up statistics print '-'; '1 rank'"
"$BIN" baselines --agents-per-rank 4 --eval-episodes 2 --baselines random > base.log
grep -q "evaluating 4 episodes per policy: --eval-episodes 2 rounded up to a multiple of the 4 env copies per rank" base.log ||
  fail "the rounded episode count is not said: $(head -3 base.log)"
# The planners read every site: at two ranks rank 0 plays them with every agent, on the same
# episodes as one rank; the bracket (LP bound above, feasible hindsight schedule below) is printed.
for np in 1 2; do
  mpi $np "$BIN" baselines --agents-per-rank $((4 / np)) --eval-episodes 4 --episode-slots 24 \
    --baselines local-only,mpc-oracle > "plan$np.log" || fail "baselines at $np rank(s): $(tail -3 "plan$np.log")"
done
grep -E "^(mpc-oracle|local-only) +-?[0-9]|^hindsight schedule" plan1.log > plan1.rows
grep -E "^(mpc-oracle|local-only) +-?[0-9]|^hindsight schedule" plan2.log > plan2.rows
[ "$(wc -l < plan1.rows)" = 3 ] || fail "expected the mpc-oracle, local-only and hindsight lines: $(cat plan1.log)"
diff plan1.rows plan2.rows || fail "the planner scores differently at 2 ranks"
for f in "hindsight_gap_pct" "oracle bound (hindsight relaxation, an upper bound on the optimum)" \
  "hindsight schedule (feasible with hindsight, a lower bound on the optimum)"; do
  grep -qF "$f" plan2.log || fail "no '$f' in: $(cat plan2.log)"
done
pass "planners at 2 ranks score as at 1; the bracket on the optimum is printed"
[ "$("$BIN" slurm --help | grep ':$' | sed -n 2p)" = "Slurm:" ] ||
  fail "slurm --help does not list its own options first: $("$BIN" slurm --help | grep ':$' | head -3)"
pass "a rounded --eval-episodes is said; slurm --help starts with its own options"

# Real trace files as they come (issue 23): with --trace-repair, a repeated row and a missing
# hour are mended, each file says so in one line, and the run records it in its config.toml;
# a price file in another currency says the rate it was converted at.
{
  printf 'Datetime,Price (EUR/MWh)\n'
  for h in $(seq 0 71); do printf '2023-01-%02dT%02d:00:00Z,%d\n' $((1 + h / 24)) $((h % 24)) $((50 + h)); done
} > eur.csv
{
  printf 'Datetime (UTC),Country,Zone Name,Zone Id,Carbon Intensity gCO2eq/kWh (direct),Carbon Intensity gCO2eq/kWh (LCA)\n'
  for h in $(seq 0 71); do
    [ "$h" = 30 ] && continue                      # a missing hour
    printf '2023-01-%02d %02d:00:00,X,X,X,1,%d\n' $((1 + h / 24)) $((h % 24)) $((200 + h))
    [ "$h" = 24 ] && printf '2023-01-02 00:00:00,X,X,X,1,224\n'  # the month-boundary repeat
  done
} > messy.csv
expect_error "a trace file that needs repair, without --trace-repair" 2 "messy.csv:27: the hour 2023-01-02 00:00:00 UTC again, with the same value as line 26 (--trace-repair drop-duplicates drops such repeats)" -- \
  "$BIN" train --agents-per-rank 4 --iterations 1 --trace-days 1 --carbon-files messy.csv,messy.csv,messy.csv,messy.csv
"$BIN" train --agents-per-rank 4 --iterations 1 --trace-days 1 --no-eval-after --traj-every 0 \
  --trace-repair drop-duplicates,fill-gaps --carbon-files messy.csv,messy.csv,messy.csv,messy.csv \
  --price-files eur.csv,eur.csv,eur.csv,eur.csv --run-dir repaired > repaired.log
line="messy.csv: --trace-repair dropped 1 repeated row (line 27), filled 1 missing hour (line 33)"
[ "$(grep -c "^$line$" repaired.log)" = 1 ] || fail "the repair is not said once: $(head -5 repaired.log)"
grep -q "^eur.csv: prices in EUR/MWh, converted at 1.08 USD per EUR (built-in 2023 mean; --fx EUR=RATE to change)$" repaired.log ||
  fail "the currency conversion is not said: $(head -5 repaired.log)"
grep -q "^# $line$" repaired/config.toml || fail "config.toml does not record the repair"
grep -q '^trace-repair = \["drop-duplicates", "fill-gaps"\]$' repaired/config.toml ||
  fail "config.toml lacks the repair policy: $(grep trace-repair repaired/config.toml)"
pass "--trace-repair mends a repeated row and a missing hour, says so and records it"
