#!/usr/bin/env bash
# Start a Ray cluster over every node of the current Slurm allocation, run a command on the head
# node against it, and stop the cluster when the command ends.
#
#   ray_on_slurm.sh COMMAND [ARGS...]      (inside sbatch/salloc, or a Snakemake Slurm job)
#
# One node per array element: `mapfile` over `scontrol show hostnames` (verl's example writes
# nodes_array=("$nodes"), which puts every name into one element and starts no worker).
# Every Ray process and the command run inside the Apptainer image when LIE_IMAGE is set (with
# LIE_APPTAINER_ARGS, default "--nv --bind $PWD --bind $HF_HOME": the GPUs, the working tree and
# the hub cache). Environment: RAY_PORT (default 6379 + job id mod 1000), LIE_GPUS_PER_NODE (default
# SLURM_GPUS_ON_NODE or 4), LIE_CPUS_PER_NODE (default SLURM_CPUS_PER_TASK or 8: Ray's CPUs, shared
# by verl's workers, vLLM and the graders), LIE_RAY_WAIT_S (default 300).
set -euo pipefail

if [[ $# -lt 1 ]]; then
  echo "usage: $0 COMMAND [ARGS...]" >&2
  exit 2
fi
if [[ -z "${SLURM_JOB_NODELIST:-}" ]]; then
  echo "ray_on_slurm.sh: not inside a Slurm allocation (SLURM_JOB_NODELIST is unset); run the command directly" >&2
  exit 2
fi

mapfile -t nodes < <(scontrol show hostnames "$SLURM_JOB_NODELIST")
num_nodes=${#nodes[@]}
head_node=${nodes[0]}
port=${RAY_PORT:-$((6379 + ${SLURM_JOB_ID:-0} % 1000))}
gpus=${LIE_GPUS_PER_NODE:-${SLURM_GPUS_ON_NODE:-4}}
cpus=${LIE_CPUS_PER_NODE:-${SLURM_CPUS_PER_TASK:-8}}
wait_s=${LIE_RAY_WAIT_S:-300}

in_image=()
if [[ -n "${LIE_IMAGE:-}" ]]; then
  read -r -a apptainer_args <<< "${LIE_APPTAINER_ARGS:---nv --bind $PWD --bind ${HF_HOME:-$HOME}}"
  in_image=(apptainer exec "${apptainer_args[@]}" "$LIE_IMAGE")
fi

# First IPv4 address of the head node (hostname --ip-address may list IPv6 ones too).
head_ip=$(srun --nodes=1 --ntasks=1 --overlap -w "$head_node" hostname --ip-address \
  | tr ' ' '\n' | grep -E '^[0-9]+(\.[0-9]+){3}$' | head -n 1)
if [[ -z "$head_ip" ]]; then
  echo "ray_on_slurm.sh: no IPv4 address found for head node $head_node" >&2
  exit 1
fi
export RAY_ADDRESS="$head_ip:$port"
echo "ray_on_slurm.sh: $num_nodes node(s) ${nodes[*]}; head $head_node at $RAY_ADDRESS; $gpus GPU(s), $cpus CPU(s) each"

cleanup() {
  for pid in $(jobs -p); do kill "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT

srun --nodes=1 --ntasks=1 --overlap -w "$head_node" "${in_image[@]}" \
  ray start --head --node-ip-address="$head_ip" --port="$port" --num-gpus="$gpus" --num-cpus="$cpus" --block &

for ((i = 1; i < num_nodes; i++)); do
  srun --nodes=1 --ntasks=1 --overlap -w "${nodes[$i]}" "${in_image[@]}" \
    ray start --address="$RAY_ADDRESS" --num-gpus="$gpus" --num-cpus="$cpus" --block &
done

# Wait until every node has joined, so that verl finds all GPUs when it starts.
deadline=$((SECONDS + wait_s))
until alive=$("${in_image[@]}" python3 -c \
    "import ray; ray.init(address='$RAY_ADDRESS', logging_level='ERROR'); print(sum(n['Alive'] for n in ray.nodes()))" \
    2>/dev/null) && [[ "$alive" -ge "$num_nodes" ]]; do
  if ((SECONDS >= deadline)); then
    echo "ray_on_slurm.sh: only ${alive:-0} of $num_nodes Ray nodes joined within ${wait_s}s" >&2
    exit 1
  fi
  sleep 5
done
echo "ray_on_slurm.sh: all $num_nodes Ray nodes are up"

"${in_image[@]}" "$@"
