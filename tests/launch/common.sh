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
