# Sourced by train_job.sh and ray_on_slurm.sh: the current Slurm job and the image's command line.
#
# The job is read from the controller (`scontrol show job`), not from SLURM_* variables: Snakemake's
# job-step plugin removes every SLURM_* variable but the job id before it starts a job, so inside a
# Snakemake train job SLURM_JOB_NODELIST and SLURM_JOB_NUM_NODES are gone.

# The job's record, one line of Key=Value words (read once, then kept).
slurm_job_record() {
  if [[ -z "${_lie_job_record:-}" ]]; then
    _lie_job_record=$(scontrol show job -o "${SLURM_JOB_ID:?not inside a Slurm job}")
  fi
  printf '%s\n' "$_lie_job_record"
}

# slurm_job_field KEY: the value of KEY= in the job's record (NodeList, NumNodes, EndTime, ...).
slurm_job_field() {
  slurm_job_record | tr ' ' '\n' | sed -n "s/^$1=//p" | head -n 1
}

# The job's nodes, one a line.
slurm_job_nodes() {
  scontrol show hostnames "$(slurm_job_field NodeList)"
}

# The job's end (EndTime, the controller's local time) in seconds since the epoch; nothing when the
# job has no time limit.
slurm_job_end_epoch() {
  local end
  end=$(slurm_job_field EndTime)
  if [[ -n "$end" && "$end" != Unknown && "$end" != None ]]; then
    date -d "$end" +%s
  fi
}

# image_commands: two arrays for running in the image LIE_IMAGE (both empty without one).
#   image_exec  apptainer exec with LIE_APPTAINER_ARGS (default: the GPUs, the working tree, the hub
#               cache, and the tree's src/ first on PYTHONPATH, so that the image runs this
#               checkout's code rather than the copy it was built with), then LIE_APPTAINER_BINDS
#               (the Snakefile's: the outdir, its real path and cluster.binds; lie.config.binds)
#   in_image    the same through workflow/scripts/in_image.sh, which checks that first
image_commands() {
  image_exec=() in_image=()
  if [[ -n "${LIE_IMAGE:-}" ]]; then
    local args
    read -r -a args <<< "${LIE_APPTAINER_ARGS:---nv --bind $PWD --bind ${HF_HOME:-$HOME} --env PYTHONPATH=$PWD/src} ${LIE_APPTAINER_BINDS:-}"
    image_exec=(apptainer exec "${args[@]}" "$LIE_IMAGE")
    in_image=("${image_exec[@]}" "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/in_image.sh")
  fi
}

# ray_ports JOB_KEY: every port a Ray node listens on, derived from the job (an integer: the Slurm job
# id), so that two jobs on one node (two 4-GPU jobs on an 8-GPU node) never collide. Sets ray_port (the
# GCS, RAY_PORT or 6379 + key mod 1000) and ray_port_args (the head's fixed ports: dashboard, Ray
# client; and every node's: dashboard agent, metrics, runtime-env agent, node and object manager), a
# block of 10 at 20000 + (key mod 1000) x 40, above Ray's worker range (10002-19999), whose ports each
# worker takes only when free. RAY_PORT_BASE moves the block.
ray_ports() {
  local key=$1 base
  ray_port=${RAY_PORT:-$((6379 + key % 1000))}
  base=${RAY_PORT_BASE:-$((20000 + key % 1000 * 40))}
  ray_head_port_args=(--dashboard-port=$((base + 1)) --ray-client-server-port=$((base + 2)))
  ray_port_args=(--dashboard-agent-listen-port=$((base + 3)) --dashboard-agent-grpc-port=$((base + 4))
    --metrics-export-port=$((base + 5)) --runtime-env-agent-port=$((base + 6))
    --node-manager-port=$((base + 7)) --object-manager-port=$((base + 8)))
}

# sky_ray_ports TEXT: ray_ports for a job named by TEXT (a SkyPilot task id), hashed to an integer
# (cksum), its GCS port never SkyPilot's own Ray's (6380) on the same node: a key that would give
# 6380 takes the next one; RAY_PORT=6380 is refused (one line, status 1).
sky_ray_ports() {
  local key
  key=$(printf '%s' "$1" | cksum | cut -d ' ' -f 1)
  if ((key % 1000 == 1)); then
    key=$((key + 1))
  fi
  ray_ports "$key"
  if ((ray_port == 6380)); then
    echo "launch_lib.sh: RAY_PORT=6380 is SkyPilot's own Ray on every node of the task: choose another port" >&2
    return 1
  fi
}

# ray_head_listens IP PORT: whether something accepts a TCP connection at IP:PORT (2 s at most).
ray_head_listens() {
  python3 -c 'import socket, sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), 2).close()' \
    "$1" "$2" 2>/dev/null
}

# ray_alive_nodes ADDRESS: how many nodes of the Ray cluster at ADDRESS are alive (fails while it
# cannot be reached).
ray_alive_nodes() {
  python3 -c 'import sys, ray; ray.init(address=sys.argv[1], logging_level="ERROR")
print(sum(n["Alive"] for n in ray.nodes()))' "$1" 2>/dev/null
}
