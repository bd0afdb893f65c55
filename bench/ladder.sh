#!/usr/bin/env bash
# The geodc ladder: every rung (sites), every protocol, the baselines (MPC included), the bracket
# on the optimum, and the project's learners over SEEDS training seeds, aggregated per cell with
# `marlsched compare` into OUT/ladder.md.
#   bash bench/ladder.sh SEEDS OUT [RUNG...]      e.g. bash bench/ladder.sh 5 runs/ladder 4 8 32
# Rungs (default 4 8 32 128): 4 = launch/configs/main.toml's sites; more = those four zones
# replicated (--replicate-sites) with 3 ring neighbours per site. Protocols:
#   synthetic  trained and evaluated on synthetic traces (held-out episodes, eval seed 1000);
#   own-grid   trained on the real 2023 traces of ../shared/data for January-June, evaluated on
#              July-December of the same zones (the user's own grid);
#   zero-shot  the synthetic-trained policy evaluated on July-December of the real traces.
# Learners (LADDER_LEARNERS, default "es es-mpc mappo-mpc"): es = the main job's ES; es-mpc =
# the same warm-started by imitating the mpc baseline (--es-imitate mpc, 5 DAgger rounds);
# es-targets = ES whose policy scores each (mode, target) from the own observation and that
# target's features (--es-actor targets: its size independent of the sites); es-targets-mlp =
# the same with a hidden layer of 16 (--es-hidden 16); es-over-mpc = ES as a residual over the
# mpc baseline (--es-base mpc: the policy is the MPC until its logits overrule it by
# LADDER_BASE_MARGIN, default 0.5), 16 copies and 300 iterations (LADDER_BASE_ITERS);
# es-over-mpc-targets = the same over the per-target input (--es-actor targets);
# mappo-over-mpc = MAPPO with its centralized critic as a residual over the mpc baseline
# (--base-policy mpc --base-margin 5: the actor's logits gain 5 on the MPC's action), 4 copies,
# 200 updates; mappo-priv-over-mpc = the same with a privileged centralized critic
# (--critic-privileged: the critic also reads every site's arrivals to come and true carbon and
# prices ahead, during training only);
# mappo-mpc = MAPPO with its centralized critic, 4 copies, 200 updates whose actor loss adds the
# mpc's cross-entropy, weight 5 falling to 0 (--imitate mpc); evaluated on the ES's 32 copies
# so that every learner meets the same episodes.
# Everything runs on one rank (the measured layout: ES and the MPC's LPs cost the same work on
# every rank, so on 2 cores more ranks only share them); LADDER_ITERS_<RUNG> overrides a rung's ES iterations; LADDER_BRACKET_MAX (default 32)
# is the largest rung whose evaluations bracket the optimum (LP bound and hindsight schedule);
# LADDER_PROTOCOLS (default all three) picks protocols. Runs already in OUT are kept (a rerun with
# more learners or protocols trains only what is missing).
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: bash bench/ladder.sh SEEDS OUT [RUNG...]" >&2; exit 2; }
SEEDS=$1 OUT=$2
shift 2
[[ "$SEEDS" =~ ^[1-9][0-9]*$ ]] || { echo "ladder.sh: SEEDS must be a positive integer, got '$SEEDS'" >&2; exit 2; }
RUNGS=("$@")
SCRIPT=ladder.sh DEFAULT_RUNGS=(4 8 32 128)
source "$(dirname "$0")/ladder_common.sh"
read -r -a PROTOCOLS <<< "${LADDER_PROTOCOLS:-synthetic own-grid zero-shot}"
for p in "${PROTOCOLS[@]}"; do
  case $p in
    synthetic | own-grid | zero-shot) ;;
    *) echo "ladder.sh: unknown protocol '$p' (synthetic, own-grid, zero-shot)" >&2; exit 2 ;;
  esac
done
if [ "$HAVE_REAL" = 0 ]; then
  echo "ladder.sh: no $DATA/{carbon_intensity,electricity_prices}: the own-grid and zero-shot protocols are skipped"
  read -r -a PROTOCOLS <<< "$(printf '%s\n' "${PROTOCOLS[@]}" | grep -x synthetic | tr '\n' ' ')"
