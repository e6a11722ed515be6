"""Kills of the smoke pipeline, then reruns: nothing looks finished that is not, no step is counted
twice, and the tables equal those of a run never killed (issue 21, "Done when").

The whole DAG of one verl run (and the base model beside it) runs under Snakemake three times
with a SIGKILL of its whole process group: during the verl run (after its first step's rollouts),
during a checkpoint save (a ``global_step_N`` folder newer than verl's tracker), and during a
generation shard write; then once more to the end. Minutes each: ``make test-all`` only.
verl's CPU backend reproduces a run exactly (docs/training.md, tests/test_verl_cpu.py), so every
table is compared value for value, the trained run's rows included.
"""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from lie.engines.verl import checkpoints as verl_checkpoints
from lie.formats.runs import RunDir, read_metrics, read_rollouts

REPO = Path(__file__).resolve().parents[1]
RUN = "smoke_gspo_lie"
pytestmark = pytest.mark.heavy


def _workdir(root: Path) -> Path:
    root.mkdir()
    for name in ("Snakefile", "workflow", "profiles"):
        os.symlink(REPO / name, root / name)
    config = yaml.safe_load((REPO / "workflow" / "configs" / "smoke.yaml").read_text())
    config["outdir"] = str(root / "out")
    config["runs"] = [RUN]
    (root / "smoke.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return root


def _command(*args: str) -> tuple[list[str], dict[str, str]]:
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "OMP_NUM_THREADS": "1",
        "HF_HUB_OFFLINE": "1",
    }
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "--configfile",
        "smoke.yaml",
        "--cores",
        "2",
        "--rerun-incomplete",
    ]
    return [*cmd, *args], env


def _finish(workdir: Path) -> None:
    cmd, env = _command()
    subprocess.run([*cmd, "--unlock"], cwd=workdir, env=env, capture_output=True, timeout=600)
    proc = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=3600)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]


def _kill_when(workdir: Path, condition: Callable[[Path], bool]) -> None:
    """Run the pipeline until ``condition`` holds, then SIGKILL Snakemake and every job it started."""
    cmd, env = _command()
    subprocess.run([*cmd, "--unlock"], cwd=workdir, env=env, capture_output=True, timeout=600)
    proc = subprocess.Popen(cmd, cwd=workdir, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)  # fmt: skip
    try:
        while not condition(workdir / "out"):
            assert proc.poll() is None, "the pipeline ended before the fault could be injected"
            time.sleep(0.01)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _verl_running(out: Path) -> bool:
    return any((out / "runs" / RUN / "rollouts").glob("step-000002.*"))


def _saving(out: Path) -> Callable[[Path], bool]:
    """A checkpoint folder newer than verl's tracker that was not there before: a save under way."""
    folder = RunDir(out, RUN).checkpoints
    before = {path.stat().st_ino for path in verl_checkpoints.steps(folder).values()}

    def condition(out: Path) -> bool:
        tracked = verl_checkpoints.tracked_step(folder) or 0
        try:
            found = verl_checkpoints.steps(folder).items()
            return any(step > tracked and path.stat().st_ino not in before for step, path in found)
        except FileNotFoundError:  # set aside by lie train's repair meanwhile
            return False

    return condition


def _writing_a_shard(out: Path) -> bool:
    return any((out / "generations").glob("*/*.shards/shard-*"))


def _tables(out: Path) -> dict[str, list[dict[str, str]]]:
    return {
        path.name: list(csv.DictReader(path.open(encoding="utf-8")))
        for path in sorted((out / "tables").glob("*.csv"))
    }


@pytest.mark.timeout(7200)  # two whole smoke pipelines and three partial ones
def test_killed_three_times_the_rerun_equals_a_clean_run(tmp_path):
    clean = _workdir(tmp_path / "clean")
    _finish(clean)

    faulted = _workdir(tmp_path / "faulted")
    _kill_when(faulted, _verl_running)
    _kill_when(faulted, _saving(faulted / "out"))
    _kill_when(faulted, _writing_a_shard)
    _finish(faulted)

    a, b = clean / "out", faulted / "out"
    # a kill may leave a hidden temporary (.NAME.*.partial), never a file under an output's name
    assert all(p.name.startswith(".") for p in b.rglob("*.partial")) and not list(b.rglob("*.shards"))
    for folder in (b / "models").iterdir():
        assert (folder / "lie_output.json").is_file()
    rundir = RunDir(b, RUN)
    for step, path in verl_checkpoints.steps(rundir.checkpoints).items():
        assert verl_checkpoints.checkpoint_problem(path) is None, step
    assert [m["step"] for m in read_metrics(rundir)] == [m["step"] for m in read_metrics(RunDir(a, RUN))]
    per_step = Counter(r["step"] for r in read_rollouts(rundir))
    assert per_step == Counter(r["step"] for r in read_rollouts(RunDir(a, RUN)))  # no step twice
    assert _tables(b) == _tables(a)
