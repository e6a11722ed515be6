"""The SkyPilot task (cloud/skypilot/lie.yaml) and its profile (profiles/sky): what the file names, SkyPilot's
own parser on it (make check-sky, heavy: it builds .venv-sky), Snakemake's real planning with the profile,
and the task's `run:` block itself on the smoke DAG with a real Ray on the CPU (heavy)."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
TASK = REPO / "cloud" / "skypilot" / "lie.yaml"
BIN = Path(sys.executable).parent


def task() -> dict:
    return yaml.safe_load(TASK.read_text(encoding="utf-8"))


def test_the_task_runs_the_launcher_and_snakemake_with_the_sky_profile():
    run = task()["run"]
    assert "workflow/scripts/ray_on_sky.sh lie snakemake" in run and "--profile profiles/sky" in run
    for path in ("workflow/scripts/ray_on_sky.sh", "profiles/sky/config.yaml"):
        assert (REPO / path).is_file(), path
    assert os.access(REPO / "workflow/scripts/ray_on_sky.sh", os.X_OK)
    assert "apptainer" not in (REPO / "profiles/sky/config.yaml").read_text()  # the task is the image


def test_outdir_and_hub_cache_are_on_the_storage_every_node_mounts():
    t = task()
    (mount,) = t["file_mounts"]
    assert t["file_mounts"][mount]["name"] == "${LIE_BUCKET}" and t["envs"]["LIE_BUCKET"] is None  # --env
    for var in ("LIE_OUTDIR", "HF_HOME"):
        assert Path(t["envs"][var]).is_relative_to(mount), var
    assert t["resources"]["accelerators"] == "H100:4" and t["workdir"] == "."


def test_the_task_names_the_image_the_dockerfile_builds():
    tag = re.search(
        r"docker build -f containers/Dockerfile -t (\S+) \.", (REPO / "containers/Dockerfile").read_text()
    )
    assert tag, "containers/Dockerfile names no tag"
    assert task()["resources"]["image_id"] == f"docker:{tag.group(1)}"


def _site_file(tmp_path: Path, outdir: Path, nodes: int) -> Path:
    """The config file the `run:` block writes, by running its printf line."""
    (line,) = [ln for ln in task()["run"].splitlines() if ln.strip().startswith("printf")]
    site = tmp_path / "site.sky.yaml"
    env = {**os.environ, "LIE_OUTDIR": str(outdir), "SKYPILOT_NUM_NODES": str(nodes), "site": str(site)}
    subprocess.run(["bash", "-c", line], env=env, check=True)
    return site


def test_snakemake_plans_a_verl_run_with_the_sky_profile(tmp_path):
    """Snakemake's real planning with profiles/sky and the config file the run block writes: no container,
    the train job on the task's 3 nodes (overlay) holding the head's GPUs and the one Ray cluster."""
    for name in ("Snakefile", "workflow", "profiles"):
        os.symlink(REPO / name, tmp_path / name)
    site = _site_file(tmp_path, tmp_path / "out", nodes=3)
    assert yaml.safe_load(site.read_text()) == {"outdir": str(tmp_path / "out"), "image": None,
                                                "training": {"nnodes": 3}}  # fmt: skip
    run = "smoke_gspo_lie"  # a verl run of the smoke config: the paper's matrix plans the same, in 2-3x the time
    imaged = tmp_path / "imaged.yaml"  # an image, as config.yaml names one: the run block's file drops it
    imaged.write_text("image: containers/lie-gpu.sif\n")
    cmd = [str(BIN / "lie"), "snakemake", str(tmp_path / f"out/runs/{run}/final.json"), "--configfile",
           "workflow/configs/smoke.yaml", str(imaged), str(site),
           "--profile", "profiles/sky", "--resources", "gpus=4", "ray_cluster=1", "--set-resources",
           "train:gpus=4", "train:ray_cluster=1", "-n", "-p", "--forceall"]  # fmt: skip
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    out = proc.stdout + proc.stderr
    assert "apptainer" not in out and "singularity" not in out.lower()
    train = next(line for line in out.splitlines() if "train_job.sh verl" in line)
    assert "LIE_IMAGE= " in train  # no image to enter: the task runs in it
    (block,) = re.findall(r"rule train:\n(.*?)\n\n", out, flags=re.S)
    resources = dict(re.findall(r"(\w+)=([^,\s]+)", block.split("resources:")[1]))
    assert (resources["nodes"], resources["gpus"], resources["ray_cluster"]) == ("3", "4", "1"), block


def _sky_python() -> Path:
    """.venv-sky's Python, built by `make venv-sky` when missing."""
    python = REPO / ".venv-sky" / "bin" / "python"
    if not (REPO / ".venv-sky" / ".installed").exists():
        subprocess.run(["make", "venv-sky"], cwd=REPO, check=True, capture_output=True, timeout=1500)
    return python


