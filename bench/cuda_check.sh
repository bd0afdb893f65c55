#!/usr/bin/env bash
# marlsched on a GPU (issue 20, item 5): builds the launcher against a CUDA libtorch (by default
# the PyTorch wheel of the python3 on PATH), then, at 2 ranks x 2 agents on --device cuda:
#   1. trains the default geodc config and the same run on the CPU, and prints both curves' ends,
#      their evaluations and wall times;
#   2. runs the GPU training twice (is it deterministic?) and kills and resumes it (does the
#      resumed run reproduce the straight one?);
#   3. evaluates the GPU-trained model on the GPU and on the CPU (same greedy utility?);
#   4. trains every learner on the coop task on the GPU and prints its match rate;
#   5. exports each GPU-trained model and loads the export in PyTorch on the CPU and on the GPU
#      (same probabilities?);
#   6. times a wider run (64 env copies, 256/512-unit networks) on the GPU and on the CPU.
# Every step prints "ok:" or "FAIL:" and the script goes on, so that one run shows everything.
#   bash bench/cuda_check.sh [WORK_DIR]
# Environment: TORCH_PREFIX (libtorch's CMake prefix; default: python3's torch), MPIEXEC (default
# mpirun), CMAKE_ARGS (more configure arguments), JOBS (build jobs, default nproc), PYTHON
# (default python3). MARLSCHED_BIN=PATH skips the build and GPU=cpu runs the steps on the CPU
# alone (to try the script itself on a machine without a GPU).
set -uo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
source "$SRC/launch/env.sh"
W=${1:-$(mktemp -d /tmp/cuda-check.XXXXXX)}
mkdir -p "$W"
MPIEXEC=${MPIEXEC:-mpirun}
PY=${PYTHON:-python3}
GPU=${GPU:-cuda}
FAILS=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
mpi() { local np=$1; shift; "$MPIEXEC" -n "$np" --oversubscribe "$@"; }
mpi_t() { local t=$1 np=$2; shift 2; timeout "$t" "$MPIEXEC" -n "$np" --oversubscribe "$@"; }
now() { date +%s%N; }
secs() { echo "$((($(now) - $1) / 1000000))" | sed -E 's/([0-9]{3})$/.\1/; s/^\./0./'; }
# col FILE ROW_PREFIX COLUMN: a column of the CSV row whose first field starts with ROW_PREFIX.
col() {
  awk -F, -v p="$2" -v c="$3" 'NR == 1 {for (i = 1; i <= NF; i++) if ($i == c) k = i; next}
    index($1, p) == 1 && k {print $k; exit}' "$1"
}

echo "== machine"
nvidia-smi -L 2>&1 | head -4
"$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
  "available", torch.cuda.is_available(), "cxx11 abi", torch.compiled_with_cxx11_abi())' 2>&1
TORCH_PREFIX=${TORCH_PREFIX:-$("$PY" -c 'import torch; print(torch.utils.cmake_prefix_path)')}

if [ -n "${MARLSCHED_BIN:-}" ]; then
  BIN=$MARLSCHED_BIN
