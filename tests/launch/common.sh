# Shared helpers for the script tests. Usage: source common.sh "$@"
set -euo pipefail
BIN=$1
MPIEXEC=$2
SRC=$3
WORK=$(mktemp -d "${TMPDIR:-/tmp}/marlsched-script.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
# `mpi NP cmd...` is a script on PATH (so that `timeout` can run it too).
mkdir -p "$WORK/bin"
printf '#!/usr/bin/env bash\nnp=$1; shift\nexec "%s" -n "$np" --oversubscribe "$@"\n' "$MPIEXEC" > "$WORK/bin/mpi"
chmod +x "$WORK/bin/mpi"
export PATH="$WORK/bin:$PATH"
fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }
# kill_resume_matches WHAT KILL_AT ARGS...: runs `train ARGS` at 2 ranks straight (run dir
# straight/) and again with MARLSCHED_KILL_AT=KILL_AT (crashed/), resumes the killed run, and
# fails unless the resumed metrics.csv equals the straight one.
kill_resume_matches() {
  local what=$1 kill=$2; shift 2
  mpi 2 "$BIN" "$@" --run-dir straight > straight.log
  local rc=0
  MARLSCHED_KILL_AT=$kill timeout 120 mpi 2 "$BIN" "$@" --run-dir crashed > crashed.log 2>&1 || rc=$?
  [ "$rc" -ne 0 ] || fail "the killed run exited with 0"
  mpi 2 "$BIN" train --resume crashed > resumed.log
  cmp straight/metrics.csv crashed/metrics.csv || fail "resumed $what metrics differ from the uninterrupted run"
}
# expect_error NAME EXPECTED_CODE PATTERN -- command...: runs it, checks exit code, one
# "marlsched: error" line, and that the line matches PATTERN.
expect_error() {
  local name=$1 code=$2 pattern=$3; shift 4
  local out rc=0
  out=$(timeout 60 "$@" 2>&1) || rc=$?
  [ "$rc" -ne 124 ] || fail "$name: timed out (hang?)"
  [ "$rc" -eq "$code" ] || fail "$name: exit code $rc, expected $code; output: $out"
  local n
  n=$(grep -c "marlsched: error" <<<"$out" || true)
  [ "$n" -eq 1 ] || fail "$name: expected one error line, got $n: $out"
  grep -q -- "$pattern" <<<"$out" || fail "$name: message does not match '$pattern': $out"
  pass "$name"
}
