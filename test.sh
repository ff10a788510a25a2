#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run):
#   1. ./setup.sh: installs what is missing, builds build/ (warnings as errors);
#   2. the CTest suite in build/;
#   3. the same suite built with AddressSanitizer + UBSan (STRATSIM_SANITIZE=ON) in build-asan/,
#      where the tests that spawn the CLI run the sanitized binary;
#   4. tests/fuzz/run.sh: every libFuzzer target for FUZZ_SECONDS (default 5) seconds (longer
#      campaigns: tests/fuzz/run.sh SECONDS).
# Every step after setup runs even when an earlier one failed; exits 1 if any failed.
set -uo pipefail
cd "$(dirname "$0")"

./setup.sh || { echo "test.sh: setup failed"; exit 1; }

failed=()
step() {
  local name=$1
  shift
  echo "=== test.sh: $name"
  if ! "$@"; then
    failed+=("$name")
    return 1
  fi
}
sanitized_build() {
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTRATSIM_WERROR=ON \
    -DSTRATSIM_SANITIZE=ON >/dev/null &&
    cmake --build build-asan -j"$(nproc)"
}

step "ctest (build)" ctest --test-dir build --output-on-failure -j"$(nproc)"
if step "sanitized build (build-asan)" sanitized_build; then
  step "ctest (build-asan, ASan+UBSan)" ctest --test-dir build-asan --output-on-failure -j"$(nproc)"
fi
step "fuzz (tests/fuzz/run.sh)" tests/fuzz/run.sh "${FUZZ_SECONDS:-5}"

if [ ${#failed[@]} -gt 0 ]; then
  printf 'test.sh: FAILED: %s\n' "${failed[@]}"
  exit 1
fi
echo "test.sh: all steps passed"
