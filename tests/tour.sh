#!/bin/sh
# The README tour, top to bottom, on a fresh checkout (issue 17, "Acceptance"): clones the
# source tree's committed state into a temporary directory, puts the built binaries in its
# build/, extracts every `build/stratsim ...` command of README.md's "A short tour of the CLI"
# (continuation lines joined, comments dropped), shrinks the budgets, runs them in order from
# the checkout and checks that each exits 0 and that `git status` is clean afterwards (every
# output under results/, which .gitignore covers).
#
#   tour.sh BUILD_DIR SOURCE_DIR
#
# Left out, as the README says: `bench` (minutes: it measures the engine and the search) and
# `validate ingest` (its measurements come from a GPU run of the plan with stratsim-runner).
# Budgets: `--budget 2000` -> 200 evaluations, `--budget 60s` -> 3s.
set -u
build=$(cd "$1" && pwd) || exit 1
src=$(cd "$2" && pwd) || exit 1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stratsim-tour.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
checkout=$tmp/checkout
git clone -q "$src" "$checkout" || { echo "tour: cannot clone $src" >&2; exit 1; }
mkdir -p "$checkout/build"
for b in stratsim stratsim-cpu-runner stratsim-runner; do
  [ -x "$build/$b" ] && ln -s "$build/$b" "$checkout/build/$b"
done
# The tour's commands, one per line.
awk '/^## A short tour of the CLI/ {on = 1; next} on && /^## / {exit} on && /^Arguments:/ {exit}
     on {print}' "$checkout/README.md" |
  awk '{ line = $0
         if (cont) { sub(/^[ \t]+/, "", line); cmd = cmd " " line }
         else if (line ~ /^    build\/stratsim /) { sub(/^[ \t]+/, "", line); cmd = line }
         else next
         cont = (cmd ~ /\\[ \t]*$/)
         if (cont) { sub(/\\[ \t]*$/, "", cmd); next }
         sub(/[ \t]+#.*$/, "", cmd); print cmd; cmd = "" }' >"$tmp/commands"
count=$(wc -l <"$tmp/commands")
if [ "$count" -lt 20 ]; then
  echo "tour: found only $count commands in README.md's tour" >&2
  exit 1
fi
failed=0
ran=0
cd "$checkout" || exit 1
while IFS= read -r cmd; do
  case $cmd in
    "build/stratsim bench"*|"build/stratsim validate ingest"*) echo "tour: skipped: $cmd"; continue ;;
  esac
  small=$(printf '%s' "$cmd" | sed -e 's/--budget 2000/--budget 200/' -e 's/--budget 60s/--budget 3s/')
  start=$(date +%s)
  sh -c "$small" >"$tmp/out" 2>"$tmp/err" </dev/null
  rc=$?
  if [ "$rc" -ne 0 ]; then
    echo "tour: FAILED (exit $rc): $small" >&2
    tail -5 "$tmp/err" >&2
    failed=1
    break
  fi
  ran=$((ran + 1))
  echo "tour: ok ($(( $(date +%s) - start )) s): $small"
done <"$tmp/commands"
status=$(git status --porcelain)
if [ -n "$status" ]; then
  echo "tour: the checkout is not clean after the tour:" >&2
  echo "$status" >&2
  failed=1
fi
[ "$failed" -eq 0 ] && echo "tour: $ran commands ran, checkout clean"
exit $failed
