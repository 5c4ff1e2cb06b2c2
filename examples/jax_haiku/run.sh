#!/usr/bin/env bash
# Export (if JAX and Haiku are present), compile and train the Haiku transformer on
# [data=2] under mpirun -np 2: hk.layer_stack blocks with hk.dropout, gradient clipping and
# optax.adamw (train_step). STEPS (default 20) sets the step count.
cd "$(dirname "${BASH_SOURCE[0]}")" || exit 1
exec ../../scripts/jax-example.sh . train_step haiku_adamw.pir 2 "${STEPS:-20}" tokens targets
