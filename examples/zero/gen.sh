#!/usr/bin/env bash
# Writes the three variants of one Adam training step of a 2-layer MLP on
# mesh [data=4] (see README.md): they differ only in the `on` annotations of
# the weights and of Adam's state (m, v), so `pjc explain` of each shows what
# sharding the optimizer state (ZeRO) or the parameters too (FSDP) costs.
set -euo pipefail
cd "$(dirname "$0")"
gen() { # NAME WEIGHT_SHARDING STATE_SHARDING TITLE
  local name=$1 ws=$2 ss=$3 title=$4
  sed -e "s/@W@/$ws/g" -e "s/@S@/$ss/g" -e "s/@TITLE@/$title/" template.pir.in > "$name.pir"
}
gen replicated "" "" "(a) data parallel: weights and Adam state replicated"
gen zero "" " on [data, _]" "(b) ZeRO: weights replicated, Adam state (m, v) split over data"
gen fsdp " on [data, _]" " on [data, _]" "(c) FSDP: weights and Adam state split over data"
