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
