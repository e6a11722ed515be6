"""The sensitivity runs of config.yaml: an optional group, selected by name, priced, tabulated.

GSPO+LIE with one knob moved (theta, n, the length increment e). They stay out of the default
target; ``runs=[...]`` builds them with their own reward knobs; ``lie plan --group`` prices them;
the report gives them a table beside the run they vary.
"""

from __future__ import annotations

import pytest
from small import REPO, paper_config
from test_report_tables import report_data

from lie.cli import main
from lie.config import Config, reward_settings, selected_runs, validate_config
from lie.config.layout import Layout
from lie.report import tables
from lie.report.build import report_paths
from lie.report.groups import table_keys
from lie.report.render import markdown

LIE = "qwen3-4b-base_dapo_gspo_lie"
GROUP = [f"{LIE}_{s}" for s in ("theta5", "theta20", "n5", "n20", "e0", "e1000")]


def selected(runs: list[str]) -> dict:
    config = paper_config()
    config["runs"] = runs
    validate_config(config, source="test")
    return config


def test_the_group_is_optional_and_selectable():
    config = paper_config()
    assert [n for n, e in config["experiments"].items() if e.get("group") == "sensitivity"] == GROUP
    assert (
        not set(GROUP) & set(selected_runs(Config.of(config))) and len(selected_runs(Config.of(config))) == 16
    )
    assert selected_runs(Config.of(selected(GROUP[:2]))) == GROUP[:2]


@pytest.mark.parametrize(
    "run, knobs",
    [(GROUP[0], (5, 10, 500)), (GROUP[3], (10, 20, 500)), (GROUP[5], (10, 10, 1000)), (LIE, (10, 10, 500))],
)
def test_each_run_trains_with_its_own_knob(run, knobs):
    reward = reward_settings(Config.of(paper_config()), run)
    assert (reward["theta"], reward["n"], reward["extra_tokens"]) == knobs
    assert reward["length_term"] and reward["redundancy_term"]


def test_lie_plan_prices_the_group(capsys):
    config = str(REPO / "config.yaml")
    assert main(["plan", "--config", config, "--group", "sensitivity"]) == 0
    out = capsys.readouterr().out
    lines = {line.split()[0]: line.split() for line in out.splitlines() if line.startswith(LIE)}
    assert list(lines) == GROUP
    assert {cells[3] for cells in lines.values()} == {str(15 * (17398 // 128))}  # 15 epochs of DAPO
    assert main(["plan", "--config", config, "--group", "nope"]) == 2
    assert f"--group nope: no experiment of {config} has group: nope" in capsys.readouterr().err


def test_the_report_tabulates_the_group_beside_the_run_it_varies():
    config = selected([LIE, *GROUP])
    data = report_data(config)
    groups = table_keys(Config.of(config), data.keys)
    assert groups["sensitivity"] == [LIE, *GROUP] and groups["main"] == ["qwen3-4b-base", LIE]
    assert {"sensitivity.md", "sensitivity.csv", "sensitivity.tex"} <= {
        p.name for p in report_paths(Layout(Config.of(config)))
    }
    rows = tables.sensitivity_rows(data, groups["sensitivity"])
    assert [(r["theta"], r["n"], r["e"]) for r in rows] == [
        (10, 10, 500), (5, 10, 500), (20, 10, 500), (10, 5, 500), (10, 20, 500), (10, 10, 0), (10, 10, 1000)
    ]  # fmt: skip
    first = rows[1]
    summary = data.summaries[GROUP[0]]
    assert first["in_domain"] == pytest.approx(100 * summary["in_domain"]["budgets"]["32768"]["avg"])
    md = markdown(tables.sensitivity_table(data, rows))
    assert "| model | θ | n | e (ΔL) | ID avg | OOD avg | ID mean tokens |" in md
    assert f"| {GROUP[0]} | 5 | 10 | 500 |" in md
    assert "sensitivity.md" not in {p.name for p in report_paths(Layout(Config.of(paper_config())))}
