"""The train job inside its Slurm allocation, as the job-step executor plugin starts it.

``sbatch`` (tests/test_cluster.py) starts ``snakemake --executor slurm-jobstep --jobs 1 TARGET`` on
the allocation's first node; this test runs exactly that with stand-ins for ``srun``, ``scontrol``,
``squeue``, ``apptainer`` and ``ray`` that record their arguments and environment, in an
environment like a real two-node allocation's (``SLURM_JOB_ID=4242`` and the variables Slurm sets).
The stand-in ``lie`` inside the image records what the trainer process sees and writes final.json.
"""

from __future__ import annotations

import datetime
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from small import paper_config
from standins import APPTAINER_EXEC, finish, start, write_tools

from lie.config import Config

REPO = Path(__file__).resolve().parents[1]
RUN = "qwen3-4b-base_dapo_gspo_lie"
NODES = ["gpu-a01", "gpu-a02"]
END_TIME = "2026-12-04T16:00:00"  # scontrol prints the job's end in the controller's local time

# Each stand-in appends one JSON line {"tool", "args", "env"} to $CALLS; env keeps SLURM_*, the
# expiration timestamp verl reads, NCCL_* and PYTHONPATH.
RECORD = """python3 - "$0" "$@" <<'EOF'
import json, os, sys
keep = lambda k: k.startswith(("SLURM_", "NCCL_", "LIE_")) or k in (
    "MLP_CURRENT_CAPACITY_BLOCK_EXPIRATION_TIMESTAMP", "PYTHONPATH", "RAY_ADDRESS")
env = {k: v for k, v in os.environ.items() if keep(k)}
with open(os.environ["CALLS"], "a") as f:
    f.write(json.dumps({"tool": os.path.basename(sys.argv[1]), "args": sys.argv[2:], "env": env}) + "\\n")
EOF
"""
FAKES = {
    "scontrol": RECORD
    + """if [[ "$1 $2" == "show job" ]]; then
  echo "JobId=4242 JobName=train UserId=u(1) JobState=RUNNING RunTime=00:01:00 TimeLimit=2-00:00:00" \\
       "StartTime=2026-12-02T16:00:00 EndTime=$END_TIME ReqNodeList=(null) ExcNodeList=(null)" \\
       "NodeList=gpu-a[01-02] BatchHost=gpu-a01 NumNodes=2 NumCPUs=64 NumTasks=2 CPUs/Task=32"
elif [[ "$1 $2" == "show hostnames" ]]; then printf "gpu-a01\\ngpu-a02\\n"; fi""",
    "squeue": RECORD,
    # srun: run the step's command as one task would (a hostname query answers an address)
    "srun": RECORD
    + """while [[ $# -gt 0 && "$1" == -* ]]; do
  case "$1" in -w|-n|-N|-c|-J|--jobid) shift 2;; *) shift;; esac
done
if [[ "$1" == hostname ]]; then echo "fe80::1 10.0.0.7"; exit 0; fi
exec "$@\"""",
    # apptainer exec ...: run on the host, only the bound folders visible (tests/standins.py)
    "apptainer": RECORD + APPTAINER_EXEC,
    "ray": RECORD,
    # the trainer: record, then finish the run as `lie train` does (or, with FAIL_FIRST, fail once)
    "lie": RECORD
    + """if [[ -n "${FAIL_FIRST:-}" && ! -e "$FAIL_FIRST" ]]; then
  touch "$FAIL_FIRST"; echo "torch.OutOfMemoryError: CUDA out of memory (attempt one)" >&2; exit 1
fi
echo "training done"; mkdir -p "$(dirname "$FINAL")"; echo "{}" > "$FINAL\"""",
}

# What a Slurm batch job's environment holds on a two-node, 4-GPU-per-node allocation.
ALLOCATION = {
    "SLURM_JOB_ID": "4242",
    "SLURM_JOBID": "4242",
    "SLURM_JOB_NODELIST": "gpu-a[01-02]",
    "SLURM_NODELIST": "gpu-a[01-02]",
    "SLURM_JOB_NUM_NODES": "2",
    "SLURM_NNODES": "2",
    "SLURM_GPUS_ON_NODE": "4",
    "SLURM_CPUS_PER_TASK": "32",
    "SLURM_CPUS_ON_NODE": "32",
    "SLURM_JOB_GPUS": "0,1,2,3",
    "SLURM_GPUS": "8",
    "SLURM_SUBMIT_DIR": "/home/u/lie",
}


