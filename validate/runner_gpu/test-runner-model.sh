#!/bin/sh
# stratsim-runner's control flow without a GPU (CTest runner-gpu-model): test-runner-model is
# the runner linked against a checking model of CUDA, cuBLAS and NCCL (test-cuda-model.c), which
# aborts on an out-of-bounds buffer, a wrong device, an unrecorded event or an NCCL call that
# would hang one thread. Plans from `stratsim validate plan` (data, tensor, pipeline, 2D/3D
# parallel) and the seed plans run in single-process mode; each measurements file must be
# accepted by `stratsim validate ingest`. The model's times are virtual: only shapes are checked.
#   test-runner-model.sh TEST_RUNNER_MODEL STRATSIM SOURCE_DIR
set -u
runner=$1
stratsim=$2
src=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
export MODEL_DEVICES=8

check() { # NAME PLAN [RUNNER OPTIONS...]: run, then ingest (unless --microbench-only)
  name=$1 plan=$2
  shift 2
  case " $* " in *" --microbench-only "*) ingest=no ;; *) ingest=yes ;; esac
  if ! "$runner" "$plan" -o "$tmp/$name.m.json" --warmup 1 --iterations 2 "$@" 2>"$tmp/$name.err"; then
    echo "FAIL: $name: the runner failed:"
    cat "$tmp/$name.err"
    failed=1
    return
  fi
  if [ $ingest = no ]; then
    # ingest needs timed iterations: only the format line is checked here
    if grep -q '"format":.*"stratsim-measurements"' "$tmp/$name.m.json"; then
      echo "ok: $name"
    else
      echo "FAIL: $name: not a measurements file"
      failed=1
    fi
    return
  fi
  if ! "$stratsim" validate ingest -p "$plan" --db "$tmp/v.db" "$tmp/$name.m.json" >"$tmp/$name.ingest" 2>&1; then
    echo "FAIL: $name: ingest refused the measurements:"
    cat "$tmp/$name.ingest"
    failed=1
    return
  fi
  echo "ok: $name: $(head -n 1 "$tmp/$name.ingest")"
}

for seed in dp2 pipeline2 tp4 single; do
  check "seed-$seed" "$src/tests/fuzz/corpus/plan/$seed.json"
done
gpt=gpt:layers=2,hidden=64,heads=4,seq=32,vocab=128,batch=16
mlp=mlp:layers=2,hidden=256,batch=64
while read -r name model_spec cluster strategy dtype; do
  if ! "$stratsim" validate plan -m "$model_spec" -c "$cluster" -s "$strategy" --dtype "$dtype" \
      --no-profiles -o "$tmp/$name.json" >/dev/null 2>"$tmp/$name.plan.err"; then
    echo "FAIL: $name: validate plan failed:"
    cat "$tmp/$name.plan.err"
    failed=1
    continue
  fi
  check "$name" "$tmp/$name.json"
done <<PLANS
dp-mlp $mlp dgx-a100:nodes=1,gpus_per_node=2 dp fp32
megatron-gpt $gpt dgx-a100:nodes=1 megatron:tp=2,pp=2,dp=2,mb=4 bf16
pipeline-gpt $gpt dgx-a100:nodes=1,gpus_per_node=4 megatron:tp=1,pp=2,dp=2,mb=4 fp16
summa-mlp $mlp dgx-a100:nodes=1,gpus_per_node=4 summa:q=2 tf32
3d-mlp $mlp dgx-a100:nodes=1 3d:q=2 fp32
PLANS

# the options' effect on the file's sections
check micro-only "$src/tests/fuzz/corpus/plan/dp2.json" --microbench-only
if grep -q '"rank":' "$tmp/micro-only.m.json" || ! grep -q '"kernels":' "$tmp/micro-only.m.json"; then
  echo "FAIL: --microbench-only: steps written or no kernels"
  failed=1
fi
check no-micro "$src/tests/fuzz/corpus/plan/dp2.json" --no-microbench
if grep -q '"kernels":' "$tmp/no-micro.m.json" || ! grep -q '"rank":' "$tmp/no-micro.m.json"; then
  echo "FAIL: --no-microbench: kernels written or no steps"
  failed=1
fi

# more ranks than devices: a clear refusal, exit 1
MODEL_DEVICES=4 "$runner" "$tmp/megatron-gpt.json" -o "$tmp/x.json" 2>"$tmp/few.err"
status=$?
if [ $status != 1 ] || ! grep -q "the plan has 8 ranks but this host has 4 CUDA device(s) visible" "$tmp/few.err"; then
  echo "FAIL: 8 ranks on 4 devices: exit $status: $(cat "$tmp/few.err")"
  failed=1
else
  echo "ok: 8 ranks on 4 devices: $(cat "$tmp/few.err")"
fi
exit $failed
