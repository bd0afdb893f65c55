#!/usr/bin/env bash
# Trains N seeds of one config on this machine, one after the other, into OUT/seed-K, each
# evaluated after training on the same held-out episodes, then aggregates them with
# `marlsched compare` into OUT/comparison.{csv,md,svg} (means, IQMs and paired differences with
# 95 % intervals). On a cluster, `marlsched slurm --kind sweep --seeds N` runs the seeds as a
# job array instead.
#   bash launch/seeds.sh N OUT [train options...]     e.g. bash launch/seeds.sh 5 runs/seeds
# MARLSCHED_NP sets the rank count (default 4, as launch/run.sh); the config defaults to the main
# job's, launch/configs/ladder-4.toml (give --config to change it, e.g. launch/configs/main.toml
# for plain ES). Each seed starts afresh (--force).
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: bash launch/seeds.sh N OUT [train options...]" >&2; exit 2; }
N=$1 OUT=$2
shift 2
[[ "$N" =~ ^[1-9][0-9]*$ ]] || { echo "seeds.sh: N must be a positive integer, got '$N'" >&2; exit 2; }
HERE=$(dirname "$0")
source "$HERE/env.sh"
BIN=${MARLSCHED_BIN:-$MARLSCHED_BUILD/launch/marlsched}
[ -x "$BIN" ] || { echo "seeds.sh: no $BIN (build first: bash launch/build.sh)" >&2; exit 2; }
CONFIG=(--config "$MARLSCHED_ROOT/launch/configs/ladder-4.toml")
for a in "$@"; do [ "$a" = "--config" ] && CONFIG=(); done
NP=${MARLSCHED_NP:-4}
runs=()
for k in $(seq 1 "$N"); do
  echo "== seed $k of $N"
  mpirun -n "$NP" "$BIN" train "${CONFIG[@]}" --seed "$k" --run-dir "$OUT/seed-$k" --force --quiet "$@" \
    | grep -v "^time split\|^busy time\|^peak resident\|^parameters identical"
  runs+=("$OUT/seed-$k")
done
"$BIN" compare "${runs[@]}" --out "$OUT"
