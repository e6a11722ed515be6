"""The smoke pipeline end to end: every stage of the DAG on the CPU, then a rerun with nothing to do."""

from __future__ import annotations

import json

import pytest
from smoke_run import CHILD, PARENT, snakemake

from lie.formats.runs import ROLLOUT_FIELDS, read_metrics, read_rollouts

pytestmark = pytest.mark.slow  # the first test to ask for `smoke` builds the DAG (tests/conftest.py)


def test_smoke_dag_runs_every_stage_and_then_has_nothing_to_do(smoke):
    out = smoke.out
    for run in (PARENT, CHILD):
        rundir = out / "runs" / run
        assert [m["step"] for m in read_metrics(rundir)] == [1, 2, 3, 4]
        rollouts = read_rollouts(rundir)
        assert len(rollouts) == 4 * 4 * 4 and set(ROLLOUT_FIELDS) <= set(rollouts[0])
        assert (out / "models" / run / "config.json").exists()
    assert (
        json.loads((out / "runs" / CHILD / "run.json").read_text())["settings"]["max_response_length"] == 64
    )
    for key in (PARENT, CHILD, "tiny"):
        summary = json.loads((out / "scores" / key / "summary.json").read_text())
        assert summary["budgets"] == [16, 48] and set(summary["benchmarks"]) == {"arith-test", "arith-choice"}
    main = (out / "tables" / "main.md").read_text()
    assert all(key in main for key in (CHILD, "tiny"))
    assert (out / "figures" / "dynamics.png").stat().st_size > 10_000
    assert not list(out.rglob("*.partial"))

    again = snakemake(smoke.workdir)
    assert again.returncode == 0
    assert "Nothing to be done" in again.stdout + again.stderr
