#!/usr/bin/env bash
# Export (if JAX is present), compile and train the JAX MLP on [data=4] under mpirun -np 4.
# ADAM=1 runs the optax Adam step instead of SGD. STEPS (default 40) sets the step count.
cd "$(dirname "${BASH_SOURCE[0]}")" || exit 1
if [ "${ADAM:-0}" = 1 ]; then
  exec ../../scripts/jax-example.sh . train_step_adam mlp_adam.pir 4 "${STEPS:-40}" x labels
fi
exec ../../scripts/jax-example.sh . train_step mlp.pir 4 "${STEPS:-40}" x labels
