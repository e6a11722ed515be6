"""``lie behaviours`` on real generations of the pipeline: patterns, and the judge path end to end."""

from __future__ import annotations

import json

import pytest
from report_pipeline import BASE, RUNS, pipeline

from lie.cli import main

pytestmark = pytest.mark.slow
LOOP = RUNS[2]


@pytest.fixture(scope="module")
def built():
    return pipeline()


def test_pattern_counts_per_file_and_per_response(built, tmp_path, capsys):
    loop, base = built.layout.generations(LOOP, "math500"), built.layout.generations(BASE, "math500")
    out = tmp_path / "counts.jsonl"
    assert main(["behaviours", "--gen", str(loop), str(base), "--out", str(out)]) == 0
    table = capsys.readouterr().out
    assert f"| {loop} | 24 | 144 (600.0) | 0 (0.0) | 0 (0.0) | 0 (0.0) |" in table
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 48 and "text" not in lines[0]
    assert lines[0] == {"file": str(loop), "bench": "math500", "index": 0, "sample": 0,
                        "counts": {"backtracking": 6, "verification": 0, "subgoal_setting": 0, "enumeration": 0}}  # fmt: skip
    assert main(["behaviours", "--gen", str(loop), "--limit", "2", "--out", str(out)]) == 0
    assert len(out.read_text().splitlines()) == 2


def test_judge_mode_runs_a_model_and_keeps_unreadable_answers_as_errors(built, tmp_path, capsys):
    # the tiny model is no judge: its answers hold no JSON, which must be reported, not read as zeros
    gen, out = built.layout.generations(LOOP, "arc-c"), tmp_path / "judged.jsonl"
    args = ["behaviours", "--gen", str(gen), "--out", str(out), "--judge", "--model", str(built.tiny)]
    assert main([*args, "--engine", "hf", "--max-tokens", "8", "--limit", "2"]) == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [line["judge_error"] for line in lines] == ["no JSON object in the answer"] * 2
    assert all("judge" not in line and line["judge_prompt_version"] == 1 for line in lines)
    assert "(judge, 0 read)" in capsys.readouterr().out


def test_judge_mode_needs_a_model(built, capsys):
    gen = built.layout.generations(LOOP, "arc-c")
    assert main(["behaviours", "--gen", str(gen), "--judge"]) == 2
    assert "--judge needs --model" in capsys.readouterr().err
