"""The paper's numbers file against SPEC section 5 (a verbatim copy in tests/data), its lookups, and the
table renderers."""

from __future__ import annotations

import re

import pytest
from conftest import REPO
from small import paper_config

from lie.report.paper import load_paper
from lie.report.render import Group, Table, csv_text, fmt, latex, markdown, tex_escape

SPEC = REPO.parent / "shared" / "SPEC.md"
SECTION_5 = REPO / "tests" / "data" / "paper_table1.md"  # SPEC section 5, copied verbatim
SPEC_ROWS = {"Base": "qwen3-4b-base", "GRPO": "qwen3-4b-base_dapo_grpo", "GRPO+LIE": "qwen3-4b-base_dapo_grpo_lie",
             "GSPO": "qwen3-4b-base_dapo_gspo", "GSPO+LIE": "qwen3-4b-base_dapo_gspo_lie"}  # fmt: skip
SPEC_COLUMNS = ["math500", "olympiadbench", "amc", "aime24", "aime25", "in_domain", "arc-c", "gpqa-diamond",
                "mmlu-pro", "out_of_domain"]  # fmt: skip


def spec_section_5(text: str) -> str:
    return text.split("## 5.")[1].split("## 6.")[0].rstrip()


@pytest.mark.shared(SPEC)
def test_the_committed_copy_is_spec_section_5():
    assert spec_section_5(SECTION_5.read_text(encoding="utf-8") + "## 6.") == spec_section_5(
        SPEC.read_text(encoding="utf-8")
    )


def test_table_one_equals_spec_section_5():
    paper = load_paper()
    section = spec_section_5(SECTION_5.read_text(encoding="utf-8") + "## 6.")
    rows = [line.strip("|").split("|") for line in section.splitlines() if line.startswith("| ")]
    seen = 0
    for cells in rows:
        name = cells[0].strip()
        if name in SPEC_ROWS:
            values = [float(c) for c in cells[1:]]
            assert [paper.main_value(SPEC_ROWS[name], c) for c in SPEC_COLUMNS] == values, name
            assert paper.label(SPEC_ROWS[name]) == name
            seen += 1
    assert seen == 5
    gspo = re.search(r"GSPO ([.\d ]+); GSPO\+LIE ([.\d ]+)\.", section.replace("\n", " "))
    curves = paper.tts_curves()
    assert curves["qwen3-4b-base_dapo_gspo"][2] == [float(v) for v in gspo.group(1).split()]
    assert curves["qwen3-4b-base_dapo_gspo_lie"][2] == [float(v) for v in gspo.group(2).split()]


def test_every_key_and_benchmark_is_a_name_of_config_yaml():
    config, paper = paper_config(), load_paper()
    names = set(config["experiments"]) | set(config["models"])
    rows = paper.data["main"]["rows"]
    assert set(rows) <= names
    benches = set(config["evaluation"]["benchmarks"]) | {"in_domain", "out_of_domain"}
    assert all(set(row["values"]) <= benches and row.get("source") for row in rows.values())
    assert paper.domain_benchmarks("in_domain") == config["evaluation"]["in_domain"]
    assert paper.domain_benchmarks("out_of_domain") == config["evaluation"]["out_of_domain"]
    assert set(paper.tts_curves()) | set(paper.data["c_context"]["values"]) <= names
    assert paper.data["tts"]["budgets"] == config["evaluation"]["budgets"]


def test_lookups_give_none_where_the_paper_is_silent():
    paper = load_paper()
    assert paper.main_value("qwen3-4b-base_dapo_gspo_lie", "aime25") == 26.7
    assert paper.main_value("qwen3-4b-base_dapo_gspo_lie_12k", "in_domain") == 56.3
    assert paper.main_value("qwen3-4b-base_dapo_gspo_lie_12k", "aime25") is None
    assert paper.main_value("qwen3-4b-base_dapo_gspo", "minerva") is None
    assert paper.main_value("smoke_gspo", "math500") is None and paper.label("smoke_gspo") is None
    assert paper.tts_value("qwen3-4b-base_dapo_gspo_lie", "in_domain", 8192) == 0.526
    assert paper.tts_value("qwen3-4b-base_dapo_gspo_lie", "in_domain", 48) is None
    assert paper.tts_value("qwen3-4b-base_dapo_gspo_lie", "aime24", 8192) is None
    assert paper.behaviour_count("qwen3-4b-base_dapo_gspo", "backtracking") == 103
    assert paper.behaviour_count("qwen3-4b-base_dapo_gspo", "verification") is None
    assert paper.c_context("qwen3-4b-base_dapo_gspo_lie") == 1500
    assert paper.comparable_domain("in_domain", ["aime25", "aime24", "amc", "olympiadbench", "math500"])
    assert not paper.comparable_domain("in_domain", ["math500"])


def test_renderers():
    table = Table([Group("model", [""], "l"), Group("a_b", ["ours", "paper", "Δ"]), Group("OOD avg", [""])])
    table.add(["run_1", fmt(12.345), fmt(10.0), fmt(2.345, sign=True), fmt(None)])
    table.caption, table.notes = "Caption.", ["run_1: a note"]
    md = markdown(table, "Title")
    assert md.splitlines() == [
        "## Title", "", "Caption.", "",
        "| model | a_b ours | a_b paper | a_b Δ | OOD avg |",
        "|:---|---:|---:|---:|---:|",
        "| run_1 | 12.3 | 10.0 | +2.3 | — |",
        "", "- run_1: a note",
    ]  # fmt: skip
    tex = latex(table, "results/x")
    assert r"\begin{tabular}{lrrrr}" in tex and r"\multicolumn{3}{c}{a\_b}" in tex
    assert r"\cmidrule(lr){2-4}" in tex and r"model & ours & paper & $\Delta$ & OOD avg \\" in tex
    assert r"run\_1 & 12.3 & 10.0 & +2.3 & -- \\" in tex and "% run_1: a note" in tex
    assert tex_escape("50% of x_1 & {y}") == r"50\% of x\_1 \& \{y\}"
    assert csv_text([{"a": 1.5, "b": None}], ["a", "b"]) == "a,b\n1.5,\n"
    with pytest.raises(ValueError):
        table.add(["too", "short"])


# Issue 14's reading of the authors' assets/tts.png at 4k/8k/12k/16k/24k/32k (the four GRPO curves).
ISSUE_14_TTS = """GRPO .421 .433 .435 .436 .436 .436; GRPO+LIE .436 .466 .469 .469 .469 .469; GRPO with higher
clip .443 .489 .498 .499 .499 .499; higher clip + LIE .447 .507 .521 .523 .525 .526."""
ISSUE_14_KEYS = {"GRPO": "qwen3-4b-base_dapo_grpo", "GRPO+LIE": "qwen3-4b-base_dapo_grpo_lie",
                 "GRPO with higher clip": "qwen3-4b-base_dapo_grpo-clip-higher",
                 "higher clip + LIE": "qwen3-4b-base_dapo_grpo-clip-higher_lie"}  # fmt: skip


def test_the_test_time_scaling_figure_has_the_papers_six_curves():
    curves = load_paper().tts_curves()
    assert len(curves) == 6
    for part in " ".join(ISSUE_14_TTS.split()).rstrip(".").split("; "):
        name, values = re.fullmatch(r"(.+?) ((?:\.\d+ ?)+)", part).groups()
        label, budgets, ys = curves[ISSUE_14_KEYS[name]]
        assert ys == [float(v) for v in values.split()] and budgets[-1] == 32768, name
    for label, _, ys in curves.values():
        assert ys == sorted(ys), f"{label}: accuracy falls with a larger budget"
