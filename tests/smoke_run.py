"""The smoke DAG (workflow/configs/smoke.yaml), run once per pytest run for every test that reads it.

``snakemake --configfile smoke.yaml --cores 2`` as ``make smoke`` runs it, asked for the verl run
(``runs: [smoke_gspo_lie]``) in a temporary outdir, with three test settings: the tiny model's
``enable_thinking: false`` (so that verl's prompts show the flag); a short supervised stage of that
model on the arithmetic task (``models.tiny.sft``, 80 steps, ~3 s: a random tiny model's next-token
distribution is so flat that every per-token entropy rounds to the same bf16 value, and a test of how
verl aggregates entropies needs them uneven; its samples then also stop at different lengths); and
verl's processes loading tests/verl_probe.py (which records the entropies behind ``actor/entropy``).
tests/test_smoke_e2e.py checks the DAG's outputs; the verl tests in tests/test_verl_main_ppo.py read the
verl run (``main_ppo`` with our reward manager, validation, checkpoints, the merged model).

The continual child (``smoke_gspo_lie_long``: verl again, from its parent's merged model, sampling
through verl's vLLM server on vLLM's CPU build) is ``make test-all``'s (:func:`smoke_child_run`, the
heavy tests): the same DAG asked for the child, in a copy of the finished outdir, so that only the
child's jobs run. ``make test`` leaves it out for time (~4.5 of its 16 minutes on a 2-vCPU VM); ``make
smoke`` runs both.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from once import built_once

REPO = Path(__file__).resolve().parents[1]
SMOKE = REPO / "workflow" / "configs" / "smoke.yaml"
PARENT, CHILD = "smoke_gspo_lie", "smoke_gspo_lie_long"
# the DAG's own limit (~6-12 min on 2 busy cores); a test that asks for the run allows more: whichever asks
# first builds it in its setup (tests/conftest.py gives each such test TEST_TIMEOUT)
BUILD_TIMEOUT = 1700
INDUCTOR = "inductor"  # the DAG's TORCHINDUCTOR_CACHE_DIR, under its workdir
TEST_TIMEOUT = 1800


def probe_env(dump: Path) -> dict[str, str]:
    """This environment, with verl's processes loading tests/verl_probe.py (entropies to ``dump``)."""
    return {
        **os.environ,
        "VERL_USE_EXTERNAL_MODULES": "verl_probe",
        "PYTHONPATH": os.pathsep.join([str(REPO / "tests"), os.environ.get("PYTHONPATH", "")]),
        "LIE_TEST_ENTROPY_DUMP": str(dump),
    }


def smoke_config(outdir: Path, run: str = PARENT) -> dict:
    """The smoke config with the test settings, asking the DAG for ``run`` (its parent comes along)."""
    config = yaml.safe_load(SMOKE.read_text(encoding="utf-8"))
    config["outdir"] = str(outdir)
    config["runs"] = [run]
    config["models"]["tiny"]["enable_thinking"] = False
    config["models"]["tiny"]["sft"] = {
        "task": "arithmetic", "seed": 0, "problems": 200, "min_depth": 1, "max_depth": 3, "stop_prob": 0.5,
        "pad_prob": 0.2, "pad_repeats": 3, "steps": 80, "full_steps": 50, "batch_size": 8, "lr": 3.0e-3,
        "warmup_steps": 5,
    }  # fmt: skip
    return config


def snakemake(workdir: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    env = {
        **(env or os.environ),
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "OMP_NUM_THREADS": "1",
        "HF_HUB_OFFLINE": "1",
    }
    cmd = [sys.executable, "-m", "snakemake", "--configfile", "smoke.yaml", "--cores", "2", *args]
    return subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=BUILD_TIMEOUT)


def _build(workdir: Path) -> None:
    _run_dag(workdir, PARENT)


def _run_dag(workdir: Path, run: str, *args: str) -> None:
    """The smoke DAG asked for ``run`` in ``workdir`` (its Snakefile and workflow/ linked in, outdir
    ``workdir/out``), its verl processes recording their entropies in ``workdir``; the log kept."""
    for name in ("Snakefile", "workflow"):
        os.symlink(REPO / name, workdir / name)
    config = smoke_config(workdir / "out", run)
    (workdir / "smoke.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    # torch.compile's cache of this DAG alone: a kernel compiled on the CPU would land here (test_verl_main_ppo)
    env = {**probe_env(workdir / "entropy.jsonl"), "TORCHINDUCTOR_CACHE_DIR": str(workdir / INDUCTOR)}
    first = snakemake(workdir, *args, env=env)
    (workdir / "first.log").write_text(first.stdout + first.stderr, encoding="utf-8")
    assert first.returncode == 0, (first.stdout + first.stderr)[-4000:]


def smoke_run(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """The finished smoke DAG: its workdir, outdir, config file and the first run's log."""
    return _finished(built_once(tmp_path_factory, "smoke", _build))


def smoke_child_run(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """The smoke DAG asked for the continual child too (:func:`build_child`), after :func:`smoke_run`."""
    parent = smoke_run(tmp_path_factory)
    return _finished(
        built_once(tmp_path_factory, "smoke-child", lambda workdir: build_child(parent.out, workdir))
    )


def build_child(parent_out: Path, workdir: Path) -> None:
    """The finished smoke outdir copied (modification times kept, no Snakemake records: nothing of it is
    planned again) and the same DAG run for ``CHILD``, its verl processes recording their entropies in a
    file of their own. ``--forcerun report``: the copied report is complete for the parent alone; without
    Snakemake's records a finished output's new inputs are not planned until that output is rebuilt (in the
    parent's own workdir, whose records hold the report's inputs, adding the child plans its 7 jobs)."""
    shutil.copytree(parent_out, workdir / "out", symlinks=True)
    _run_dag(workdir, CHILD, "--forcerun", "report")


def _finished(workdir: Path) -> SimpleNamespace:
    return SimpleNamespace(
        workdir=workdir,
        out=workdir / "out",
        config_file=workdir / "smoke.yaml",
        config=yaml.safe_load((workdir / "smoke.yaml").read_text(encoding="utf-8")),
        log=(workdir / "first.log").read_text(encoding="utf-8"),
        entropy=workdir / "entropy.jsonl",
    )
