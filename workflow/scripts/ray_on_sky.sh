#!/usr/bin/env bash
# Start a Ray cluster over every node of the current SkyPilot task, run a command on the head node
# (rank 0) against it, and stop that cluster when the command ends.
#
#   ray_on_sky.sh COMMAND [ARGS...]      (the `run:` block of cloud/skypilot/lie.yaml, on every node)
#
# SkyPilot runs the same `run:` block on each node with SKYPILOT_NODE_RANK, SKYPILOT_NODE_IPS (one
# address a line, rank 0 first), SKYPILOT_NUM_NODES and SKYPILOT_NUM_GPUS_PER_NODE set. Rank 0 starts
# the head at the first address, waits until every node has joined, exports RAY_ADDRESS, runs COMMAND
# and stops its own Ray; every other rank waits for the head, joins it and blocks until it ends (exit 0),
# ignoring COMMAND. Each node already runs SkyPilot's own Ray (GCS on port 6380, which `ray stop` would
# kill too): this cluster is a second one, on the task's own ports (launch_lib.sh's ray_ports, keyed by
# SKYPILOT_TASK_ID, never 6380), stopped by ending the `ray start --block` processes this script started.
# Environment: RAY_PORT and RAY_PORT_BASE (as on Slurm; RAY_PORT=6380 is refused), LIE_GPUS_PER_NODE
# (default SKYPILOT_NUM_GPUS_PER_NODE, else 0), LIE_CPUS_PER_NODE (default: nproc), LIE_RAY_WAIT_S (default
# 600: nodes of one task may boot minutes apart) and LIE_RAY_POLL_S (default 5), LIE_RAY_HEAD_IP (default:
# the first line of SKYPILOT_NODE_IPS), RAY_AUTH_MODE (below).
# Ray (2.60) turns token authentication on for `ray start --head` on a machine that holds ~/.ray/auth_token
# (a local `ray.init()` writes one), and then refuses every node and driver without that token (another
# node's, or none): the mode is set for every process of the task, `disabled` (the nodes' private network
# is the boundary) unless RAY_AUTH_MODE=token with the same RAY_AUTH_TOKEN on every node (sky launch
# --secret RAY_AUTH_TOKEN).
set -euo pipefail

if [[ $# -lt 1 ]]; then
  echo "usage: $0 COMMAND [ARGS...]" >&2
  exit 2
fi
for var in SKYPILOT_NODE_RANK SKYPILOT_NODE_IPS SKYPILOT_NUM_NODES; do
  if [[ -z "${!var:-}" ]]; then
    echo "ray_on_sky.sh: not inside a SkyPilot task ($var is unset); run the command directly" >&2
    exit 2
  fi
done
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=launch_lib.sh
source "$here/launch_lib.sh"

rank=$SKYPILOT_NODE_RANK
num_nodes=$SKYPILOT_NUM_NODES
mapfile -t ips < <(printf '%s\n' "$SKYPILOT_NODE_IPS" | tr ' ' '\n' | sed '/^$/d')
if ((${#ips[@]} != num_nodes)); then
  echo "ray_on_sky.sh: SKYPILOT_NODE_IPS lists ${#ips[@]} address(es), SKYPILOT_NUM_NODES says $num_nodes" >&2
  exit 2
fi
head_ip=${LIE_RAY_HEAD_IP:-${ips[0]}}
if ((num_nodes > 1)) && [[ "$head_ip" == 127.* ]]; then
  echo "ray_on_sky.sh: the head node's address $head_ip is a loopback address, which the other $((num_nodes - 1)) node(s) cannot reach: set LIE_RAY_HEAD_IP to its cluster address (hostname -I on rank 0 lists them)" >&2
  exit 1
fi
export RAY_AUTH_MODE=${RAY_AUTH_MODE:-disabled}
if [[ "$RAY_AUTH_MODE" == token && -z "${RAY_AUTH_TOKEN:-}" ]]; then
  echo "ray_on_sky.sh: RAY_AUTH_MODE=token needs RAY_AUTH_TOKEN, the same on every node (sky launch --secret RAY_AUTH_TOKEN)" >&2
  exit 2
fi
sky_ray_ports "${SKYPILOT_TASK_ID:-lie}" || exit 2
export RAY_ADDRESS="$head_ip:$ray_port"
gpus=${LIE_GPUS_PER_NODE:-${SKYPILOT_NUM_GPUS_PER_NODE:-0}}
cpus=${LIE_CPUS_PER_NODE:-$(nproc)}
wait_s=${LIE_RAY_WAIT_S:-600}
poll_s=${LIE_RAY_POLL_S:-5}

cleanup() {
  for pid in $(jobs -p); do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT

if ((rank != 0)); then
  deadline=$((SECONDS + wait_s))
  until ray_head_listens "$head_ip" "$ray_port"; do
    if ((SECONDS >= deadline)); then
      echo "ray_on_sky.sh: rank $rank: no Ray head at $RAY_ADDRESS within ${wait_s}s" >&2
      exit 1
    fi
    sleep "$poll_s"
  done
  echo "ray_on_sky.sh: rank $rank joins $RAY_ADDRESS with $gpus GPU(s), $cpus CPU(s)"
  ray start --address="$RAY_ADDRESS" "${ray_port_args[@]}" --num-gpus="$gpus" --num-cpus="$cpus" --block &
  wait $! || true  # the head's end takes this node's Ray down with it: the task is done here
  echo "ray_on_sky.sh: rank $rank: the Ray cluster at $RAY_ADDRESS has ended"
  exit 0
fi

echo "ray_on_sky.sh: $num_nodes node(s) ${ips[*]}; head at $RAY_ADDRESS; $gpus GPU(s), $cpus CPU(s) each"
ray start --head --node-ip-address="$head_ip" --port="$ray_port" "${ray_head_port_args[@]}" "${ray_port_args[@]}" \
  --num-gpus="$gpus" --num-cpus="$cpus" --block &
head_pid=$!

# Wait until every node has joined, so that verl finds all GPUs when it starts.
deadline=$((SECONDS + wait_s))
until alive=$(ray_alive_nodes "$RAY_ADDRESS") && [[ "$alive" -ge "$num_nodes" ]]; do
  if ! kill -0 "$head_pid" 2>/dev/null; then
    echo "ray_on_sky.sh: the Ray head did not start at $RAY_ADDRESS (its output above)" >&2
    exit 1
  fi
  if ((SECONDS >= deadline)); then
    echo "ray_on_sky.sh: only ${alive:-0} of $num_nodes Ray nodes joined within ${wait_s}s" >&2
    exit 1
  fi
  sleep "$poll_s"
done
echo "ray_on_sky.sh: all $num_nodes Ray nodes are up"

"$@"
