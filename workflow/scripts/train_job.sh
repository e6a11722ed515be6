#!/usr/bin/env bash
# The train rule's command: `train_job.sh ENGINE RUN [lie train options]`.
# verl inside a Slurm allocation: a Ray cluster over all its nodes (ray_on_slurm.sh), every process
# in the image LIE_IMAGE; verl elsewhere: `lie train` in the image (or natively without one);
# TRL: `lie train` directly.
set -euo pipefail
engine=${1:?engine}
run=${2:?run}
shift 2
here=$(cd "$(dirname "$0")" && pwd)
if [[ "$engine" == verl && -n "${SLURM_JOB_NODELIST:-}" ]]; then
  exec "$here/ray_on_slurm.sh" lie train "$run" --engine verl --nnodes "${SLURM_JOB_NUM_NODES:-1}" "$@"
fi
if [[ "$engine" == verl && -n "${LIE_IMAGE:-}" ]]; then
  read -r -a apptainer_args <<< "${LIE_APPTAINER_ARGS:---nv --bind $PWD --bind ${HF_HOME:-$HOME}}"
  exec apptainer exec "${apptainer_args[@]}" "$LIE_IMAGE" lie train "$run" --engine verl "$@"
fi
exec lie train "$run" --engine "$engine" "$@"