@pytest.mark.heavy  # builds .venv-sky (minutes) the first time
@pytest.mark.timeout(1800)
def test_make_check_sky_accepts_the_task_and_refuses_a_misspelt_key(tmp_path):
    _sky_python()
    proc = subprocess.run(["make", "check-sky"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    accepted = next(line for line in proc.stdout.splitlines() if "accepted by SkyPilot 0.14.1" in line)
    assert "2 node(s) x {'H100': 4}" in accepted and "/lie <- bucket lie-check-bucket" in accepted
    assert re.search(r"'num_nodes' misspelt 'num_node': refused: .*num_node", proc.stdout), proc.stdout
    # the checker fails on a misspelt key in the shipped file itself, in one line naming it
    bad = tmp_path / "bad.yaml"
    bad.write_text(TASK.read_text().replace("\nresources:", "\nresource:"))
    proc = subprocess.run([str(_sky_python()), "cloud/skypilot/check_task.py", str(bad)], cwd=REPO,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 1
    (line,) = proc.stderr.strip().splitlines()
    assert "refused by SkyPilot" in line and "resource" in line


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.heavy  # the whole smoke DAG through the task's run block: 22 min 50 s on 2 cores at load ~15
@pytest.mark.timeout(2700)
def test_the_run_block_runs_the_smoke_dag_on_one_node_with_a_real_ray(tmp_path):
    """In .venv alone (smoke-without-vllm.yaml merged, as make smoke runs where vLLM's CPU build is absent):
    a Ray cluster's workers run the Python of its `ray start`, .venv's here, so the continual run's vLLM
    rollout, whose driver is .venv-vllm's, found no vLLM in them (first run, 2026-12-07: 14 of 35 jobs, the
    first verl run through the task's Ray included, then that failure). On a node the image holds both."""
    for name in ("Snakefile", "workflow", "profiles", "src"):
        os.symlink(REPO / name, tmp_path / name)
    configs = "workflow/configs/smoke.yaml workflow/configs/smoke-without-vllm.yaml"
    out = tmp_path / "out"
    env = {
        **os.environ,
        "PATH": f"{BIN}:{os.environ['PATH']}",
        "OMP_NUM_THREADS": "1",
        "HF_HUB_OFFLINE": "1",
        "SKYPILOT_NODE_RANK": "0",
        "SKYPILOT_NODE_IPS": "127.0.0.1",
        "SKYPILOT_NUM_NODES": "1",
        "SKYPILOT_NUM_GPUS_PER_NODE": "1",  # one fake GPU: verl's CPU backend counts GPU bundles
        "SKYPILOT_TASK_ID": "sky-test-run-block_1",
        "LIE_RAY_WAIT_S": "300",
        "LIE_CPUS_PER_NODE": "16",  # verl's small actors (its own Ray takes 16 on a CPU)
        "LIE_GPUS": "1",  # gpu_slots.sh's count where nvidia-smi is absent
        "LIE_GPU_LOCK_DIR": str(tmp_path / "gpu-locks"),
        "LIE_CONFIG": configs,
        "LIE_TARGETS": "",
        "LIE_OUTDIR": str(out),
        "HF_HOME": str(tmp_path / "hf"),
    }
    env.pop("RAY_ADDRESS", None)
    proc = subprocess.run(["bash", "-c", task()["run"]], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=2400)  # fmt: skip
    log = proc.stdout + proc.stderr
    (tmp_path / "run.log").write_text(log)
    assert proc.returncode == 0, log[-5000:]
    address = re.search(r"head at (127\.0\.0\.1:(\d+));", log)
    assert address and "ray_on_sky.sh: all 1 Ray nodes are up" in log
    assert "Nothing to be done" not in log and re.search(r"\d+ of \d+ steps \(100%\) done", log)
    assert verl_runs_outside_the_task_ray(out, int(address.group(2))) == []
    assert not _port_open(int(address.group(2)))  # the task's Ray is stopped with the command
    # a preempted node: Snakemake's records go with it, the bucket keeps the outdir (docs/cluster.md)
    jobs = plan_after_a_lost_node(tmp_path / "new-node", out, "smoke_gspo_lie_long", configs.split(), env)
    assert jobs == {"train": 1, "merge": 1, "generate": 2, "evaluate": 1, "report": 1, "all": 1}, jobs


def plan_after_a_lost_node(folder: Path, out: Path, run: str, configs: list, env: dict) -> dict[str, int]:
    """The jobs Snakemake plans (its job stats) from a fresh working folder, without the ``.snakemake``
    records of the node that ran it, over ``out`` with ``run`` cut off mid-training: its ``final.json``
    and every output after it gone (``run``'s model, generations and scores; the tables and figures)."""
    folder.mkdir()
    for name in ("Snakefile", "workflow", "profiles", "src"):
        os.symlink(REPO / name, folder / name)
    (out / "runs" / run / "final.json").unlink()
    after = [out / kind / run for kind in ("models", "generations", "scores")]
    for done in [*after, out / "tables", out / "figures"]:
        shutil.rmtree(done)
    site = _site_file(folder, out, nodes=1)
    cmd = [str(BIN / "lie"), "snakemake", "--configfile", *configs, str(site), "--profile", "profiles/sky",
           "--resources", "gpus=1", "ray_cluster=1", "--set-resources", "train:gpus=1", "train:ray_cluster=1",
           "-n"]  # fmt: skip
    proc = subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    stats = (proc.stdout + proc.stderr).split("Job stats:")
    assert len(stats) > 1, "Snakemake planned nothing: " + (proc.stdout + proc.stderr)[-1000:]
    table = stats[1].split("\n\n")[0]
    return {job: int(n) for job, n in re.findall(r"^(\w+)\s+(\d+)$", table, flags=re.M) if job != "total"}


def verl_runs_outside_the_task_ray(out: Path, port: int) -> list[str]:
    """The verl runs under ``out`` (their final.json) whose trainer did not join the task's Ray at ``port``
    (Ray names the head by the node's address, not by the loopback one); fails on fewer than the smoke
    DAG's two."""
    runs = [p.parent.name for p in sorted((out / "runs").glob("*/final.json"))
            if json.loads(p.read_text())["engine"] == "verl"]  # fmt: skip
    assert len(runs) >= 2, runs  # the smoke DAG's two: smoke_gspo_lie and its continual run
    joined = re.compile(rf"Connecting to existing Ray cluster at address: [\d.]+:{port}\.\.\.")
    return [run for run in runs if not joined.search((out / "logs" / "train" / f"{run}.log").read_text())]