else
  echo "== build against $TORCH_PREFIX"
  B=$W/build
  GEN=()
  command -v ninja > /dev/null && GEN=(-G Ninja)
  t0=$(date +%s)
  # shellcheck disable=SC2086
  cmake -S "$SRC" -B "$B" "${GEN[@]}" -DCMAKE_PREFIX_PATH="$TORCH_PREFIX" \
    -DMARLSCHED_BUILD_TESTS=OFF -DMARLSCHED_BUILD_BENCH=OFF ${CMAKE_ARGS:-} > "$W/configure.log" 2>&1 ||
    { tail -40 "$W/configure.log"; echo "FAIL: configure"; exit 1; }
  # Keep going past errors so that one build shows every incompatibility.
  KEEP=(-k); [ ${#GEN[@]} -gt 0 ] && KEEP=(-k 0)
  cmake --build "$B" -j "${JOBS:-$(nproc)}" --target marlsched -- "${KEEP[@]}" > "$W/build.log" 2>&1 ||
    { grep -E "error|Error" "$W/build.log" | head -60; echo "FAIL: build"; exit 1; }
  ok "built in $(($(date +%s) - t0)) s"
  BIN=$B/launch/marlsched
fi
"$BIN" --version

cd "$W" || exit 1
T=(train --agents-per-rank 2 --iterations 30 --traj-every 0 --quiet --seed 3)
echo "== 1. default geodc config, 2 ranks x 2 agents, 30 iterations: GPU and CPU"
for role in gpu cpu; do
  dev=$GPU; [ $role = cpu ] && dev=cpu
  s=$(now)
  if mpi 2 "$BIN" "${T[@]}" --device "$dev" --run-dir $role > $role.log 2>&1; then
    ok "$dev: trained in $(secs "$s") s; last metrics row:"
    tail -1 $role/metrics.csv
  else
    bad "$dev training: $(tail -5 $role.log)"
  fi
done
head -1 cpu/metrics.csv 2> /dev/null
grep -A12 -i "time split" gpu.log cpu.log | head -30
if [ -f gpu/eval.csv ] && [ -f cpu/eval.csv ]; then
  echo "greedy evaluation utility: $GPU $(col gpu/eval.csv "mappo (greedy)" utility)," \
    "cpu $(col cpu/eval.csv "mappo (greedy)" utility), least-loaded $(col cpu/eval.csv least-loaded utility)"
fi

echo "== 2. determinism and resume on the GPU"
mpi 2 "$BIN" "${T[@]}" --device "$GPU" --run-dir gpu-again > gpu-again.log 2>&1 || bad "second GPU run"
if cmp -s gpu/metrics.csv gpu-again/metrics.csv; then ok "two GPU runs: identical metrics.csv"
else echo "note: two GPU runs differ (first differing line: $(cmp gpu/metrics.csv gpu-again/metrics.csv 2>&1))"; fi
K=("${T[@]}" --device "$GPU" --checkpoint-every 10)
mpi 2 "$BIN" "${K[@]}" --run-dir straight > straight.log 2>&1 || bad "straight GPU run"
MARLSCHED_KILL_AT=1:15 mpi_t 120 2 "$BIN" "${K[@]}" --run-dir crashed > crashed.log 2>&1 &&
  bad "the killed GPU run exited with 0"
if mpi 2 "$BIN" train --resume crashed > resumed.log 2>&1; then
  if cmp -s straight/metrics.csv crashed/metrics.csv; then
    ok "GPU run killed (rank 1, iteration 15) and resumed from its checkpoint: metrics.csv equals the straight run's"
  else
    bad "resumed GPU metrics differ from the straight run's: $(cmp straight/metrics.csv crashed/metrics.csv 2>&1)"
  fi
else
  bad "GPU resume: $(tail -5 resumed.log)"
fi

echo "== 3. the GPU-trained model evaluated on the GPU and on the CPU"
E=(--eval-episodes 2 --envs-per-rank 2 --greedy --baselines random)
for role in gpu cpu; do
  dev=$GPU; [ $role = cpu ] && dev=cpu
  mpi 2 "$BIN" eval --model gpu "${E[@]}" --agents-per-rank 2 --device "$dev" --out eval-$role \
    > eval-$role.log 2>&1 || bad "eval on $dev: $(tail -3 eval-$role.log)"
done
u1=$(col eval-gpu/eval.csv "mappo (greedy)" utility)
u2=$(col eval-cpu/eval.csv "mappo (greedy)" utility)
if [ -n "$u1" ] && [ "$u1" = "$u2" ]; then ok "greedy utility on the GPU and the CPU: $u1"
else bad "greedy utility: GPU '$u1', CPU '$u2'"; fi

echo "== 4. every learner on the coop task on the GPU (2 ranks x 2 agents)"
C=(train --env coop --agents-per-rank 2 --quiet --traj-every 0 --device "$GPU")
learner() {
  local name=$1; shift
  local s; s=$(now)
  if mpi_t 300 2 "$BIN" "${C[@]}" "$@" --run-dir "coop-$name" > "coop-$name.log" 2>&1; then
    local rate; rate=$(col "coop-$name/eval.csv" "" match_rate)
    echo "ok: $name on $GPU: match rate $rate (random about 0.33), $(secs "$s") s"
  else
    bad "$name on $GPU: $(tail -3 "coop-$name.log")"
  fi
}
learner mappo --algo mappo --iterations 40 --lr-actor 0.003
learner ippo --algo ippo --iterations 40 --lr-actor 0.003
learner mappo-pooled --algo mappo --critic pooled --iterations 40 --lr-actor 0.003
learner dqn --algo dqn --iterations 60
learner masac --algo masac --iterations 60
learner maddpg --algo maddpg --iterations 60
learner es --algo es --iterations 100
s=$(now)
if mpi_t 300 2 "$BIN" train --env lstcb --algo tsdqn --agents-per-rank 2 --iterations 10 \
  --quiet --traj-every 0 --device "$GPU" --run-dir lstcb-tsdqn > lstcb-tsdqn.log 2>&1; then
  ok "tsdqn on lstcb on $GPU: 10 iterations, $(secs "$s") s"
else
  bad "tsdqn on $GPU: $(tail -3 lstcb-tsdqn.log)"
fi

echo "== 5. exports of the GPU-trained models, loaded in PyTorch on the CPU and the GPU"
for run in gpu coop-mappo coop-ippo coop-mappo-pooled coop-dqn coop-masac coop-maddpg coop-es; do
  [ -d "$run" ] || continue
  if ! "$BIN" export "$run" > "export-$run.log" 2>&1; then
    bad "export $run: $(tail -3 "export-$run.log")"
    continue
  fi
  "$PY" - "$run/policy.pt" "$GPU" << 'PY' || bad "export check of $run"
import json, sys, torch
dev = sys.argv[2]
cpu = torch.jit.load(sys.argv[1])
gpu = torch.jit.load(sys.argv[1], map_location=dev)
meta = json.loads(cpu.metadata)
n, d = meta["num_agents"], len(meta["obs_fields"])
g = torch.Generator().manual_seed(0)
worst = 0.0
for _ in range(64):
    obs = torch.rand(n, d, generator=g)
    for agent in range(n):
        p_cpu, a_cpu = cpu(obs, agent, True)
        p_gpu, a_gpu = gpu(obs.to(dev), agent, True)
        worst = max(worst, (p_cpu - p_gpu.cpu()).abs().max().item())
        assert int(a_cpu) == int(a_gpu), (agent, int(a_cpu), int(a_gpu))
batch = gpu.probs(torch.rand(256, n, d, generator=g).to(dev), 0)
assert batch.device.type == torch.device(dev).type and batch.shape == (256, len(meta["action_names"]))
assert worst < 1e-5, worst
print(f"ok: {sys.argv[1]} ({meta['algo']}, torch {torch.__version__}): {n} agents x 64 observations, "
      f"greedy actions equal on cpu and {dev}, max |dp| {worst:.2g}; a batch of 256 on {batch.device}")
PY
done
out=$("$BIN" export lstcb-tsdqn 2>&1)
if grep -q "cannot be exported yet" <<< "$out"; then ok "tsdqn export: the documented refusal ($out)"
else bad "tsdqn export: $out"; fi

echo "== 6. where a GPU pays: 1 rank x 4 agents, 64 env copies, wider networks, 5 iterations"
for dev in $GPU cpu; do
  s=$(now)
  if mpi 1 "$BIN" train --agents-per-rank 4 --envs-per-rank 64 --actor-hidden 256 256 \
    --critic-hidden 512 512 --iterations 5 --traj-every 0 --quiet --no-eval-after --device "$dev" \
    --run-dir "wide-$dev" > "wide-$dev.log" 2>&1; then
    ok "$dev: $(secs "$s") s; $(grep "time split" "wide-$dev.log")"
  else
    bad "wide run on $dev: $(tail -3 "wide-$dev.log")"
  fi
done

echo "== $FAILS failure(s)"
[ "$FAILS" -eq 0 ]
