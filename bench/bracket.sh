#!/usr/bin/env bash
# The bracket on the optimum at each rung of the geodc ladder, without the learners: every
# baseline (the MPCs included), the LP bound and the feasible hindsight schedule on the ladder's
# held-out episodes (eval seed 1000, 32 episodes on 32 copies, one rank), on synthetic traces and
# on July-December of the real 2023 traces (the episodes of the own-grid and zero-shot
# protocols), with the wall time of each evaluation.
#   bash bench/bracket.sh OUT [RUNG...]      e.g. bash bench/bracket.sh runs/bracket 32 128
# Rungs as in bench/ladder.sh (default 32 128): 4 = launch/configs/main.toml's sites; more =
# those four zones replicated with 3 ring neighbours per site. OUT/RUNG-TRACES.log holds each
# table; OUT/bracket.md the summary.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: bash bench/bracket.sh OUT [RUNG...]" >&2; exit 2; }
OUT=$1
shift
RUNGS=("$@")
SCRIPT=bracket.sh DEFAULT_RUNGS=(32 128)
source "$(dirname "$0")/ladder_common.sh"
TRACES=(synthetic)
if [ "$HAVE_REAL" = 1 ]; then
  TRACES+=(real)
else
  echo "bracket.sh: no $DATA/{carbon_intensity,electricity_prices}: the real traces are skipped"
fi
mkdir -p "$OUT"
{
  echo "| sites | traces | oracle bound | hindsight schedule | best baseline | its mean | its gap to the schedule | wall s |"
  echo "|--:|:--|--:|--:|:--|--:|--:|--:|"
} > "$OUT/bracket.md"
for n in "${RUNGS[@]}"; do
  read -r -a flags <<< "$(rung_flags "$n" | tr '\n' ' ')"
  for tr in "${TRACES[@]}"; do
    extra=()
    [ "$tr" = real ] && extra=("${REAL[@]}" "${SECOND_HALF[@]}")
    log="$OUT/$n-$tr.log"
    if ! grep -q "^hindsight schedule" "$log" 2> /dev/null; then  # a finished one is kept
      echo "== $n sites, $tr traces"
      t0=$(date +%s.%N)
      "$BIN" baselines "${flags[@]}" "${extra[@]}" --eval-bound > "$log" 2>&1 || { tail -5 "$log"; exit 1; }
      echo "$(date +%s.%N) $t0" | awk '{printf "%.0f\n", $1 - $2}' > "$log.seconds"
    fi
    secs=$(cat "$log.seconds" 2> /dev/null || echo "–")
    /usr/bin/python3 - "$log" "$n" "$tr" "$secs" >> "$OUT/bracket.md" <<'PY'
import re, sys
log, n, tr, secs = sys.argv[1:]
text = open(log).read()
bound = re.search(r"^oracle bound .*?: ([-\d.]+) per episode", text, re.M)
floor = re.search(r"^hindsight schedule .*?: ([-\d.]+) per episode", text, re.M)
rows, inside = {}, False
for line in text.splitlines():
    cells = line.split()
    if cells[:2] == ["policy", "utility"]:
        inside = True
    elif inside and (not cells or line.startswith("mean_")):
        inside = False
    elif inside:
        rows[cells[0]] = float(cells[1])
best = max(rows, key=rows.get)
b, f = float(bound.group(1)), float(floor.group(1))
print(f"| {n} | {tr} | {b:.2f} | {f:.2f} | {best} | {rows[best]:.2f} | {100 * (f - rows[best]) / abs(f):.1f} % | {secs} |")
PY
    tail -1 "$OUT/bracket.md"
  done
done
echo "bracket: the table is $OUT/bracket.md"
