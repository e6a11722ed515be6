"""The Slurm/Ray launcher, run against stand-ins for scontrol, srun and apptainer that record calls."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from standins import write_tools

REPO = Path(__file__).resolve().parents[1]
LAUNCHER = REPO / "workflow" / "scripts" / "ray_on_slurm.sh"

FAKES = {
    # scontrol: the job's record (its nodes, as Slurm's compact list), and that list expanded
    "scontrol": """echo "scontrol $*" >> "$LOG"
if [[ "$1 $2" == "show job" ]]; then
  echo "JobId=4242 ReqNodeList=(null) NodeList=gpu-a[01-02],gpu-b17 NumNodes=3 EndTime=Unknown"
else printf "gpu-a01\\ngpu-a02\\ngpu-b17\\n"; fi""",
    # srun: record the node and the command, answer hostname (HEAD_IP), run everything else; refuse a
    # GPU request by --gres beside --gpus-per-node, which SLURM_GPUS_PER_NODE (exported by sbatch for a
    # job that asked --gpus-per-node) also sets, as Slurm >= 26.05 does (src/srun/opt.c)
    "srun": """echo "srun $*" >> "$LOG"
if [[ " $* " == *" --gres=gpu"* || " $* " == *" --gres gpu"* ]] && \\
   [[ -n "${SLURM_GPUS_PER_NODE:-}" || " $* " == *" --gpus-per-node"* ]]; then
  echo "srun: fatal: --gpus-per-node and --gres=gpu are mutually exclusive" >&2; exit 1
fi
while [[ "$1" == -* ]]; do case "$1" in -w) shift 2;; *) shift;; esac; done
if [[ "$1" == hostname ]]; then echo "fe80::1 ${HEAD_IP:-10.0.0.7}"; exit 0; fi
exec "$@\"""",
    "apptainer": """echo "apptainer $*" >> "$LOG"
shift; while [[ "$1" == --* ]]; do case "$1" in --bind|--env) shift 2;; *) shift;; esac; done; image="$1"; shift
if [[ "$*" == *"ray.nodes"* ]]; then  # the nodes that have run `ray start`, at most NODES_UP
  up=$(grep -c "^ray start" "$LOG" || true); echo $(( up < NODES_UP ? up : NODES_UP )); exit 0; fi
exec "$@\"""",
    "ray": 'echo "ray $*" >> "$LOG"',
}


@pytest.fixture
def fake_slurm(tmp_path):
    bin_dir = write_tools(tmp_path / "bin", FAKES)
    log = tmp_path / "calls.log"
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{Path(sys.executable).parent}:{os.environ['PATH']}",  # python: the image's
        "LOG": str(log),
        "SLURM_JOB_ID": "4242",
        "LIE_IMAGE": "/images/lie-gpu.sif",
        "NODES_UP": "3",
        "LIE_RAY_WAIT_S": "5",
        "LIE_RAY_POLL_S": "0.2",  # the stand-in nodes join at once
        "SLURM_CPUS_PER_TASK": "32",
        "HF_HOME": "/shared/hf",
    }
    env["BIN"] = str(bin_dir)
    return env, log


def _launch(env: dict[str, str], *command: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(LAUNCHER), *command], env=env, capture_output=True, text=True, timeout=60
    )


def test_one_ray_node_per_allocated_node_inside_the_image(fake_slurm):
    env, log = fake_slurm
    proc = _launch(env, "bash", "-c", 'echo "TRAIN at $RAY_ADDRESS"')
    assert proc.returncode == 0, proc.stderr
    assert "TRAIN at 10.0.0.7:6621" in proc.stdout  # IPv4 picked, port 6379 + 4242 % 1000
    calls = log.read_text().splitlines()
    heads = [c for c in calls if c.startswith("ray start --head")]
    workers = [c for c in calls if c.startswith("ray start --address")]
    assert len(heads) == 1 and "--node-ip-address=10.0.0.7" in heads[0] and "--num-gpus=4" in heads[0]
    assert len(workers) == 2  # gpu-a02 and gpu-b17: every node its own element
    assert all("--num-cpus=32" in c for c in heads + workers)  # the job's CPUs, not Ray's guess
    assert any("-w gpu-a02" in c for c in calls) and any("-w gpu-b17" in c for c in calls)
    cwd = os.getcwd()  # GPUs, tree, hub cache, the tree's code first; each process through the entry check
    image = (
        f"apptainer exec --nv --bind {cwd} --bind /shared/hf --env PYTHONPATH={cwd}/src /images/lie-gpu.sif"
    )
    entry = f"{image} {LAUNCHER.parent}/in_image.sh"
    ray_in_image = [c for c in calls if c.startswith(f"{entry} ray start")]
    assert len(ray_in_image) == 3
    assert any(c.startswith(f"{entry} bash -c") for c in calls)
    steps = [c for c in calls if c.startswith("srun") and " ray start" in c]
    assert len(steps) == 3  # one step of one task on one node each, with that node's GPUs and CPUs
    assert all("--nodes=1 --ntasks=1 --overlap --cpus-per-task=32 --gres=gpu:4 -w " in c for c in steps)


