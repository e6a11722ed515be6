"""The smoke pipeline end to end: every stage of the DAG on the CPU, then a rerun with nothing to do."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import yaml

from lie.formats.runs import ROLLOUT_FIELDS, read_metrics, read_rollouts

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def _snakemake(workdir: Path, *args: str):
    import subprocess

    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "OMP_NUM_THREADS": "1",
        "HF_HUB_OFFLINE": "1",
    }
    cmd = [sys.executable, "-m", "snakemake", "--configfile", "smoke.yaml", "--cores", "2", *args]
    return subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=1200)


def test_smoke_dag_runs_every_stage_and_then_has_nothing_to_do(tmp_path):
    for name in ("Snakefile", "workflow"):
        os.symlink(REPO / name, tmp_path / name)
    config = yaml.safe_load((REPO / "workflow" / "configs" / "smoke.yaml").read_text())
    config["outdir"] = str(tmp_path / "out")
    config["runs"] = ["smoke_gspo_lie_long"]  # the continual stage: its parent comes along
    (tmp_path / "smoke.yaml").write_text(yaml.safe_dump(config, sort_keys=False))

    first = _snakemake(tmp_path)
    assert first.returncode == 0, (first.stdout + first.stderr)[-4000:]
    out = tmp_path / "out"
    for run in ("smoke_gspo_lie", "smoke_gspo_lie_long"):
        rundir = out / "runs" / run
        assert [m["step"] for m in read_metrics(rundir)] == [1, 2, 3, 4]
        rollouts = read_rollouts(rundir)
        assert len(rollouts) == 4 * 4 * 4 and set(ROLLOUT_FIELDS) <= set(rollouts[0])
        assert (out / "models" / run / "config.json").exists()
    assert (
        json.loads((out / "runs" / "smoke_gspo_lie_long" / "run.json").read_text())["settings"][
            "max_response_length"
        ]
        == 64
    )
    for key in ("smoke_gspo_lie", "smoke_gspo_lie_long", "tiny"):
        summary = json.loads((out / "scores" / key / "summary.json").read_text())
        assert summary["budgets"] == [16, 48] and set(summary["benchmarks"]) == {"arith-test", "arith-choice"}
    main = (out / "tables" / "main.md").read_text()
    assert all(key in main for key in ("smoke_gspo_lie_long", "tiny"))
    assert (out / "figures" / "dynamics.png").stat().st_size > 10_000
    assert not list(out.rglob("*.partial"))

    again = _snakemake(tmp_path)
    assert again.returncode == 0
    assert "Nothing to be done" in again.stdout + again.stderr