def _tree(tmp_path: Path, retries: int = 0, scratch: bool = False, **cluster) -> tuple[Path, dict]:
    """A checkout (links to this one) with the config and every input of the 2-node train job;
    ``scratch``: its ``out`` a link to a folder outside the checkout, as on a cluster with a small home."""
    tree = tmp_path / "tree"
    tree.mkdir()
    shutil.copy(REPO / "Snakefile", tree)  # copies: the stand-in apptainer follows links to their real paths
    for name in ("workflow", "profiles"):
        shutil.copytree(REPO / name, tree / name)
    os.symlink(REPO / "src", tree / "src")
    if scratch:
        (tmp_path / "scratch" / "out").mkdir(parents=True)
        os.symlink(tmp_path / "scratch" / "out", tree / "out")
    config = paper_config()
    config["outdir"] = str(tree / "out")
    config["runs"] = [RUN]
    config["training"].update({"retries": retries, "nnodes": 2})
    if cluster:
        config["cluster"].update(cluster)
    (tree / "c.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    out = tree / "out"
    (out / "base" / "qwen3-4b-base").mkdir(parents=True, exist_ok=True)
    (out / "base" / "qwen3-4b-base" / "config.json").write_text("{}")
    (out / "data").mkdir()
    for name in ["dapo.qwen3-4b-base.reflen", *config["training"]["val_sets"]]:
        (out / "data" / f"{name}.parquet").write_text("x")
    return tree, config


def _start_jobstep(
    tmp_path: Path,
    executor: tuple[str, ...] = ("--executor", "slurm-jobstep", "--jobs", "1"),
    env_extra: dict | None = None,
    retries: int = 0,
    scratch: bool = False,
    **cluster,
) -> subprocess.Popen:
    """``snakemake TARGET --executor slurm-jobstep --jobs 1`` inside the stand-in allocation, started
    (tests/standins.py's start)."""
    bin_dir = write_tools(tmp_path / "bin", FAKES)
    tree, _ = _tree(tmp_path, retries, scratch, **cluster)
    final = tree / "out" / "runs" / RUN / "final.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env.update(ALLOCATION)
    env.update(
        {
            "PATH": f"{bin_dir}:{Path(sys.executable).parent}:{os.environ['PATH']}",
            "CALLS": str(tmp_path / "calls.jsonl"),
            "FINAL": str(final),
            "END_TIME": END_TIME,
            "LIE_RAY_WAIT_S": "5",
            "LIE_RAY_POLL_S": "0.5",
            **(env_extra or {}),
        }
    )
    cmd = [sys.executable, "-m", "snakemake", str(final), *executor,
           "--configfile", "c.yaml", "--rerun-triggers", "mtime", "--latency-wait", "1"]  # fmt: skip
    return start(cmd, tmp_path, cwd=tree, env=env)


@pytest.fixture(scope="module")
def jobs(tmp_path_factory) -> dict[str, SimpleNamespace]:
    """The jobs the tests below read, run at once before the first test (each waits mostly on its
    stand-ins), finished: exit status, output, the stand-ins' calls and the checkout."""
    folders = {name: tmp_path_factory.mktemp(name) for name in ("two_nodes", "nccl", "retried", "scratch")}
    nccl = {"NCCL_SOCKET_IFNAME": "ib0", "NCCL_IB_HCA": "mlx5", "NCCL_DEBUG": None}
    fail_first = {"FAIL_FIRST": str(folders["retried"] / "failed")}
    procs = {
        "two_nodes": _start_jobstep(folders["two_nodes"]),
        "nccl": _start_jobstep(folders["nccl"], nccl=nccl),
        "retried": _start_jobstep(folders["retried"], ("--cores", "1"), fail_first, retries=1),
        "scratch": _start_jobstep(folders["scratch"], scratch=True, binds=[str(REPO / "tests")]),
    }
    done = {}
    for name, proc in procs.items():
        folder = folders[name]
        returncode, output = finish(proc, folder)
        calls = folder / "calls.jsonl"
        done[name] = SimpleNamespace(
            returncode=returncode,
            log=output[-6000:],
            calls=[json.loads(line) for line in calls.read_text().splitlines()] if calls.exists() else [],
            tree=folder / "tree",
        )
    return done


def _opt(args: list[str], *names: str) -> str | None:
    for i, arg in enumerate(args):
        for name in names:
            if arg == name and i + 1 < len(args):
                return args[i + 1]
            if name.startswith("--") and arg.startswith(name + "="):
                return arg.split("=", 1)[1]
            if not name.startswith("--") and arg.startswith(name) and arg != name:
                return arg[len(name) :]
    return None


def _srun_options(args: list[str]) -> list[str]:
    """The options of an srun call (before its command)."""
    out = []
    for i, arg in enumerate(args):
        if not arg.startswith("-"):
            if i and args[i - 1] in ("-w", "-n", "-N", "-c", "-J", "--jobid"):
                out.append(arg)
                continue
            break
        out.append(arg)
    return out


def test_a_two_node_train_job_starts_ray_on_both_nodes_with_steps_that_fit(jobs):
    job = jobs["two_nodes"]
    calls, log = job.calls, job.log
    assert job.returncode == 0, log
    sruns = [c for c in calls if c["tool"] == "srun"]
    assert sruns, log
    for call in sruns:
        words = shlex.split(" ".join(call["args"])) if len(call["args"]) == 1 else call["args"]
        options = _srun_options(words)
        nodes = int(_opt(options, "--nodes", "-N") or 1)
        tasks = _opt(options, "--ntasks", "-n")
        assert not (nodes > 1 and tasks == "1"), f"a one-task step spans {nodes} nodes: {words}"
        gpus = _opt(options, "--gpus", "-G")
        assert gpus is None or int(gpus) <= 4, f"a step asks for {gpus} GPUs of a 4-GPU node: {words}"
        gres = _opt(options, "--gres")
        assert gres is None or int(gres.rsplit(":", 1)[1]) <= 4, words
    # The job learnt both nodes without SLURM_* variables: a Ray head on one, a worker on the other.
    ray = [c for c in calls if c["tool"] == "ray"]
    heads = [c for c in ray if "--head" in c["args"]]
    workers = [c for c in ray if any(a.startswith("--address=") for a in c["args"])]
    assert len(heads) == 1 and len(workers) == 1, ray
    placed = {_opt(c["args"], "-w") for c in sruns if "ray" in c["args"]}
    assert placed == set(NODES)
    assert all("--num-gpus=4" in c["args"] and "--num-cpus=32" in c["args"] for c in heads + workers)
    (trainer,) = [c for c in calls if c["tool"] == "lie"]
    assert trainer["args"][:2] == ["train", RUN] and _opt(trainer["args"], "--nnodes") == "2"
    assert trainer["env"]["RAY_ADDRESS"] == "10.0.0.7:6621"


def test_the_site_nccl_settings_reach_every_ray_node_and_the_trainer(jobs):
    job = jobs["nccl"]
    assert job.returncode == 0, job.log
    seen = [c["env"] for c in job.calls if c["tool"] in ("ray", "lie")]
    assert len(seen) == 3
    assert all(e["NCCL_SOCKET_IFNAME"] == "ib0" and e["NCCL_IB_HCA"] == "mlx5" for e in seen)
    assert not any("NCCL_DEBUG" in e for e in seen)  # null: left to NCCL


def test_each_attempt_keeps_its_own_log(jobs):
    """A failed attempt's output survives the retry that follows it (the log is appended to)."""
    job = jobs["retried"]
    assert job.returncode == 0, job.log
    logs = job.tree / "out" / "logs" / "train"
    first, second = (logs / f"{RUN}.attempts.log").read_text().split(f"==== train {RUN}, attempt 2: ")
    assert f"==== train {RUN}, attempt 1: " in first and "CUDA out of memory (attempt one)" in first
    assert "training done" in second and "out of memory" not in second
    last = (logs / f"{RUN}.log").read_text()  # Snakemake's log: the last attempt
    assert last.startswith(f"==== train {RUN}, attempt 2: ") and "training done" in last


def test_the_job_end_reaches_the_trainer_as_verls_expiration_timestamp(jobs):
    """verl's should_save_ckpt_esi reads MLP_CURRENT_CAPACITY_BLOCK_EXPIRATION_TIMESTAMP (epoch seconds)
    in the trainer, a Ray actor: every `ray start` and the driver must carry it."""
    job = jobs["two_nodes"]  # the same job as the two-node test's
    calls = job.calls
    assert job.returncode == 0, job.log
    end = datetime.datetime.fromisoformat(END_TIME).timestamp()  # local time, as `date -d` reads it
    seen = [c for c in calls if c["tool"] in ("ray", "lie")]
    assert len(seen) == 3
    for call in seen:
        assert float(call["env"]["MLP_CURRENT_CAPACITY_BLOCK_EXPIRATION_TIMESTAMP"]) == end, call
    assert any(c["tool"] == "scontrol" and c["args"][:2] == ["show", "job"] for c in calls)


def test_the_save_ahead_margin_is_verls_esi_redundant_time():
    """cluster.esi_redundant_time_s reaches verl's composed trainer config (its own schema accepts it)."""
    from lie.config import RunSettings
    from lie.engines.verl.overrides import VerlInputs, compose, overrides

    config = paper_config()
    config["cluster"]["esi_redundant_time_s"] = 1200
    composed = compose(
        overrides(
            Config.of(config),
            RunSettings.of(Config.of(config), RUN),
            VerlInputs("train.parquet", (), "model"),
        )
    )
    assert composed.trainer.esi_redundant_time == 1200


def test_an_outdir_on_scratch_and_the_site_binds_are_visible_inside_the_image(jobs):
    """Issue 31 defect 9: with ``out`` a link to scratch, the image saw only the checkout and the hub
    cache; the stand-in apptainer fails a path argument that no --bind makes visible."""
    job = jobs["scratch"]
    assert job.returncode == 0, job.log
    execs = [c for c in job.calls if c["tool"] == "apptainer" and c["args"][:1] == ["exec"]]
    assert execs, job.log
    scratch = str((job.tree.parent / "scratch" / "out").resolve())
    for call in execs:
        binds = [b for i, b in enumerate(call["args"]) if call["args"][i - 1] == "--bind"]
        bound = ",".join(binds).split(",")
        assert scratch in bound and str(REPO / "tests") in bound, binds
    (trainer,) = [c for c in job.calls if c["tool"] == "lie"]
    assert _opt(trainer["args"], "--config") == str(job.tree / "out" / "config.yaml")
