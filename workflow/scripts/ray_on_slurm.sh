#!/usr/bin/env bash
# Start a Ray cluster over every node of the current Slurm job, run a command on the head node
# against it, and stop the cluster when the command ends.
#
#   ray_on_slurm.sh COMMAND [ARGS...]      (inside sbatch/salloc, or a Snakemake Slurm job)
#
# The nodes come from `scontrol show job $SLURM_JOB_ID` (launch_lib.sh): inside a Snakemake job the
# job-step plugin has removed SLURM_JOB_NODELIST and the other allocation variables. One node per
# array element (`mapfile` over `scontrol show hostnames`). Each Ray node is one step of one task on
# one node with that node's GPUs and CPUs (srun --overlap), never one step across nodes.
# Every Ray process and the command run inside the Apptainer image when LIE_IMAGE is set
# (launch_lib.sh: LIE_APPTAINER_ARGS, default the GPUs, the working tree, the hub cache and the
# tree's src/), each through in_image.sh, which refuses an image whose `lie` differs from the tree's.
# The job's end time goes to verl as MLP_CURRENT_CAPACITY_BLOCK_EXPIRATION_TIMESTAMP (epoch
# seconds; verl's should_save_ckpt_esi saves a checkpoint ahead of it, trainer.esi_redundant_time
# earlier); exported before `ray start`, so that the trainer (a Ray actor) inherits it, like the
# NCCL_* settings of the caller.
# Every port a Ray node opens is the job's own (launch_lib.sh's ray_ports), so that two jobs can share a
# node. Environment: RAY_PORT (default 6379 + job id mod 1000), RAY_PORT_BASE (the other ports: default
# 20000 + (job id mod 1000) x 40), LIE_GPUS_PER_NODE (default
# SLURM_GPUS_ON_NODE or 4), LIE_CPUS_PER_NODE (default SLURM_CPUS_PER_TASK or 8: Ray's CPUs, shared
# by verl's workers, vLLM and the graders), LIE_RAY_WAIT_S (default 300) and LIE_RAY_POLL_S (seconds
# between its checks, default 5), LIE_RAY_HEAD_IP (default: the head node's address as
# `hostname --ip-address` gives it there).
set -euo pipefail

if [[ $# -lt 1 ]]; then
  echo "usage: $0 COMMAND [ARGS...]" >&2
  exit 2
fi
if [[ -z "${SLURM_JOB_ID:-}" ]]; then
  echo "ray_on_slurm.sh: not inside a Slurm allocation (SLURM_JOB_ID is unset); run the command directly" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=launch_lib.sh
source "$here/launch_lib.sh"

mapfile -t nodes < <(slurm_job_nodes)
num_nodes=${#nodes[@]}
if ((num_nodes < 1)); then
  echo "ray_on_slurm.sh: scontrol lists no nodes for job $SLURM_JOB_ID" >&2
  exit 1
fi
head_node=${nodes[0]}
ray_ports "$SLURM_JOB_ID"
port=$ray_port
gpus=${LIE_GPUS_PER_NODE:-${SLURM_GPUS_ON_NODE:-4}}
cpus=${LIE_CPUS_PER_NODE:-${SLURM_CPUS_PER_TASK:-8}}
wait_s=${LIE_RAY_WAIT_S:-300}
poll_s=${LIE_RAY_POLL_S:-5}
end=$(slurm_job_end_epoch)
if [[ -n "$end" ]]; then
  export MLP_CURRENT_CAPACITY_BLOCK_EXPIRATION_TIMESTAMP=$end
fi
image_commands
step=(srun --nodes=1 --ntasks=1 --overlap)
ray_step=("${step[@]}" --cpus-per-task="$cpus")
if ((gpus > 0)); then
  # A job that asked --gpus-per-node (train.sbatch) exports SLURM_GPUS_PER_NODE, which srun reads as
  # that option; srun refuses it beside --gres=gpu (Slurm >= 26.05, src/srun/opt.c): ask the same way.
  if [[ -n "${SLURM_GPUS_PER_NODE:-}" ]]; then
    ray_step+=(--gpus-per-node="$gpus")
  else
    ray_step+=(--gres="gpu:$gpus")
  fi
fi

# First IPv4 address of the head node (hostname --ip-address may list IPv6 ones too).
head_ip=${LIE_RAY_HEAD_IP:-$("${step[@]}" -w "$head_node" hostname --ip-address \
  | tr ' ' '\n' | grep -E '^[0-9]+(\.[0-9]+){3}$' | head -n 1)}
if [[ -z "$head_ip" ]]; then
  echo "ray_on_slurm.sh: no IPv4 address found for head node $head_node" >&2
  exit 1
fi
if ((num_nodes > 1)) && [[ "$head_ip" == 127.* ]]; then
  echo "ray_on_slurm.sh: head node $head_node resolves to the loopback address $head_ip (an /etc/hosts entry such as Debian's 127.0.1.1), which the other nodes cannot reach: set LIE_RAY_HEAD_IP to its cluster address (hostname -I on $head_node lists them)" >&2
  exit 1
fi
export RAY_ADDRESS="$head_ip:$port"
echo "ray_on_slurm.sh: $num_nodes node(s) ${nodes[*]}; head $head_node at $RAY_ADDRESS; $gpus GPU(s), $cpus CPU(s) each; job ends at ${end:-no time limit}"

cleanup() {
  for pid in $(jobs -p); do kill "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT

"${ray_step[@]}" -w "$head_node" "${in_image[@]}" \
  ray start --head --node-ip-address="$head_ip" --port="$port" "${ray_head_port_args[@]}" "${ray_port_args[@]}" \
  --num-gpus="$gpus" --num-cpus="$cpus" --block &

for ((i = 1; i < num_nodes; i++)); do
  "${ray_step[@]}" -w "${nodes[$i]}" "${in_image[@]}" \
    ray start --address="$RAY_ADDRESS" "${ray_port_args[@]}" --num-gpus="$gpus" --num-cpus="$cpus" --block &
done

# Wait until every node has joined, so that verl finds all GPUs when it starts.
deadline=$((SECONDS + wait_s))
until alive=$("${image_exec[@]}" python3 -c \
    "import ray; ray.init(address='$RAY_ADDRESS', logging_level='ERROR'); print(sum(n['Alive'] for n in ray.nodes()))" \
    2>/dev/null) && [[ "$alive" -ge "$num_nodes" ]]; do
  if ((SECONDS >= deadline)); then
    echo "ray_on_slurm.sh: only ${alive:-0} of $num_nodes Ray nodes joined within ${wait_s}s" >&2
    exit 1
  fi
  sleep "$poll_s"
done
echo "ray_on_slurm.sh: all $num_nodes Ray nodes are up"

"${in_image[@]}" "$@"
