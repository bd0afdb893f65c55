#!/usr/bin/env bash
# What a person looks at after training: TensorBoard event files (decoded back independently,
# CRCs checked, values against metrics.csv) and `marlsched report` SVG images (well-formed, one
# curve per metric, every policy of the evaluation drawn); bad inputs get one clear error.
source "$(dirname "$0")/common.sh" "$@"
cd "$WORK"
PY=/usr/bin/python3
mpi 2 "$BIN" train --agents-per-rank 2 --envs-per-rank 1 --iterations 4 --rollout-steps 48 \
  --traj-every 0 --eval-episodes 1 --quiet --run-dir run > train.log
"$PY" "$SRC/tests/io/read_tfevents.py" run
"$BIN" report run > report.log
grep -q "wrote run/training.svg" report.log && grep -q "wrote run/eval.svg" report.log || fail "$(cat report.log)"
"$PY" - run <<'PY' || fail "the SVG images are not what the run holds"
import csv, sys, xml.etree.ElementTree as ET
run = sys.argv[1]
ns = {"s": "http://www.w3.org/2000/svg"}
t = ET.parse(f"{run}/training.svg").getroot()
header = next(csv.reader(open(f"{run}/metrics.csv")))
components = [h for h in header if h.endswith("_per_slot") and h != "system_reward_per_slot"]
lines = t.findall(".//s:polyline", ns)
titles = [x.text for x in t.findall(".//s:text", ns)]
assert len(lines) >= 2 + len(components) + 4, (len(lines), components)
for c in components:
    assert c[: -len("_per_slot")] + " per slot" in titles, c
e = ET.parse(f"{run}/eval.svg").getroot()
names = [x.text for x in e.findall(".//s:text", ns)]
for row in csv.DictReader(open(f"{run}/eval.csv")):
    assert row["policy"] in names, row["policy"]
assert any(r.get("fill") == "#ff7f0e" for r in e.findall(".//s:rect", ns)), "learned policy not highlighted"
print(f"ok: training.svg: {len(lines)} curves; eval.svg: every policy of eval.csv drawn")
PY
pass "marlsched report draws training.svg and eval.svg"
mkdir -p empty
expect_error "report without metrics" 2 "has no metrics.csv" -- "$BIN" report empty
cp -r run bad && echo "1,2" >> bad/metrics.csv
expect_error "malformed metrics.csv" 2 "bad/metrics.csv:6: 2 fields" -- "$BIN" report bad

# marlsched compare: the training run's own eval-episodes.csv, then seeds written by hand with
# known numbers: "learned" beats least-loaded by exactly 2 on every episode of every seed.
[ -s run/eval-episodes.csv ] || fail "training wrote no eval-episodes.csv"
"$BIN" compare run --out cmp1 > cmp1.log || fail "compare of one run: $(cat cmp1.log)"
for s in 1 2 3; do
  mkdir -p "seed$s"
  {
    echo "policy,episode,utility"
    for e in 0 1 2 3; do echo "learned,$e,$((10 * e + 2 + s - 2))"; done
    for e in 0 1 2 3; do echo "least-loaded,$e,$((10 * e))"; done
    for e in 0 1 2 3; do echo "random,$e,$((10 * e - 50))"; done
    for e in 0 1 2 3; do echo "oracle-bound,$e,$((10 * e + 20))"; done
  } > "seed$s/eval-episodes.csv"
done
"$BIN" compare seed1 seed2 seed3 --out cmp > cmp.log || fail "compare: $(cat cmp.log)"
"$PY" - cmp <<'PY' || fail "comparison.csv is not what the seeds hold"
import csv, sys, xml.etree.ElementTree as ET
rows = {r["policy"]: r for r in csv.DictReader(open(f"{sys.argv[1]}/comparison.csv"))}
l, b = rows["learned"], rows["least-loaded"]
assert l["kind"] == "learned" and l["seeds"] == "3" and b["kind"] == "heuristic" and b["seeds"] == "1", rows
assert abs(float(l["mean"]) - 17.0) < 1e-9 and abs(float(b["mean"]) - 15.0) < 1e-9, (l, b)
assert abs(float(l["diff_vs_best_heuristic"]) - 2.0) < 1e-9, l
# Seeds give +1, +2, +3: the t-interval over 3 seeds is 2 ± 4.303 * 1 / sqrt(3).
assert abs(float(l["diff_t95_lo"]) - (2 - 4.3027 / 3 ** 0.5)) < 1e-3, l
assert 1.0 <= float(l["diff_ci95_lo"]) <= float(l["diff_ci95_hi"]) <= 3.0, l
assert abs(float(l["p_improvement"]) - 1.0) < 1e-9, l
assert abs(float(b["oracle_gap_pct"]) - 100 * 20 / 35) < 1e-3, b
assert rows["oracle-bound"]["kind"] == "bound"
svg = ET.parse(f"{sys.argv[1]}/comparison.svg").getroot()
names = [t.text for t in svg.iter("{http://www.w3.org/2000/svg}text")]
assert all(p in names for p in rows), names
print("ok: comparison.csv: means, paired difference, t and bootstrap intervals, P(improvement), oracle gap")
PY
grep -q "| learned | learned | 3 |" cmp/comparison.md || fail "comparison.md: $(cat cmp/comparison.md)"
pass "marlsched compare aggregates seeds on the same episodes"
sed -i 's/^least-loaded,1,10$/least-loaded,1,11/' seed3/eval-episodes.csv
expect_error "compare of runs evaluated on different episodes" 2 "not evaluated on the same episodes" -- "$BIN" compare seed1 seed2 seed3 --out cmpbad
expect_error "compare of a directory without evaluation" 2 "has no eval-episodes.csv" -- "$BIN" compare empty
