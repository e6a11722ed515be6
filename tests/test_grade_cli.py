"""``lie grade``: JSON lines in and out, statuses, the choice-grading mode, clear errors with the line,
no partial output."""

from __future__ import annotations

import json

import pytest
import yaml
from conftest import REPO

from lie.cli import main


def write_lines(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


ROWS = [
    {
        "id": 1,
        "response": "Thus the answer is \\boxed{\\left( 3, \\frac{\\pi}{2} \\right)}.",
        "gold": "\\left( 3, \\frac{\\pi}{2} \\right)",
        "kind": "math",
    },
    {"id": 2, "response": "So \\boxed{p + q}", "gold": "p - q", "kind": "math"},
    {
        "id": 3,
        "response": "Checking each option, the answer is (C).",
        "gold": "C",
        "kind": "choice",
        "choices": ["A", "B", "C", "D"],
    },
    {"id": 4, "response": "No idea.", "gold": "142.0", "kind": "math"},
]


def test_grades_every_line_and_keeps_its_fields(tmp_path):
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    write_lines(src, ROWS)
    cfg = tmp_path / "c.yaml"
    config = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))
    config["evaluation"].update(grade_timeout_s=20, grade_workers=1)
    cfg.write_text(yaml.safe_dump(config))
    assert main(["grade", "--in", str(src), "--out", str(dst), "--no-progress", "--config", str(cfg)]) == 0
    out = [json.loads(line) for line in dst.read_text().splitlines()]
    assert [o["id"] for o in out] == [1, 2, 3, 4]
    assert [o["correct"] for o in out] == [True, False, True, False]
    assert [o["status"] for o in out] == ["ok", "ok", "ok", "no_answer"]
    assert [o["pred"] for o in out] == ["( 3, \\frac{\\pi}{2} )", "p + q", "C", None]  # math-verify's text
    assert all(o["message"] is None for o in out)
    assert out[2]["choices"] == ["A", "B", "C", "D"]


def test_a_bad_line_stops_with_its_number_and_field(tmp_path, capsys):
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    for bad, message in [
        (
            {"response": "x", "gold": "A", "kind": "choice"},
            "in.jsonl line 2: a choice item needs field 'choices'",
        ),
        ({"response": "x", "kind": "math"}, "in.jsonl line 2: missing field 'gold'"),
        ({"response": "x", "gold": "1", "kind": "essay"}, "in.jsonl line 2: field 'kind' must be one of"),
        (
            {
                "response": "x",
                "gold": "A",
                "kind": "choice",
                "choices": ["A", "B"],
                "choice_grading": "loose",
            },
            "in.jsonl line 2: field 'choice_grading' must be one of ('robust', 'authors'), got 'loose'",
        ),
        (
            {"response": "x", "gold": "A", "kind": "choice", "choices": ["A", "B"], "options": ["1"]},
            "in.jsonl line 2: field 'options' must be a list of 2 option texts aligned with 'choices'",
        ),
    ]:
        write_lines(src, [ROWS[0], bad])
        assert main(["grade", "--in", str(src), "--out", str(dst), "--no-progress"]) == 2
        assert message in capsys.readouterr().err
        assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]
    assert main(["grade", "--in", str(src), "--out", str(dst), "--timeout", "0"]) == 2
    assert "time limit must be > 0" in capsys.readouterr().err


CHOICE_ROWS = [
    # an early boxed letter, then a corrected final answer: the authors' patterns keep the boxed one
    {"id": "late", "response": "\\boxed{B}\n\nWait, the units. Answer: C", "gold": "C", "kind": "choice",
     "choices": ["A", "B", "C", "D"]},
    # the same text, but the line asks for the robust reader itself
    {"id": "own", "response": "\\boxed{B}\n\nWait, the units. Answer: C", "gold": "C", "kind": "choice",
     "choices": ["A", "B", "C", "D"], "choice_grading": "robust"},
    # a boxed value equal to an option's text
    {"id": "value", "response": "so \\boxed{6}", "gold": "C", "kind": "choice", "choices": ["A", "B", "C", "D"],
     "options": ["2", "4", "6", "8"]},
]  # fmt: skip


def grade_rows(tmp_path, rows, *flags):
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    write_lines(src, rows)
    assert (
        main(["grade", "--in", str(src), "--out", str(dst), "--no-progress", "--workers", "1", *flags]) == 0
    )
    return {o["id"]: o for o in map(json.loads, dst.read_text().splitlines())}


def test_choice_grading_flag_defaults_to_robust_and_an_item_field_wins(tmp_path):
    robust = grade_rows(tmp_path, CHOICE_ROWS)
    assert [robust[k]["correct"] for k in ("late", "own", "value")] == [True, True, True]
    assert (
        robust["value"]["pred"] == "C" and "choice_grading" not in robust["late"]
    )  # lines are kept as given
    authors = grade_rows(tmp_path, CHOICE_ROWS, "--choice-grading", "authors")
    assert (authors["late"]["correct"], authors["late"]["pred"]) == (False, "B")
    assert authors["own"]["correct"] is True  # the line's own field wins over the flag
    assert (authors["value"]["correct"], authors["value"]["status"]) == (
        False,
        "no_answer",
    )  # no letter to read


def test_choice_grading_flag_refuses_other_modes(tmp_path, capsys):
    src = tmp_path / "in.jsonl"
    write_lines(src, CHOICE_ROWS)
    with pytest.raises(SystemExit):
        main(["grade", "--in", str(src), "--out", str(tmp_path / "o.jsonl"), "--choice-grading", "lenient"])
    assert "invalid choice: 'lenient'" in capsys.readouterr().err