fi
read -r -a LEARNERS <<< "${LADDER_LEARNERS:-es es-mpc mappo-mpc}"
BRACKET_MAX=${LADDER_BRACKET_MAX:-32}
mkdir -p "$OUT"
START=$(date +%s)

es_iterations() {  # the ES iterations of a rung (main.toml's 2000 up to 8 sites)
  local n=$1 it=LADDER_ITERS_$1
  if [ -n "${!it:-}" ]; then echo --iterations "${!it}"
  elif [ "$n" -ge 128 ]; then echo --iterations 300
  elif [ "$n" -ge 32 ]; then echo --iterations 1000
  fi
}
learner_flags() {  # a learner's training options at rung $2
  case $1 in
    es) es_iterations "$2" ;;
    es-mpc) es_iterations "$2"; echo --es-imitate mpc --es-imitate-iterations 5 ;;
    es-targets) es_iterations "$2"; echo --es-actor targets ;;
    es-targets-mlp) es_iterations "$2"; echo --es-actor targets --es-hidden 16 ;;
    es-over-mpc) echo --es-base mpc --es-base-margin "${LADDER_BASE_MARGIN:-0.5}" \
      --envs-per-rank 16 --iterations "${LADDER_BASE_ITERS:-300}" ;;
    es-over-mpc-targets) echo --es-actor targets --es-base mpc --es-base-margin \
      "${LADDER_BASE_MARGIN:-0.5}" --envs-per-rank 16 --iterations "${LADDER_BASE_ITERS:-300}" ;;
    mappo-over-mpc) echo --algo mappo --envs-per-rank 4 --iterations 200 --base-policy mpc \
      --base-margin 5 ;;
    mappo-priv-over-mpc) echo --algo mappo --envs-per-rank 4 --iterations 200 --base-policy mpc \
      --base-margin 5 --critic-privileged ;;
    mappo-mpc) echo --algo mappo --envs-per-rank 4 --iterations 200 --imitate mpc \
      --imitate-iterations 200 --imitate-coef 5 ;;
    *) echo "ladder.sh: unknown learner '$1' (es, es-mpc, es-targets, es-targets-mlp, es-over-mpc, es-over-mpc-targets, mappo-mpc, mappo-over-mpc, mappo-priv-over-mpc)" >&2; exit 2 ;;
  esac
}
eval_flags() {  # a learner's evaluation options: main.toml's 32 copies, the episodes of every row
  case $1 in
    mappo-mpc | es-over-mpc | es-over-mpc-targets | mappo-over-mpc | mappo-priv-over-mpc)
      echo --envs-per-rank 32 ;;
  esac
  return 0
}
# An evaluation's rows, the learned one named after its learner (every learner's row is
# "es (greedy)", and compare pools rows of one name as seeds of one policy).
label() {
  local dir=$1 name=$2
  sed -i -E "s/^(es|mappo) \(greedy\),/$name,/" "$dir/eval-episodes.csv"
}


