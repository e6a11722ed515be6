"""``lie score``: JSON lines in and out, knobs, clear errors, no partial output, fast start."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lie.cli import main

LOOP = " ".join([" ".join(f"w{i}" for i in range(10))] * 10)


def write_lines(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def rows():
    return [
        {"id": 1, "response": LOOP, "correct": False, "num_tokens": 100, "ref_len": 3000},
        {"id": 2, "response": "The answer is \\boxed{4}.", "correct": True, "num_tokens": 9, "ref_len": 3000},
        {
            "id": 3,
            "response": "short",
            "correct": False,
            "num_tokens": 1,
            "ref_len": 3000,
            "extra_tokens": 1000,
        },
    ]


def test_scores_every_line_and_keeps_its_fields(tmp_path):
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    write_lines(src, rows())
    assert main(["score", "--in", str(src), "--out", str(dst)]) == 0
    out = [json.loads(line) for line in dst.read_text().splitlines()]
    assert [o["id"] for o in out] == [1, 2, 3]
    added = {"acc", "r_len", "r_red", "reward", "max_ngram_count", "c_context", "r_context"}
    assert all(added <= set(o) for o in out)
    assert out[0]["r_red"] == -0.6 and out[0]["max_ngram_count"] == 10
    assert out[1]["reward"] == 1.0
    assert out[2]["r_len"] == pytest.approx(-3.33e-5 * (1 + 1000 / 3000) * 2499)


def test_knobs_from_set_and_yaml(tmp_path):
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    write_lines(src, rows())
    cfg = tmp_path / "knobs.yaml"
    cfg.write_text("reward:\n  beta: 0.5\n  length_term: false\n")
    assert main(["score", "--in", str(src), "--out", str(dst), "--knobs", str(cfg), "--set", "theta=11"]) == 0
    out = [json.loads(line) for line in dst.read_text().splitlines()]
    assert out[0]["r_red"] == 0.0  # theta 11 from --set wins over the default 10
    assert out[2]["r_len"] == 0.0
    assert main(["score", "--in", str(src), "--out", str(dst), "--knobs", str(cfg)]) == 0
    assert json.loads(dst.read_text().splitlines()[0])["r_red"] == -0.5


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"response": "x", "correct": "yes", "num_tokens": 1, "ref_len": 5}, "line 2: field 'correct'"),
        ({"response": "x", "correct": False, "num_tokens": 1}, "line 2: missing field 'ref_len'"),
        ({"response": 3, "correct": False, "num_tokens": 1, "ref_len": 5}, "line 2: field 'response'"),
        ({"response": "x", "correct": False, "num_tokens": 1.5, "ref_len": 5}, "line 2: field 'num_tokens'"),
        (
            {"response": "x", "correct": False, "num_tokens": 2, "ref_len": 5, "token_ids": [1, True]},
            "line 2: field 'token_ids' must be a list of integers",
        ),
    ],
)
def test_a_malformed_line_stops_with_its_number_and_field(tmp_path, capsys, bad, message):
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    write_lines(src, [rows()[0], bad, rows()[1]])
    assert main(["score", "--in", str(src), "--out", str(dst)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count(str(src)) == 1, err  # the file and line named once
    assert list(tmp_path.iterdir()) == [src]  # no output, no partial file


def test_invalid_json_and_bad_knob(tmp_path, capsys):
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text(json.dumps(rows()[0]) + "\n{not json\n")
    assert main(["score", "--in", str(src), "--out", str(dst)]) == 2
    assert "line 2: not valid JSON" in capsys.readouterr().err
    write_lines(src, rows())
    assert main(["score", "--in", str(src), "--out", str(dst), "--set", "tetha=3"]) == 2
    assert "unknown reward key(s) tetha" in capsys.readouterr().err
    assert not dst.exists()


def test_stdin_to_stdout_without_torch_or_verl():
    code = (
        "import sys; from lie.cli import main; rc = main(['score', '--in', '-', '--out', '-']);"
        "heavy = [m for m in ('torch', 'verl', 'transformers', 'trl', 'yaml') if m in sys.modules];"
        "print('HEAVY', heavy, file=sys.stderr); sys.exit(rc)"
    )
    data = "".join(json.dumps(r) + "\n" for r in rows())
    proc = subprocess.run(
        [sys.executable, "-c", code], input=data, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert "HEAVY []" in proc.stderr
    assert [json.loads(line)["id"] for line in proc.stdout.splitlines()] == [1, 2, 3]


def test_console_script_is_installed():
    """The `lie` that pip put beside this Python (pyproject's [project.scripts]) scores a line."""
    script = Path(sys.executable).parent / "lie"
    assert script.is_file(), f"{script} is missing: `make venv` installs the package with its console script"
    data = "".join(json.dumps(r) + "\n" for r in rows())
    proc = subprocess.run(
        [str(script), "score", "--in", "-", "--out", "-"],
        input=data,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(line)["id"] for line in proc.stdout.splitlines()] == [1, 2, 3]
