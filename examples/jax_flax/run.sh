#!/usr/bin/env bash
# Export (if JAX and Flax are present), compile and train the Flax transformer on [data=2]
# under mpirun -np 2: optax.MultiSteps(adam) with dropout (train_step), or INNER=1 for the
# fori_loop inner SGD loop (train_step_inner). STEPS (default 20) sets the step count.
cd "$(dirname "${BASH_SOURCE[0]}")" || exit 1
if [ "${INNER:-0}" = 1 ]; then
  exec ../../scripts/jax-example.sh . train_step_inner flax_inner.pir 2 "${STEPS:-20}" tokens targets
fi
exec ../../scripts/jax-example.sh . train_step flax_multisteps.pir 2 "${STEPS:-20}" tokens targets
