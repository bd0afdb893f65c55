#!/usr/bin/env bash
# Checks that two builds give byte-identical outputs (issue 24: a refactor changes no behaviour):
# the default config's metrics.csv, eval.csv and eval-episodes.csv, and a short coop run of every
# learner (tsdqn, which needs two action heads, on lstcb). Usage: bash bench/identical_outputs.sh OLD_MARLSCHED NEW_MARLSCHED [WORK_DIR]
# (e.g. a build of the previous commit in a git worktree and build/launch/marlsched).
# OLD_CONFIG=FILE gives the old build its own default config, when the new one has keys it lacks
# (e.g. `git show OLD_COMMIT:launch/configs/default.toml > old.toml`).
set -euo pipefail
OLD=${1:?usage: identical_outputs.sh OLD_BIN NEW_BIN [WORK_DIR]} NEW=${2:?usage: identical_outputs.sh OLD_BIN NEW_BIN [WORK_DIR]}
WORK=${3:-$(mktemp -d)}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$ROOT/launch/env.sh" > /dev/null
mkdir -p "$WORK"
status=0
# same LABEL FILE...: cmp each file of the old and the new run
same() {
  local label=$1
  shift
  for f in "$@"; do
    if cmp -s "$WORK/old-$label/$f" "$WORK/new-$label/$f"; then
      echo "identical: $label $f"
    else
      echo "DIFFERENT: $label $f"
      status=1
    fi
  done
}
for which in old new; do
  bin=$OLD config=${OLD_CONFIG:-$ROOT/launch/configs/default.toml}
  [ "$which" = new ] && bin=$NEW config=$ROOT/launch/configs/default.toml
  mpirun -n 2 "$bin" train --config "$config" --agents-per-rank 2 \
    --quiet --force --run-dir "$WORK/$which-default" > "$WORK/$which-default.log"
  for algo in mappo ippo dqn masac maddpg es; do
    mpirun -n 2 "$bin" train --env coop --algo "$algo" --agents-per-rank 2 --iterations 20 \
      --eval-episodes 4 --quiet --force --run-dir "$WORK/$which-coop-$algo" > "$WORK/$which-coop-$algo.log"
  done
  mpirun -n 2 "$bin" train --env lstcb --algo tsdqn --agents-per-rank 2 --iterations 10 \
    --eval-episodes 4 --quiet --force --run-dir "$WORK/$which-lstcb-tsdqn" > "$WORK/$which-lstcb-tsdqn.log"
done
same default metrics.csv eval.csv eval-episodes.csv
for algo in mappo ippo dqn masac maddpg es; do same "coop-$algo" metrics.csv eval.csv; done
same lstcb-tsdqn metrics.csv eval.csv
exit $status
