#!/bin/sh
# Writes strategies/vgg13-nN-tpT.json: AutoDDL's "Megatron-like" baseline for VGG13 (Sec. 5.2):
# the convolutions data parallel over all N nodes, the three dense layers split Megatron's way
# (fc1 and fc3 by output features, fc2 by input features) over T nodes and data parallel over
# the N/T groups. Strategy JSON format: model/STRATEGY.md. Run from this folder.
set -eu
mkdir -p strategies
for n in 16 32 64; do
  for tp in 2 4 8; do
    devices=$(seq -s ', ' 0 $((n - 1)))
    f=strategies/vgg13-n$n-tp$tp.json
    {
      printf '{\n  "format": "stratsim-strategy-1",\n'
      printf '  "name": "vgg13 convs dp=%d, dense layers dp=%d x tp=%d",\n' "$n" $((n / tp)) "$tp"
      printf '  "dtype": "fp32", "schedule": "1f1b", "num_microbatches": 1, "num_stages": 1,\n'
      printf '  "meshes": [\n'
      printf '    { "shape": [%d], "devices": [%s] },\n' "$n" "$devices"
      printf '    { "shape": [%d, %d], "devices": [%s] }\n  ],\n' $((n / tp)) "$tp" "$devices"
      printf '  "default": { "mesh": 0, "stage": 0, "split": ["@sample"] },\n'
      printf '  "ops": [\n'
      printf '    { "op": "fc1", "mesh": 1, "stage": 0, "split": ["@sample", "@tp"] },\n'
      printf '    { "op": "fc2", "mesh": 1, "stage": 0, "split": ["@sample", "@tp"] },\n'
      printf '    { "op": "fc3", "mesh": 1, "stage": 0, "split": ["@sample", "@tp"] }\n'
      printf '  ]\n}\n'
    } > "$f"
  done
done
