#!/bin/sh
# stratsim-runner's errors on any machine (CTest runner-gpu-errors): bad input exits 2 before
# any device is touched, a missing plan file 1, and with CUDA_VISIBLE_DEVICES emptied a valid
# plan stops with the clean "no CUDA device visible" line and exit 1 (GPU or not).
#   test-runner-errors.sh STRATSIM_RUNNER SOURCE_DIR
set -u
runner=$1
src=$2
plan=$src/tests/fuzz/corpus/plan/dp2.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0

# expect STATUS PATTERN ARGS...: the exit status, and one stderr line matching PATTERN
expect() {
  want=$1 pattern=$2
  shift 2
  CUDA_VISIBLE_DEVICES= "$runner" "$@" >"$tmp/out" 2>"$tmp/err"
  got=$?
  lines=$(wc -l <"$tmp/err")
  if [ "$got" != "$want" ] || [ "$lines" != 1 ] || ! grep -q -- "$pattern" "$tmp/err"; then
    echo "FAIL: stratsim-runner $*: exit $got (want $want), stderr ($lines lines):"
    cat "$tmp/err"
    failed=1
  else
    echo "ok: stratsim-runner $*: exit $got: $(cat "$tmp/err")"
  fi
  if [ -e "$tmp/m.json" ]; then
    echo "FAIL: stratsim-runner $*: wrote $tmp/m.json"
    failed=1
  fi
}

expect 1 '^stratsim-runner: no CUDA device visible (cudaGetDeviceCount: .*)$' "$plan" -o "$tmp/m.json"
expect 1 '^stratsim-runner: no CUDA device visible' "$plan" -o "$tmp/m.json" --warmup 0 --iterations 1 --no-microbench
expect 2 '^stratsim-runner: -o MEASUREMENTS.json is required$' "$plan"
expect 2 '^stratsim-runner: usage: stratsim-runner PLAN.json' -o "$tmp/m.json"
expect 2 'exclude each other' "$plan" -o "$tmp/m.json" --microbench-only --no-microbench
expect 2 '^stratsim-runner: --iterations 0: must be in 1..100000$' "$plan" -o "$tmp/m.json" --iterations 0
expect 2 '^stratsim-runner: --warmup -2: must be in 0..100000$' "$plan" -o "$tmp/m.json" --warmup -2
expect 2 '^stratsim-runner: --device-kind h100: unknown (known: .*h100-sxm' "$plan" -o "$tmp/m.json" --device-kind h100
expect 2 'Unknown option --bogus' "$plan" -o "$tmp/m.json" --bogus
expect 1 "^stratsim-runner: $tmp/missing.json: cannot read the plan: " "$tmp/missing.json" -o "$tmp/m.json"
expect 2 'the plan can deadlock' "$src/tests/fuzz/corpus/plan/deadlock.json" -o "$tmp/m.json"
printf '{"format": "stratsim-plan", "version": 1, "ranks": 1' >"$tmp/bad.json"
expect 2 "^stratsim-runner: $tmp/bad.json: malformed JSON at line 1" "$tmp/bad.json" -o "$tmp/m.json"
exit $failed
