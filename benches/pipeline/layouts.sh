#!/usr/bin/env bash
# Pipeline parallelism combined with data and tensor parallelism (issue 20):
# pjc explain's peak memory per device for the Megatron MLP stack of
# mlp_tp_stack.pir (8 residual blocks 256 wide, 1024 hidden, batch 256) on
# [data=2, stage=2, model=2], unpipelined and pipelined (GPipe and 1F1B), with
# the blocks split over model (tensor parallelism) and without (the same
# program with its model splits removed: data and pipeline parallelism only).
# Prints one markdown table. Uses PJC (default target/release/pjc). Memory
# only: 8 processes on a 2-core machine say nothing about speed.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PJC=${PJC:-$ROOT/target/release/pjc}
W=${WORK:-/tmp/pjc-pipeline-layouts}
mkdir -p "$W"
TP=$ROOT/benches/pipeline/mlp_tp_stack.pir
DP=$W/mlp_dp_stack.pir
sed -e 's/\[stage, _, model\]/[stage, _, _]/g' -e 's/\[stage, model, _\]/[stage, _, _]/g' -e 's/\[stage, model\]/[stage, _]/g' "$TP" > "$DP"
echo "| schedule | M | bubble | peak B/device, data x pipeline | peak B/device, data x pipeline x tensor (model=2) |"
echo "|---|---:|---|---:|---:|"
peak() { "$PJC" explain "$@" 2>/dev/null | sed -n 's/^peak memory per device: \([0-9]*\) bytes.*/\1/p'; }
for m in plain 2 4 8 1f1b:4 1f1b:8; do
  flags=()
  case $m in
    plain) ;;
    1f1b:*) flags=(--pipeline stage --microbatches "${m#1f1b:}" --schedule 1f1b) ;;
    *) flags=(--pipeline stage --microbatches "$m") ;;
  esac
  bubble=$( ( "$PJC" explain "$TP" "${flags[@]}" 2>/dev/null || true ) | sed -n 's/.*bubble fraction \([^;]*\).*/\1/p' | head -1)
  sched=gpipe; [[ $m == 1f1b:* ]] && sched=1f1b; [[ $m == plain ]] && sched=unpipelined
  mm=${m#1f1b:}; [[ $m == plain ]] && mm=—
  echo "| $sched | $mm | ${bubble:-—} | $(peak "$DP" "${flags[@]}") | $(peak "$TP" "${flags[@]}" || true) |"
done
