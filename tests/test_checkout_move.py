"""A moved or cloned checkout reruns nothing: no rule's params hold where the checkout lies (#34, item 5).

Snakemake reruns a job whose params differ from those recorded with its outputs (``.snakemake/metadata``,
in the working directory: the checkout). The finished smoke DAG (tests/smoke_run.py, read, never run
again) is copied into a git clone of the repository as its ``results/smoke``, with this working tree's
Snakefile and ``workflow/``; its verl run is evaluated there with vLLM's CPU build (the smoke
config's ``generate_by`` names a run outside the fixture's DAG), so that a job running another
environment's ``lie`` is in the DAG. ``snakemake --touch --forceall`` records every job's params as a
finished run would (as tests/test_reruns.py does); then the checkout is renamed, and copied with its
results and records into a second clone, and ``snakemake -n`` must plan no job in either.
"""

from __future__ import annotations

import copy
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from smoke_run import PARENT, snakemake

REPO = Path(__file__).resolve().parents[1]
VLLM_VENV = Path(os.environ.get("LIE_VLLM_VENV", REPO / ".venv-vllm"))
OUT = "results/smoke"


def _checkout(path: Path) -> Path:
    """A git clone of the repository at ``path``, with this working tree's Snakefile and workflow/ (edits not
    yet committed included) and vLLM's CPU environment linked in as its ``.venv-vllm``."""
    subprocess.run(
        ["git", "clone", "--quiet", str(REPO), str(path)], check=True, capture_output=True, timeout=120
    )
    for source in [REPO / "Snakefile", *(REPO / "workflow").rglob("*")]:
        if source.is_file() and not source.is_symlink() and "__pycache__" not in source.parts:
            target = path / source.relative_to(REPO)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    (path / ".venv-vllm").symlink_to(VLLM_VENV)
    return path


def _nothing_planned(workdir: Path) -> None:
    proc = snakemake(workdir, "-n")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Nothing to be done" in proc.stdout, f"{workdir.name}: jobs planned\n{proc.stdout[-6000:]}"


@pytest.fixture(scope="module")
def moved(smoke, tmp_path_factory) -> Path:
    """The smoke DAG finished in one checkout (its params recorded there), which is then renamed."""
    first = _checkout(tmp_path_factory.mktemp("place") / "first")
    shutil.copytree(smoke.out, first / OUT, symlinks=True)
    config = copy.deepcopy(smoke.config)
    config["outdir"] = OUT  # as in the repository's smoke config: relative to the checkout
    config["engines"]["generate_by"] = {PARENT: "vllm"}
    (first / "smoke.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    touched = snakemake(first, "--touch", "--forceall", "--quiet")
    assert touched.returncode == 0, touched.stderr[-3000:]
    return first.rename(tmp_path_factory.mktemp("elsewhere") / "moved")


def test_a_moved_checkout_plans_no_job(moved):
    _nothing_planned(moved)


def test_results_copied_into_another_clone_plan_no_job(moved, tmp_path):
    clone = _checkout(tmp_path / "clone")
    shutil.copytree(moved / OUT, clone / OUT, symlinks=True)
    shutil.copytree(moved / ".snakemake" / "metadata", clone / ".snakemake" / "metadata")
    shutil.copy2(moved / "smoke.yaml", clone / "smoke.yaml")
    _nothing_planned(clone)


def test_the_vllm_job_finds_its_environment_from_the_checkout(moved):
    """The command, not a param, says where the environment is: a path the job's shell reads from the
    working directory, which holds vLLM's CPU build's ``lie``."""
    proc = snakemake(moved, "-n", "-p", "--forcerun", "generate")
    assert proc.returncode == 0, proc.stderr[-3000:]
    commands = [
        line
        for line in proc.stdout.splitlines()
        if f"/generations/{PARENT}/" in line and " generate " in line
    ]
    assert len(commands) == 2, proc.stdout[-4000:]
    for command in commands:
        words = command.split()
        lie = words[words.index("generate") - 1]
        assert not Path(lie).is_absolute() and os.access(moved / lie, os.X_OK), command
        assert "VLLM_ENABLE_V1_MULTIPROCESSING=0" in command and "--engine vllm" in command
