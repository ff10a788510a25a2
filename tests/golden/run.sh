#!/bin/sh
# Golden-output test (SimGrid .tesh style): a fixed set of commands whose JSON/CSV outputs must be
# byte for byte the checked-in files tests/golden/NAME.out (issue 13, "Acceptance": every
# prediction, explain output, search result and sweep table is what it was before a refactor).
# Wall-clock fields (sim_wall_s) and simulate --json's run_id are removed; databases live in a temporary directory, so no path
# or run id reaches the outputs.
#
#   run.sh STRATSIM SOURCE_DIR           compare (exit 1 on the first difference, with a diff)
#   run.sh STRATSIM SOURCE_DIR --update  rewrite the .out files (only for a change that moves
#                                        predictions on purpose: say by how much in the commit)
set -u
bin=$1
src=$2
mode=${3:-check}
golden=$src/tests/golden
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stratsim-golden.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
db=$tmp/golden.db
failed=0

# case NAME COMMAND...: runs the command (exit status must be 0), filters wall-clock fields.
case_() {
  name=$1
  shift
  if ! "$@" >"$tmp/$name.raw" 2>"$tmp/$name.err"; then
    echo "golden $name: command failed: $*" >&2
    cat "$tmp/$name.err" >&2
    failed=1
    return
  fi
  compare "$name" "$*"
}

# file_case NAME FILE COMMAND...: runs the command (exit status must be 0; its output is not
# compared: it holds wall-clock times and paths), compares the FILE it writes.
file_case() {
  name=$1
  file=$2
  shift 2
  if ! "$@" >"$tmp/$name.log" 2>&1 || ! cp "$file" "$tmp/$name.raw"; then
    echo "golden $name: command failed: $*" >&2
    cat "$tmp/$name.log" >&2
    failed=1
    return
  fi
  compare "$name" "$*"
}

compare() {
  name=$1
  sed -e 's/,"sim_wall_s":[-+0-9.eE]*//g' -e '/^[[:space:]]*"sim_wall_s":/d' \
    -e 's/,"run_id":[0-9a-z]*//g' \
    "$tmp/$name.raw" >"$tmp/$name.out"
  if [ "$mode" = --update ]; then
    cp "$tmp/$name.out" "$golden/$name.out"
  elif ! cmp -s "$tmp/$name.out" "$golden/$name.out"; then
    echo "golden $name: output differs from tests/golden/$name.out: $2" >&2
    diff "$golden/$name.out" "$tmp/$name.out" | head -20 >&2
    failed=1
  else
    echo "ok golden $name"
  fi
}

gpt=gpt:layers=4,hidden=1024,heads=16,seq=512,batch=16
gpt8=gpt:layers=8,hidden=1024,heads=16,seq=512,batch=32

case_ sim-gpt-1f1b "$bin" simulate -m $gpt -c dgx-a100:nodes=2 -s megatron:tp=2,pp=2,dp=4,mb=4 --json --db "$db"
case_ sim-gpt-interleaved "$bin" simulate -m $gpt8 -c dgx-h100:nodes=2 \
  -s megatron:tp=2,pp=4,dp=2,mb=2,schedule=interleaved,vp=2 --json --db "$db"
case_ sim-gpt-eager "$bin" simulate -m $gpt8 -c dgx-a100 -s megatron:tp=2,pp=2,mb=2,schedule=eager1f1b,wdelay=1 --json --db "$db"
case_ sim-gpt-zero-recompute "$bin" simulate -m $gpt8 -c dgx-a100:nodes=2 \
  -s megatron:tp=2,pp=1,dp=8,mb=2,zero=2,recompute=full,sp=1 --json --db "$db"
case_ sim-gpt-selective-zero3 "$bin" simulate -m $gpt -c dgx-a100 -s megatron:tp=2,dp=4,mb=4,zero=3,recompute=selective,dtype=fp16 --json --db "$db"
case_ sim-gpt-step "$bin" simulate -m $gpt -c dgx-a100:nodes=2 -s megatron:tp=4,pp=2,dp=2,mb=4 --collectives step --json --db "$db"
case_ sim-gpt-no-symmetry "$bin" simulate -m $gpt -c dgx-a100:nodes=2 -s megatron:tp=2,pp=2,dp=4,mb=4 --no-symmetry --json --db "$db"
case_ sim-gpt-crossmesh "$bin" simulate -m $gpt8 -c dgx-a100:nodes=2 -s megatron:tp=4,pp=2,dp=2,mb=2 \
  --crossmesh local_allgather --crossmesh-order greedy --json --db "$db"