def test_refuses_a_loopback_head_address_on_several_nodes(fake_slurm):
    """Debian's /etc/hosts maps the host name to 127.0.1.1: the workers would dial themselves."""
    env, log = fake_slurm
    env["HEAD_IP"] = "127.0.1.1"
    proc = _launch(env, "true")
    assert proc.returncode == 1
    (line,) = proc.stderr.strip().splitlines()
    assert "loopback address 127.0.1.1" in line and "LIE_RAY_HEAD_IP" in line
    assert "ray start" not in log.read_text()
    env["LIE_RAY_HEAD_IP"] = "10.1.0.7"  # the fix the line names
    proc = _launch(env, "bash", "-c", 'echo "at $RAY_ADDRESS"')
    assert proc.returncode == 0 and "at 10.1.0.7:6621" in proc.stdout


def test_stops_when_nodes_do_not_join(fake_slurm):
    env, _ = fake_slurm
    # 3 s: the two stand-in nodes that do come up each start a process (~1 s under coverage's slowdown)
    env.update(NODES_UP="2", LIE_RAY_WAIT_S="3")
    proc = _launch(env, "true")
    assert proc.returncode == 1
    assert "only 2 of 3 Ray nodes joined within 3s" in proc.stderr


def test_refuses_to_run_outside_an_allocation(fake_slurm):
    env, _ = fake_slurm
    del env["SLURM_JOB_ID"]
    proc = _launch(env, "true")
    assert proc.returncode == 2 and "not inside a Slurm allocation" in proc.stderr


def test_train_sbatch_asks_its_ray_steps_for_gpus_as_the_job_did(fake_slurm):
    """train.sbatch asks --gpus-per-node=4, so sbatch exports SLURM_GPUS_PER_NODE=4, which srun reads as
    that option: a step asking --gres=gpu:4 beside it is refused (Slurm >= 26.05), the Ray nodes never
    start and the launcher waits for them in vain. Its steps ask --gpus-per-node instead."""
    env, log = fake_slurm
    write_tools(Path(env["BIN"]), {"lie": 'echo "lie $*" >> "$LOG"; echo "TRAIN at $RAY_ADDRESS"'})
    env.update({"SLURM_GPUS_PER_NODE": "4", "SLURM_JOB_NUM_NODES": "3", "SLURM_SUBMIT_DIR": str(REPO)})
    proc = subprocess.run(
        ["bash", str(REPO / "workflow/scripts/train.sbatch"), "qwen3-4b-base_dapo_gspo_lie"],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "TRAIN at 10.0.0.7:6621" in proc.stdout
    steps = [c for c in log.read_text().splitlines() if c.startswith("srun") and " ray start" in c]
    assert len(steps) == 3 and all("--gpus-per-node=4" in c and "--gres" not in c for c in steps), steps
    trainer = [c for c in log.read_text().splitlines() if c.startswith("lie train")]
    assert trainer == ["lie train qwen3-4b-base_dapo_gspo_lie --config config.yaml --nnodes 3"]


def test_two_jobs_on_one_node_open_no_port_in_common(fake_slurm):
    """Two 4-GPU jobs on one 8-GPU node: every port either job's Ray nodes listen on is its own (the GCS
    port alone differed: the dashboard's, the client server's and the agents' collided)."""
    import re

    env, log = fake_slurm
    ports = {}
    for job in ("4242", "4243"):
        log.write_text("")
        proc = _launch({**env, "SLURM_JOB_ID": job}, "true")
        assert proc.returncode == 0, proc.stderr
        starts = [c for c in log.read_text().splitlines() if c.startswith("ray start")]
        assert len(starts) == 3
        head = next(c for c in starts if "--head" in c)
        for option in ("--port", "--dashboard-port", "--ray-client-server-port", "--dashboard-agent-listen-port",
                       "--dashboard-agent-grpc-port", "--metrics-export-port", "--runtime-env-agent-port",
                       "--node-manager-port", "--object-manager-port"):  # fmt: skip
            assert f"{option}=" in head, option  # none left to Ray's fixed defaults
        ports[job] = {int(p) for c in starts for p in re.findall(r"port=(\d+)", c)}
        assert all(not 10002 <= p <= 19999 for p in ports[job])  # clear of Ray's worker ports
    assert ports["4242"] and not ports["4242"] & ports["4243"]


def _sbatch_directives(script: Path) -> list[str]:
    """The options sbatch reads from a script: each ``#SBATCH`` line of the comment block before its first
    command (sbatch stops reading directives there)."""
    options = []
    for line in script.read_text().splitlines()[1:]:
        if line.strip() and not line.startswith("#"):
            break
        if line.startswith("#SBATCH "):
            options += line.split()[1:]
    return options


def test_train_sbatch_asks_each_nodes_whole_memory_beside_exclusive():
    """--exclusive gives a job the node's GPUs and CPUs but, without --mem, only the partition's default
    memory (DefMemPerNode/DefMemPerCPU, often a few GB); an 8B run needs ~100 GB of host memory."""
    options = _sbatch_directives(REPO / "workflow/scripts/train.sbatch")
    assert "--exclusive" in options
    mem = [o for o in options if o.startswith(("--mem=", "--mem-per-cpu=", "--mem-per-gpu="))]
    assert mem == ["--mem=0"]  # Slurm: every node's whole memory
