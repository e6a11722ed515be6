#!/usr/bin/env bash
# The train rule's command: `train_job.sh ENGINE RUN [lie train options]`.
# verl inside a Slurm job: a Ray cluster over all its nodes (ray_on_slurm.sh), every process in the
# image LIE_IMAGE; verl elsewhere (one GPU box, profiles/local-gpu): `lie train` in the image (or
# natively without one) on LIE_GPUS_PER_NODE GPUs that no other job holds (gpu_slots.sh: the box may
# have more GPUs than a run takes, and generate/reflen jobs hold theirs); TRL: `lie train` directly. Each attempt starts with a header line (the rule appends every attempt to one
# log): LIE_ATTEMPT, the time, the host and the Slurm job.
set -euo pipefail
engine=${1:?engine}
run=${2:?run}
shift 2
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=launch_lib.sh
source "$here/launch_lib.sh"
echo "==== train $run, attempt ${LIE_ATTEMPT:-?}: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)${SLURM_JOB_ID:+, Slurm job $SLURM_JOB_ID}"
if [[ "$engine" == verl && -n "${SLURM_JOB_ID:-}" ]]; then
  exec "$here/ray_on_slurm.sh" lie train "$run" --engine verl --nnodes "$(slurm_job_field NumNodes)" "$@"
fi
image_commands
if [[ "$engine" == verl ]]; then
  exec "$here/gpu_slots.sh" "${LIE_GPUS_PER_NODE:-0}" "${in_image[@]}" lie train "$run" --engine verl "$@"
fi
exec lie train "$run" --engine "$engine" "$@"
