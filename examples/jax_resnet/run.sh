#!/usr/bin/env bash
# Export (if JAX is present), compile and train the small ResNet-18 (32x32 images) with
# data parallelism on [data=4] under mpirun -np 4. STEPS (default 10) sets the step count.
# ResNet-50 at 224x224 is exported and compiled by resnet50.sh (not trained: see README.md).
cd "$(dirname "${BASH_SOURCE[0]}")" || exit 1
exec ../../scripts/jax-example.sh . train_step resnet18_small.pir 4 "${STEPS:-10}" images labels
