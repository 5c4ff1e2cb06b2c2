#!/usr/bin/env bash
# Export (if JAX is present), compile and train the JAX GPT block stack with Megatron
# sharding on [data=2, model=2] under mpirun -np 4. STEPS (default 30) sets the step count.
cd "$(dirname "${BASH_SOURCE[0]}")" || exit 1
exec ../../scripts/jax-example.sh . train_step gpt.pir 4 "${STEPS:-30}" tokens targets
