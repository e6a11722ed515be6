#!/usr/bin/env bash
# Run a command on N GPUs of this machine that no other job holds: `gpu_slots.sh N COMMAND [ARGS...]`.
#
# On one GPU box (profiles/local-gpu) Snakemake's `--resources gpus=K` keeps the jobs' total within
# K, but it does not say which GPU each job gets: every vLLM job would start on GPU 0. Here each GPU
# is a lock file; the job takes N free ones (flock, held until the command exits, released even if
# it is killed) and sees only those (CUDA_VISIBLE_DEVICES). Under Slurm (which assigns GPUs itself),
# for N = 0 and without nvidia-smi the command runs as it is. Environment: LIE_GPUS (default: nvidia-smi -L count),
# LIE_GPU_LOCK_DIR (default /tmp/lie-gpu-locks-$UID), LIE_GPU_WAIT_S (default 3600).
set -euo pipefail
want=${1:?usage: gpu_slots.sh N COMMAND [ARGS...]}
shift
# Under Slurm, for N = 0, and on a machine with no NVIDIA GPU (no nvidia-smi, LIE_GPUS unset: a CPU
# machine, where verl's train job runs on its CPU backend) the command runs as it is.
if [[ -n "${SLURM_JOB_ID:-}" || "$want" -le 0 ]] || { [[ -z "${LIE_GPUS:-}" ]] && ! command -v nvidia-smi >/dev/null; }; then
  exec "$@"
fi
total=${LIE_GPUS:-$(nvidia-smi -L | grep -c '^GPU ')}
if ((want > total)); then
  echo "gpu_slots.sh: the job needs $want GPU(s), this machine has $total" >&2
  exit 1
fi
dir=${LIE_GPU_LOCK_DIR:-/tmp/lie-gpu-locks-$(id -u)}
mkdir -p "$dir"
deadline=$((SECONDS + ${LIE_GPU_WAIT_S:-3600}))
while true; do
  got=() fds=()
  for ((i = 0; i < total && ${#got[@]} < want; i++)); do
    exec {fd}>"$dir/$i.lock"
    if flock -n "$fd"; then
      got+=("$i") fds+=("$fd")
    else
      exec {fd}>&-
    fi
  done
  ((${#got[@]} == want)) && break
  for fd in "${fds[@]}"; do
    exec {fd}>&-
  done
  if ((SECONDS >= deadline)); then
    echo "gpu_slots.sh: no $want free GPU(s) of $total within ${LIE_GPU_WAIT_S:-3600} s" >&2
    exit 1
  fi
  sleep 5
done
CUDA_VISIBLE_DEVICES=$(IFS=,; echo "${got[*]}")
export CUDA_VISIBLE_DEVICES
echo "gpu_slots.sh: GPU(s) $CUDA_VISIBLE_DEVICES" >&2
exec "$@"
