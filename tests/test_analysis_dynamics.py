"""Training dynamics from real rollout and metric files written by the TRL training stage."""

from __future__ import annotations

import json
import shutil

import pytest
from report_pipeline import RUNS, fresh_copy, pipeline

from lie.analysis.dynamics import ENTROPY, run_dynamics
from lie.config import Config
from lie.core.errors import LieError
from lie.formats.runs import read_metrics, read_rollouts

pytestmark = pytest.mark.slow
GRPO, GSPO_LIE, LOOP = RUNS


@pytest.fixture(scope="module")
def built():
    return pipeline()


@pytest.fixture(scope="module")
def dynamics(built):
    return {run: run_dynamics(Config.of(built.config), run) for run in RUNS}


def test_every_step_is_read_and_its_means_match_the_rollouts(built, dynamics):
    for run in RUNS:
        dyn = dynamics[run]
        rundir = built.layout.run_dir(run)
        assert [s.step for s in dyn.steps] == [1, 2, 3] and dyn.total_steps == 3 and not dyn.notes
        entropy = {m["step"]: m[ENTROPY] for m in read_metrics(rundir)}
        for s in dyn.steps:
            records = read_rollouts(rundir, s.step)
            assert (s.samples, s.groups) == (8, 2)  # 2 prompts x 4 samples
            assert s.response_length == pytest.approx(sum(r["num_tokens"] for r in records) / 8)
            assert s.accuracy == pytest.approx(sum(r["acc"] for r in records) / 8)
            assert s.c_context == pytest.approx(sum(r["c_context"] for r in records) / 8)
            assert s.r_context == pytest.approx(sum(r["r_context"] for r in records) / 8)
            assert s.entropy == entropy[s.step]
            assert s.wrong == sum(not r["acc"] for r in records)


def test_a_looping_run_has_low_state_coverage_and_no_diversity(dynamics):
    loop, normal = dynamics[LOOP], dynamics[GSPO_LIE]
    for s in loop.steps:
        assert s.red_flagged == 1.0 and s.red_applied == 1.0  # LIE on: every sample penalised
        assert s.r_context < 0.1 and s.c_context <= 8  # one 8-token phrase, over and over
        assert s.group_overlap == 1.0 and s.group_distinct < 0.1  # four copies of one text
        assert s.response_length == 128 and s.entropy == pytest.approx(0.0, abs=1e-4)
    for s in normal.steps:
        assert s.red_flagged == 0.0 and s.r_context > 0.9
        assert s.group_distinct is None or s.group_distinct > 0.9
        assert s.entropy > 1.0


def test_flagged_shares_see_what_a_baseline_is_not_penalised_for(dynamics):
    # L_ref = 40, tolerance 8: wrong answers under 32 tokens (all of them: at most 24) are below target
    for run in (GRPO, GSPO_LIE):
        for s in dynamics[run].steps:
            assert s.len_flagged == 1.0
            assert s.len_applied == (0.0 if run == GRPO else 1.0)  # the baseline has R_len off
            assert s.red_applied == 0.0
    for s in dynamics[LOOP].steps:  # 128 tokens: past the target, no length term
        assert s.len_flagged == 0.0 and s.len_applied == 0.0


def test_at_most_max_points_steps_are_read(built):
    dyn = run_dynamics(Config.of(built.config), GSPO_LIE, max_points=2)
    assert [s.step for s in dyn.steps] == [1, 3] and dyn.notes == ["2 of 3 steps read (evenly spaced)"]


def test_runs_without_files_are_errors_that_say_what_to_do(tmp_path):
    copy = fresh_copy(tmp_path)
    rundir = copy.layout.run_dir(GRPO)
    shutil.rmtree(rundir.metrics_dir)
    with pytest.raises(LieError, match=f"{rundir.metrics_dir}: run {GRPO} has no metrics.*lie train {GRPO}"):
        run_dynamics(Config.of(copy.config), GRPO)
    rundir = copy.layout.run_dir(GSPO_LIE)
    shutil.rmtree(rundir.rollouts_dir)
    with pytest.raises(LieError, match=f"{rundir.rollouts_dir}: run {GSPO_LIE} has no rollouts"):
        run_dynamics(Config.of(copy.config), GSPO_LIE)
    shutil.rmtree(copy.layout.run_dir(LOOP).root)
    with pytest.raises(LieError, match=f"run {LOOP} has no folder"):
        run_dynamics(Config.of(copy.config), LOOP)


def test_a_rollout_line_without_a_field_is_named(tmp_path):
    copy = fresh_copy(tmp_path)
    path = sorted(copy.layout.run_dir(GRPO).rollouts_dir.glob("step-000002.*"))[0]
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    del lines[3]["max_ngram_count"]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with pytest.raises(LieError, match="step-000002.*lacks max_ngram_count"):
        run_dynamics(Config.of(copy.config), GRPO)


def test_a_step_without_entropy_is_a_gap(tmp_path):
    copy = fresh_copy(tmp_path)
    rundir = copy.layout.run_dir(GRPO)
    (path,) = rundir.metrics_dir.glob("launch-*.jsonl")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for line in lines:
        line["data"].pop(ENTROPY, None) if line["step"] == 2 else None
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    dyn = run_dynamics(Config.of(copy.config), GRPO)
    assert [s.entropy is None for s in dyn.steps] == [False, True, False]