case_ sim-mlp-dp "$bin" simulate -m mlp -c dgx-a100 -s dp --json --db "$db"
case_ sim-resnet-p100 "$bin" simulate -m resnet-101 -c flexflow-p100 -s dp --json --db "$db"
case_ sim-mlp-file "$bin" simulate -m "$src/model/examples/mlp2.json" -c aws-p3.8xlarge -s dp --collectives step --json --db "$db"
# --no-store: the same prediction as the stored run above, nothing written.
case_ sim-gpt-no-store "$bin" simulate -m $gpt -c dgx-a100:nodes=2 -s megatron:tp=2,pp=2,dp=4,mb=4 --json --no-store --db "$db"
case_ explain-gpt "$bin" explain -m $gpt -c dgx-a100:nodes=2 -s megatron:tp=2,pp=2,dp=4,mb=4 --json --db "$db"
case_ explain-gpt-step "$bin" explain -m $gpt -c dgx-a100:nodes=2 -s megatron:tp=4,pp=2,dp=2,mb=4 --collectives step --json --db "$db"
case_ explain-mlp "$bin" explain -m mlp -c dgx-a100 -s dp --json --db "$db"
case_ search-mcmc "$bin" search -m mlp -c dgx-a100 --algo mcmc --budget 50 --threads 1 --seed 3 --json --db "$db"
case_ search-mcmc-no-store "$bin" search -m mlp -c dgx-a100 --algo mcmc --budget 50 --threads 1 --seed 3 --json --no-store --db "$db"
case_ search-cd "$bin" search -m mlp -c dgx-a100:nodes=2 --algo cd --budget 40 --threads 1 --seed 7 --json --db "$db"
case_ search-grid "$bin" search -m $gpt -c dgx-a100:nodes=2 --algo grid --budget 200 --threads 1 --seed 1 --json --db "$db"
case_ search-dp "$bin" search -m $gpt8 -c dgx-a100:nodes=2 --algo dp --budget 200 --threads 1 --seed 1 --json --db "$db"
file_case trace "$tmp/trace.json" "$bin" simulate -m $gpt -c dgx-a100:nodes=2 -s megatron:tp=2,pp=2,dp=4,mb=2 \
  --collectives step --trace "$tmp/trace.json" --db "$db"
# Timeline chart data (scenarios/scn_timeline.c); gnuplot kept off PATH: only the .dat counts.
file_case timeline "$tmp/timeline/timeline-0.dat" env PATH=/nonexistent "$bin" sweep \
  "$golden/sweep-timeline.json" --db "$db" -o "$tmp/timeline"
# The sweep's own lines hold wall-clock time and the database path: reports below compare it.
if ! "$bin" sweep "$golden/sweep-small.json" --no-charts --db "$db" >"$tmp/sweep.log" 2>&1; then
  echo "golden sweep: failed" >&2
  cat "$tmp/sweep.log" >&2
  failed=1
fi
case_ sweep-json "$bin" report --scenario golden-small --format json --db "$db"
case_ sweep-csv "$bin" report --scenario golden-small --format csv --db "$db"
case_ plan-mlp "$bin" validate plan -m mlp -c dgx-a100 -s dp --db "$db"
case_ plan-gpt "$bin" validate plan -m gpt:layers=2,hidden=512,heads=8,seq=256,batch=8 -c dgx-a100:nodes=2 \
  -s megatron:tp=2,pp=2,dp=4,mb=2,zero=1 --db "$db"
case_ collective-ar "$bin" collective -k all_reduce -b 64M -r 16 -c dgx-a100:nodes=2 --json --db "$db"
case_ collective-a2a "$bin" collective -k all_to_all -b 1M -r 8 -c dgx-h100 --json --db "$db"
case_ collective-ag "$bin" collective -k all_gather -b 4K -r 32 -c flexflow-k80 --json --db "$db"

exit $failed
