"""``lie grade``: JSON lines in and out, statuses, clear errors with the line, no partial output."""

from __future__ import annotations

import json

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
    config["evaluation"].update(grade_timeout_s=5, grade_workers=1)
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
    ]:
        write_lines(src, [ROWS[0], bad])
        assert main(["grade", "--in", str(src), "--out", str(dst), "--no-progress"]) == 2
        assert message in capsys.readouterr().err
        assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]
    assert main(["grade", "--in", str(src), "--out", str(dst), "--timeout", "0"]) == 2
    assert "time limit must be > 0" in capsys.readouterr().err
