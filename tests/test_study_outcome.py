"""A failed gate is a registered outcome from the third registration on: ``lie study-gates --outcome`` reads
the gates' table back in one line (exit 3 on a gate stop, 0 when every gate passed), and ``make study``
ends there with exit 0; an error is still an error."""

from __future__ import annotations

import csv
import re
import subprocess
from pathlib import Path

import yaml
from small import write_config

REPO = Path(__file__).resolve().parents[1]
COLUMNS = ["base_model", "step_low", "full_low", "right_per_run_high", "step_gate", "full_depth_gate",
           "trap_gate", "passed"]  # fmt: skip


def _config(tmp_path: Path) -> Path:
    config = yaml.safe_load((REPO / "workflow" / "configs" / "study-v3.yaml").read_text(encoding="utf-8"))
    config["outdir"] = str(tmp_path / "out")
    return write_config(tmp_path / "study.yaml", config)


def _table(tmp_path: Path, rows: list[list[object]]) -> None:
    tables = tmp_path / "out" / "tables"
    tables.mkdir(parents=True, exist_ok=True)
    with (tables / "study_gates.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        writer.writerows(rows)


def test_the_outcome_of_the_gates_is_one_line_and_a_gate_stop_is_exit_3(tmp_path, capsys):
    from lie.cli import main

    cfg = _config(tmp_path)
    assert main(["study-gates", "--config", str(cfg), "--outcome"]) == 2  # no table yet: an error
    assert "study_gates.csv: no gates' table; run the study_gates target first" in capsys.readouterr().err
    _table(tmp_path, [["tiny-v3-m0", 0.4431, 0.0052, 2.37, False, False, True, False],
                      ["tiny-v3-m1", 0.9, 0.5, 2.92, True, True, True, True]])  # fmt: skip
    assert main(["study-gates", "--config", str(cfg), "--outcome"]) == 3
    line = capsys.readouterr().out.strip()
    assert "\n" not in line and line.startswith("study-v3: stopped at the registered gates")
    assert "failed tiny-v3-m0 G1 0.443, tiny-v3-m0 G2 0.005 (" in line and "tiny-v3-m1" not in line
    assert line.endswith("tables/study_gates.md)")
    _table(tmp_path, [["tiny-v3-m0", 0.9, 0.5, 2.0, True, True, True, True]])
    assert main(["study-gates", "--config", str(cfg), "--outcome"]) == 0
    assert "every gate passed on 1 supervised model(s)" in capsys.readouterr().out


def _responses(path: Path, samples: int, written: int, right_steps: int) -> None:
    from lie.study.responses import COLUMNS, write_responses

    rows = []
    for index in range(10):
        for sample in range(samples):
            row = dict.fromkeys(COLUMNS, 0)
            row.update(bench="chain-test-deep", index=index, sample=sample, depth_needed=6, depth_written=written,
                       steps_right=right_steps, correct={"64": False}, boxed=None, strict=False, loop=False,
                       finish_reason="stop")  # fmt: skip
            rows.append(row)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_responses(path, rows)


def test_a_failed_gate_of_the_third_registration_keeps_its_tables_and_exits_0(tmp_path, caplog):
    """Snakemake removes a failed job's outputs: the gates' job succeeds on a gate stop, so its tables stay."""
    from lie.cli import main

    cfg = _config(tmp_path)
    for model in ("tiny-v3-m0", "tiny-v3-m1"):  # forced: 6 steps written, 2 right, no answer right
        _responses(tmp_path / "out" / "probe-forced" / model / "responses.jsonl", 4, 6, 2)
        _responses(tmp_path / "out" / "probe" / model / "responses.jsonl", 16, 1, 1)
    assert main(["study-gates", "--config", str(cfg)]) == 0
    err = caplog.text
    assert "tiny-v3-m0: G1 step accuracy's lower bound" in err and "tiny-v3-m1: G2" in err
    assert "the registration stops here, before any RL run, without a verdict" in err
    table = (tmp_path / "out" / "tables" / "study_gates.md").read_text()
    assert table.count("| **FAIL** |") == 2 and "preregistration-v3.md" in table
    assert main(["study-gates", "--config", str(cfg), "--outcome"]) == 3


def test_make_study_ends_with_exit_0_at_a_gate_stop_and_fails_only_on_an_error(tmp_path):
    """The recipe as make runs it (make -n), its shell run with stand-ins for the two commands it calls."""
    proc = subprocess.run(["make", "-n", "study"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    script = re.search(r"sh -c '(.*)'", proc.stdout.replace("\\\n", ""), re.S).group(1)
    assert re.search(r"study-gates --config workflow/configs/study-v3.yaml\s+--outcome", script)
    body = re.sub(r"PATH=\S+ OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 \S*bin/lie snakemake", "smk", script)
    body = body.replace(".venv/bin/lie study-gates", "outcome")
    assert body.count("smk") == 2 and body.count("outcome --config") == 1, body

    def run(gates: int, outcome: int) -> tuple[int, list[str]]:
        stand_ins = (
            f'smk() {{ case "$*" in *study_gates) echo study_gates >> log; return {gates};; '
            f"*) echo study >> log;; esac; }}; outcome() {{ echo outcome >> log; return {outcome}; }}; : > log; "
        )
        done = subprocess.run(["sh", "-c", stand_ins + body], cwd=tmp_path, capture_output=True, timeout=30)
        return done.returncode, (tmp_path / "log").read_text().split()

    assert run(0, 3) == (0, ["study_gates", "outcome"])  # a gate stop: a result, no run asked for
    assert run(0, 0) == (0, ["study_gates", "outcome", "study"])  # every gate passed: the runs
    assert run(1, 0) == (1, ["study_gates"])  # the gates' jobs failed: an error
    assert run(0, 2) == (2, ["study_gates", "outcome"])  # the table unreadable: an error