for n in "${RUNGS[@]}"; do
  read -r -a RF <<< "$(rung_flags "$n" | tr '\n' ' ')"
  bound=(--eval-bound)
  [ "$n" -le "$BRACKET_MAX" ] || bound=(--no-eval-bound)
  for p in "${PROTOCOLS[@]}"; do
    cells=()
    for l in "${LEARNERS[@]}"; do
      read -r -a LF <<< "$(learner_flags "$l" "$n" | tr '\n' ' ')"
      read -r -a EF <<< "$(eval_flags "$l" | tr '\n' ' ')"
      for k in $(seq 1 "$SEEDS"); do
        train_p=$p; [ "$p" = zero-shot ] && train_p=synthetic
        run="$OUT/$n/$train_p/$l/seed-$k"
        if [ ! -f "$run/model-rank-0.pt" ]; then
          echo "== $n sites, $train_p, $l, seed $k: training"
          tflags=()
          [ "$train_p" = own-grid ] && tflags=("${REAL[@]}" "${FIRST_HALF[@]}")
          mkdir -p "$(dirname "$run")"
          t0=$(date +%s.%N)
          "$BIN" train "${RF[@]}" "${LF[@]}" "${tflags[@]}" --seed "$k" --run-dir "$run" --force \
            --quiet --no-eval-after --no-tensorboard > "$run.log" 2>&1 || { tail -5 "$run.log"; exit 1; }
          echo "$(date +%s.%N) $t0" | awk '{printf "%.1f\n", $1 - $2}' > "$run.train-seconds"
        fi
        ev="$OUT/$n/$p/$l/eval-$k"
        if [ ! -f "$ev/eval-episodes.csv" ]; then
          eflags=()
          [ "$p" != synthetic ] && eflags=("${REAL[@]}" "${SECOND_HALF[@]}")
          # Baselines and the bracket once per cell (they are the same for every run).
          first=0; [ "$k" = 1 ] && [ "$l" = "${LEARNERS[0]}" ] && first=1
          if [ $first = 1 ]; then bflags=("${bound[@]}"); else bflags=(--no-eval-bound --baselines local-only); fi
          echo "== $n sites, $p, $l, seed $k: evaluating"
          mkdir -p "$(dirname "$ev")"
          "$BIN" eval --model "$run" "${EF[@]}" "${eflags[@]}" "${bflags[@]}" --out "$ev" > "$ev.log" 2>&1 ||
            { tail -5 "$ev.log"; exit 1; }
          label "$ev" "$l"
        fi
        cells+=("$ev")
      done
    done
    cmp="$OUT/$n/$p/compare"
    "$BIN" compare "${cells[@]}" --out "$cmp" > /dev/null
    # One line per learner: the cell's strongest baseline and the learner against it.
    /usr/bin/python3 - "$cmp/comparison.csv" "$n" "$p" "$OUT/$n" "$SEEDS" "$train_p" > "$OUT/$n/$p/rows.md" <<'EOF'
import csv, sys, statistics
path, n, p, root, seeds, train_p = sys.argv[1:]
rows = list(csv.DictReader(open(path)))
heur = [r for r in rows if r["kind"] == "heuristic"]
best = max(heur, key=lambda r: float(r["mean"])) if heur else None
f = lambda v, d=2: ("%.*f" % (d, float(v))) if v not in ("", None) else "–"
for r in rows:
    if r["kind"] != "learned":
        continue
    secs, mib = [], []
    for k in range(1, int(seeds) + 1):
        base = f"{root}/{train_p}/{r['policy']}/seed-{k}"
        try:
            secs.append(float(open(base + ".train-seconds").read()))
            for line in open(base + ".log"):
                if line.startswith("peak resident memory"):
                    mib.append(float(line.split(":")[1].split()[0]))
        except (OSError, ValueError, IndexError):
            pass
    d = r.get("diff_vs_best_heuristic", "")
    print(f"| {n} | {p} | {best['policy'] if best else '–'} | {f(best['mean']) if best else '–'} | {r['policy']} | {r['seeds']} | {f(r['mean'])} | "
          f"{f(d)} [{f(r['diff_ci95_lo'])}, {f(r['diff_ci95_hi'])}] | [{f(r['diff_t95_lo'])}, {f(r['diff_t95_hi'])}] | {f(r['p_improvement'], 3)} | "
          f"{f(r['oracle_gap_pct'], 1)} % | {f(r['hindsight_gap_pct'], 1)} % | {statistics.mean(secs):.0f} | "
          f"{max(mib):.0f} |" if secs and mib else "")
EOF
  done
done
# The table: every cell measured in OUT so far, by rung and protocol.
{
  echo "| sites | protocol | strongest baseline | its mean | learner | seeds | mean | Δ [95 % bootstrap] | Δ t over seeds | P(improvement) | oracle gap | hindsight gap | training s (1 core) | peak MiB (1 rank) |"
  echo "|--:|:--|:--|--:|:--|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
  for d in $(ls -d "$OUT"/*/ | xargs -n1 basename | grep -E '^[0-9]+$' | sort -n); do
    for p in synthetic own-grid zero-shot; do
      [ -f "$OUT/$d/$p/rows.md" ] && grep -v '^$' "$OUT/$d/$p/rows.md"
    done
  done
  true
} > "$OUT/ladder.md"
echo "ladder: $(( $(date +%s) - START )) s; the table is $OUT/ladder.md"
cat "$OUT/ladder.md"
