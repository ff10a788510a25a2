#!/usr/bin/env bash
# Memcheck: end-to-end stratsim commands under valgrind, failing on any memory error (invalid
# read or write, use of uninitialised values, bad free) or definite leak. Registered with CTest
# by tests/CMakeLists.txt when CMake finds valgrind (and not in sanitizer builds, which valgrind
# cannot run). Each command must also exit with the status it is expected to: 0, or 2 for the
# refusals; valgrind's own failure status is 1, so an error there fails the check either way.
#   memcheck.sh VALGRIND STRATSIM SOURCE_DIR
set -u
valgrind=$1
stratsim=$2
src=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/stratsim-memcheck-XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1

# GSlice would hide GLib containers from the leak checker; gc-friendly clears freed memory.
export G_SLICE=always-malloc G_DEBUG=gc-friendly
failures=0

# check EXPECTED_STATUS ARGS...: runs `stratsim ARGS` under valgrind.
check() {
  local want=$1
  shift
  "$valgrind" -q --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite \
    --show-possibly-lost=no --log-file="$work/valgrind.log" "$stratsim" "$@" >"$work/out" 2>"$work/err"
  local got=$?
  if [ "$got" -ne "$want" ] || [ -s "$work/valgrind.log" ]; then
    echo "FAIL (exit $got, expected $want): stratsim $*"
    cat "$work/valgrind.log" "$work/err"
    failures=$((failures + 1))
  else
    echo "ok: stratsim $*"
  fi
}

db=$work/memcheck.db
cat >"$work/sweep.json" <<'EOF'
{"name": "memcheck", "models": ["gpt:layers=4,hidden=256,heads=4,seq=128,vocab=1000,batch={batch}"],
 "clusters": ["dgx-a100:nodes=2"], "strategies": ["megatron:tp={tp},pp=2,mb=1", "dp"],
 "axes": {"batch": [16], "tp": [1, 2]}, "outputs": {"charts": [], "tables": []}}
EOF

check 0 simulate --model gpt3-125m --cluster dgx-a100:nodes=2 \
  --strategy megatron:tp=4,pp=2,dp=2,mb=4,schedule=1f1b --db "$db" --trace "$work/t.json"
check 0 simulate --model gpt3-125m --cluster dgx-a100:nodes=2 \
  --strategy megatron:tp=2,pp=2,dp=4,mb=2,zero=3,recompute=selective,sp=1 --collectives step \
  --json --db "$db"
check 0 explain --model gpt3-125m --cluster dgx-a100:nodes=2 \
  --strategy megatron:tp=2,pp=2,dp=4,mb=2,zero=1 --collectives step --json --db "$db"
check 0 explain --model vgg16 --cluster flexflow-p100 --strategy dp --db "$db"
check 0 search --model alexnet --cluster flexflow-k80:nodes=2 --algo mcmc --budget 20 \
  --threads 2 --seed 1 --db "$db" --out "$work/winner.json"
check 0 simulate --model alexnet --cluster flexflow-k80:nodes=2 --strategy "$work/winner.json" \
  --db "$db"
check 0 sweep "$work/sweep.json" --db "$db" --threads 2 --no-charts
check 0 report --scenario memcheck --format json --db "$db"
check 0 collective --kind all_reduce --bytes 64M --ranks 16 --cluster dgx-a100:nodes=2
check 0 calibrate --cluster dgx-a100:nodes=2 --name lab --db "$db" \
  "$src/tests/data/nccl-tests/all_reduce_perf.2x8.txt"
check 0 db check --db "$db"
check 0 reshard "$src/scenarios/crossmesh-table2/table2.json" --out "$work/reshard"
check 0 reshard --src-mesh 2x4 --src RS01R --dst-mesh 2x4 --dst S01RR --order dfs
check 0 simulate --model "$src/scenarios/crossmesh-table2/iteration/move.json" \
  --cluster aws-p3.8xlarge:nodes=4 --strategy "$src/scenarios/crossmesh-table2/iteration/case1.json" \
  --crossmesh local_allgather --crossmesh-order randomized_greedy --db "$db"
check 2 reshard --src-mesh 2x4 --src S0R --dst-mesh 2x4 --dst S0RR
# refusals and bad input: error paths free what they took
check 2 simulate --model mlp:layers=200,hidden=64,batch=1000000 --cluster dgx-a100 \
  --strategy megatron:tp=1,pp=1,dp=1,mb=1 --db "$db"
check 2 simulate --model "$src/model/examples/mlp2.json" --cluster dgx-a100 \
  --strategy "$work/missing.json" --db "$db"
check 2 simulate --model gpt3-125m --cluster dgx-a100 --strategy 3d:q=2097152 --db "$db"

if [ "$failures" -gt 0 ]; then
  echo "memcheck: $failures command(s) failed"
  exit 1
fi
echo "memcheck: all commands clean"
