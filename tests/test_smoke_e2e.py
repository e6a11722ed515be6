"""The smoke pipeline end to end: every stage of the DAG on the CPU, then a rerun with nothing to do."""

from __future__ import annotations

import json

import pytest
import yaml
from smoke_run import CHILD, PARENT, snakemake

from lie.formats.runs import ROLLOUT_FIELDS, read_metrics, read_rollouts

pytestmark = pytest.mark.slow  # the first test to ask for `smoke` builds the DAG (tests/conftest.py)


def test_smoke_dag_runs_every_stage_and_then_has_nothing_to_do(smoke):
    out = smoke.out
    rundir = out / "runs" / PARENT
    assert [m["step"] for m in read_metrics(rundir)] == [1, 2, 3, 4]
    rollouts = read_rollouts(rundir)
    assert len(rollouts) == 4 * 4 * 4 and set(ROLLOUT_FIELDS) <= set(rollouts[0])
    assert (out / "models" / PARENT / "config.json").exists()
    for key in (PARENT, "tiny"):
        summary = json.loads((out / "scores" / key / "summary.json").read_text())
        assert summary["budgets"] == [16, 48] and set(summary["benchmarks"]) == {"arith-test", "arith-choice"}
    main = (out / "tables" / "main.md").read_text()
    assert all(key in main for key in (PARENT, "tiny"))
    assert (out / "figures" / "dynamics.png").stat().st_size > 10_000
    assert not list(out.rglob("*.partial"))

    again = snakemake(smoke.workdir)
    assert again.returncode == 0
    assert "Nothing to be done" in again.stdout + again.stderr


@pytest.mark.heavy
def test_the_continual_child_trains_from_its_parents_merged_model_and_is_evaluated(smoke, smoke_child):
    """make test-all: the same DAG asked for the continual child runs only the child's jobs (the parent's
    outputs copied, none planned again); the child starts from its parent's merged model, samples up to
    its own 64 tokens, and reaches the scores and the main table."""
    out = smoke_child.out
    rundir = out / "runs" / CHILD
    assert [m["step"] for m in read_metrics(rundir)] == [1, 2, 3, 4]
    assert len(read_rollouts(rundir)) == 4 * 4 * 4 and (out / "models" / CHILD / "config.json").exists()
    assert json.loads((rundir / "run.json").read_text())["settings"]["max_response_length"] == 64
    composed = yaml.safe_load((rundir / "verl_config.yaml").read_text())
    assert composed["actor_rollout_ref"]["model"]["path"] == str(
        out / "models" / PARENT
    )  # not the base model
    summary = json.loads((out / "scores" / CHILD / "summary.json").read_text())
    assert set(summary["benchmarks"]) == {"arith-test", "arith-choice"}
    assert all(key in (out / "tables" / "main.md").read_text() for key in (CHILD, PARENT, "tiny"))
    attempts = (out / "logs" / "train" / f"{PARENT}.attempts.log").read_text()
    assert attempts.count(f"==== train {PARENT}, attempt") == 1  # the parent not trained again
    parent_weights = "checkpoints/global_step_4/actor/model_world_size_1_rank_0.pt"
    assert (out / "runs" / PARENT / parent_weights).read_bytes() == (
        smoke.out / "runs" / PARENT / parent_weights
    ).read_bytes()
