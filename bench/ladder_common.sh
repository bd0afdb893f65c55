# Sourced by bench/ladder.sh and bench/bracket.sh, so that both measure the same rungs and
# episodes. Before sourcing: SCRIPT (the caller's name, for messages), RUNGS (the rungs asked
# for) and DEFAULT_RUNGS. After: RUNGS checked, HERE, BIN, DATA, HAVE_REAL (1 when the real
# traces are beside the project), REAL (their files), FIRST_HALF and SECOND_HALF (the training
# and evaluation windows of the own-grid protocol), and rung_flags N (the env and run options of
# rung N: launch/configs/main.toml's 4 sites, or those zones replicated with 3 ring neighbours).
[ ${#RUNGS[@]} -gt 0 ] || RUNGS=("${DEFAULT_RUNGS[@]}")
for r in "${RUNGS[@]}"; do
  [[ "$r" =~ ^[1-9][0-9]*$ ]] && [ "$r" -ge 4 ] || { echo "$SCRIPT: a rung is a site count >= 4, got '$r'" >&2; exit 2; }
done
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$HERE/launch/env.sh"
BIN=${MARLSCHED_BIN:-$MARLSCHED_BUILD/launch/marlsched}
[ -x "$BIN" ] || { echo "$SCRIPT: no $BIN (build first: bash launch/build.sh)" >&2; exit 2; }
DATA=${MARLSCHED_DATA:-$HERE/../shared/data}
HAVE_REAL=0
[ -d "$DATA/carbon_intensity" ] && [ -d "$DATA/electricity_prices" ] && HAVE_REAL=1
carbon=() price=()
for z in US-CAL-CISO DE-LU SG JP-TK; do
  carbon+=("$DATA/carbon_intensity/${z}_2023_hourly.csv")
  price+=("$DATA/electricity_prices/${z}_electricity_prices_2023.csv")
done
REAL=(--carbon-files "${carbon[@]}" --price-files "${price[@]}")
FIRST_HALF=(--trace-start "2023-01-01 00:00" --trace-days 180)
SECOND_HALF=(--trace-start "2023-07-01 00:00" --trace-days 183)

rung_flags() {  # the env and run options of a rung, one per line
  local n=$1
  echo --config "$HERE/launch/configs/main.toml" --agents-per-rank "$n"
  [ "$n" -gt 4 ] && echo --replicate-sites --site-neighbours 3
  return 0
}
