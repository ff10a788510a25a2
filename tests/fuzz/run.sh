#!/usr/bin/env bash
# Builds the libFuzzer targets (build-fuzz: CC=clang, STRATSIM_FUZZ=ON) and runs each for a
# bounded time from its seed corpus tests/fuzz/corpus/NAME (target fuzz-NAME) with a fixed seed;
# the inputs it finds go to build-fuzz/corpus/NAME, emptied first so that a run is reproducible.
# Prints "fuzz-NAME: N executions in T s" per target; fails if any target crashes, leaks, trips
# a sanitizer, hangs or breaks the error contract (fuzz-parsers.h). The input that did it is
# left in build-fuzz/artifacts/NAME/: save it as tests/fuzz/regressions/NAME/WHAT (picked up
# by tests/test-fuzz-regressions.c) and fix the parser.
#   tests/fuzz/run.sh [SECONDS_PER_TARGET [TARGET...]]     (default 10 s, every target)
#   FUZZ_JOBS=N: run N targets at once (default: the number of cores)
#   FUZZ_ARGS: more libFuzzer flags (e.g. -max_len=65536)
#   FUZZ_KEEP_CORPUS=1: keep build-fuzz/corpus from the last run (longer campaigns)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
seconds=${1:-10}
shift || true
build=build-fuzz

CC=clang cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTRATSIM_WERROR=ON \
  -DSTRATSIM_FUZZ=ON -DBUILD_TESTING=OFF >/dev/null
cmake --build "$build" --target fuzz -j"$(nproc)"

if [ $# -gt 0 ]; then
  targets=("$@")
else
  targets=()
  for dir in tests/fuzz/corpus/*/; do targets+=("fuzz-$(basename "$dir")"); done
fi

# Leak checks need GLib to use plain malloc (GSlice magazines hide leaked headers).
export G_SLICE=always-malloc G_DEBUG=gc-friendly
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# Runs one target; its log is $build/logs/TARGET.log. Absolute paths: targets run in an empty
# temporary directory (fuzz-common.h).
run_one() {
  local target=$1 name=${1#fuzz-}
  local work=$root/$build/corpus/$name artifacts=$root/$build/artifacts/$name/
  [ "${FUZZ_KEEP_CORPUS:-0}" = 1 ] || rm -rf "$work"
  rm -rf "$artifacts"
  mkdir -p "$work" "$artifacts" "$build/logs"
  # -timeout=60: a valid spec may ask for a million-op graph (gpt:layers=99399 takes ~15 s
  # instrumented); a hang still fails.
  # shellcheck disable=SC2086
  "$build/tests/fuzz/$target" -seed=1 -max_total_time="$seconds" -timeout=60 -rss_limit_mb=4096 \
    -print_final_stats=1 -artifact_prefix="$artifacts" ${FUZZ_ARGS:-} "$work" \
    "$root/tests/fuzz/corpus/$name" >"$build/logs/$target.log" 2>&1
}

for target in "${targets[@]}"; do
  [ -x "$build/tests/fuzz/$target" ] || { echo "fuzz: no target $target"; exit 2; }
done
# Every target runs for the same time, so batches of FUZZ_JOBS keep the cores busy.
jobs=${FUZZ_JOBS:-$(nproc)}
failed=()
for ((i = 0; i < ${#targets[@]}; i += jobs)); do
  batch=("${targets[@]:i:jobs}")
  pids=()
  for target in "${batch[@]}"; do
    run_one "$target" &
    pids+=($!)
  done
  for j in "${!batch[@]}"; do
    wait "${pids[$j]}" || failed+=("${batch[$j]}")
  done
done

for target in "${targets[@]}"; do
  log=$build/logs/$target.log
  # libFuzzer ends a bounded run with "Done N runs in T second(s)".
  line=$(grep -E '^Done [0-9]+ runs in [0-9]+ second' "$log" | tail -n 1 || true)
  if [ -n "$line" ]; then
    read -r _ runs _ _ secs _ <<<"$line"
    echo "$target: $runs executions in $secs s"
  else
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    echo "$target: ${runs:-?} executions (stopped early)"
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  for target in "${failed[@]}"; do
    echo "fuzz: $target FAILED; the end of $build/logs/$target.log:"
    tail -n 40 "$build/logs/$target.log"
  done
  exit 1
fi
echo "fuzz: ${#targets[@]} targets, no crashes"
