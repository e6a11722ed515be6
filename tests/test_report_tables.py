"""The result tables of the paper's own config.yaml: which table each run is in, the paper's column
order, and the footnotes the config generates.

The summaries are made by ``lie evaluate``'s own summariser from score lines written here (no
model runs): these tests are about layout and notes, which depend on the config, not on the
accuracies.
"""

from __future__ import annotations

import copy

import pytest
from small import paper_config

from lie.analysis.behaviours import load_classifier
from lie.config.layout import Layout
from lie.report import tables
from lie.report.build import report_paths
from lie.report.groups import evaluated_keys, table_keys
from lie.report.inputs import ReportData
from lie.report.paper import load_paper
from lie.report.render import markdown
from lie.stages.evaluate import summarize_scores

B = "qwen3-4b-base"
R = "qwen3-4b-base_dapo_"


def scores(config: dict, key: str) -> list[dict]:
    """Two problems a benchmark, n samples each; the key's name decides which samples are right."""
    lines = []
    salt = sum(map(ord, key))
    for bench in config["evaluation"]["benchmarks"]:
        entry = config["datasets"]["eval"][bench]
        for index in range(2):
            for sample in range(entry["n"]):
                correct = (salt + index + sample) % 3 == 0
                length = 1000 * (1 + (salt + sample) % 40)
                grades = {str(b): {"correct": correct and length <= b, "pred": "", "status": "ok"}
                          for b in config["evaluation"]["budgets"]}  # fmt: skip
                lines.append(dict(bench=bench, index=index, sample=sample, kind=entry["kind"], gold="1",
                                  num_tokens=length, finish_reason="stop", grades=grades))  # fmt: skip
    return lines


def report_data(config: dict, mode: str = "robust") -> ReportData:
    keys = evaluated_keys(config)
    summaries = {}
    for key in keys:
        summary = summarize_scores(scores(config, key), config["evaluation"]["budgets"], config)
        summary["grading"] = {"choice_grading": mode}
        summaries[key] = summary
    return ReportData(config=config, layout=Layout(config), paper=load_paper(), keys=keys,
                      runs=[k for k in keys if k in config["experiments"]],
                      benchmarks=list(config["evaluation"]["benchmarks"]), budget=32768, summaries=summaries,
                      dynamics={}, evals={}, classifier=load_classifier(), n=10, unit="word")  # fmt: skip


@pytest.fixture(scope="module")
def paper():
    return report_data(paper_config())


def rendered(data: ReportData, name: str) -> str:
    keys = table_keys(data.config, data.keys)[name]
    return markdown(tables.result_table(data, keys, tables.result_rows(data, keys, name)))


def test_every_run_is_in_the_table_the_paper_puts_it_in(paper):
    groups = table_keys(paper.config, paper.keys)
    assert groups == {
        "main": [R + s for s in ("grpo", "grpo_lie", "grpo-clip-higher", "grpo-clip-higher_lie", "gspo",
                                 "gspo_lie", "gspo_lie_12k")] + [B],
        "families": ["qwen3-4b_polaris_gspo", "qwen3-4b_polaris_gspo_lie", "octothinker-3b_deepmath-5k_gspo",
                     "octothinker-3b_deepmath-5k_gspo_lie"],
        "scale": ["qwen3-1.7b-base_dapo_gspo", "qwen3-1.7b-base_dapo_gspo_lie", "qwen3-8b-base_dapo_gspo",
                  "qwen3-8b-base_dapo_gspo_lie"],
        "ablation": [R + "gspo_lie", R + "gspo_len-only"],
    }  # fmt: skip
    names = {p.name for p in report_paths(Layout(paper.config))}
    assert {f"{t}.{e}" for t in groups for e in ("md", "csv", "tex")} <= names
    assert "sensitivity.md" not in names and {"lengths.md", "lengths.csv", "lengths.png"} <= names


def test_columns_follow_the_papers_table(paper):
    assert tables.result_columns(paper) == ["math500", "olympiadbench", "amc", "aime24", "aime25", "in_domain",
                                            "arc-c", "gpqa-diamond", "mmlu-pro", "out_of_domain", "minerva"]  # fmt: skip
    header = next(line for line in rendered(paper, "main").splitlines() if line.startswith("| model"))
    titles = [c.strip() for c in header.strip("|").split("|")]
    assert [t for t in titles if not t.endswith(("paper", "Δ"))] == [
        "model", "paper row", "MATH-500 ours", "OlympiadBench ours", "AMC ours", "AIME24 ours", "AIME25 ours",
        "ID avg ours", "ARC-c ours", "GPQA-Diamond ours", "MMLU-Pro ours", "OOD avg ours", "Minerva"]  # fmt: skip


def row(md: str, key: str) -> str:
    return next(line for line in md.splitlines() if line.startswith(f"| {key}"))


def footnote(md: str, number: str) -> str:
    return next(line for line in md.splitlines() if line.startswith(f"- [{number}]"))


def test_assumptions_are_footnotes_of_the_rows_they_concern(paper):
    main = rendered(paper, "main")
    clip = row(main, R + "grpo-clip-higher ")
    assert clip.startswith(f"| {R}grpo-clip-higher [1] |")
    assert "clip_ratio_high 0.28 (low 0.2), DAPO's value" in footnote(main, "1") and "10 epochs" in footnote(
        main, "1"
    )
    assert row(main, R + "grpo-clip-higher_lie").startswith(f"| {R}grpo-clip-higher_lie [2] |")
    assert "its 15 epochs are ours" in footnote(main, "2")
    assert row(main, R + "gspo_lie_12k").startswith(f"| {R}gspo_lie_12k [3] |")
    stage = footnote(main, "3")
    assert f"5 epochs from {R}gspo_lie's final model with a 12288-token response limit" in stage
    assert "its L_ref are qwen3-4b-base's on dapo (reflen.max_tokens 8192, cap 9192)" in stage
    assert (
        "- Checkpoints: the paper's numbers come from the best checkpoint, picked on these test sets" in main
    )
    assert "- Epochs (experiments.<run>.epochs" in main and "10: GRPO, GRPO w/ higher clip, GSPO" in main
    assert "valid.all_qwen3.parquet of LINs-lab/LIE at 1b3bb02 (git blob b7d15c4)" in main
    assert "- Multiple choice (arc-c, gpqa-diamond, mmlu-pro) graded in mode robust" in main
    ablation = rendered(paper, "ablation")
    assert row(ablation, R + "gspo_len-only").startswith(f"| {R}gspo_len-only [1] |")
    assert "length reward alone (no R_red) with e = 500" in footnote(ablation, "1")
    families = rendered(paper, "families")
    polaris = footnote(families, "1")
    assert "trained on polaris: POLARIS-Project/Polaris-Dataset-53K at 296f8e3, all rows." in polaris
    octo = footnote(families, "2")
    assert "trained on deepmath-5k: deepmath-5k-octothinker_add1k.parquet of LINs-lab/LIE at 1b3bb02" in octo
    assert "the authors' training script for OctoThinker" in octo and "a DAPO-Math file" in octo
    assert "evaluated on bare questions" in footnote(families, "3")
    assert row(families, "octothinker-3b_deepmath-5k_gspo_lie").startswith(
        "| octothinker-3b_deepmath-5k_gspo_lie [2,3] |"
    )
    assert "[" not in row(rendered(paper, "scale"), "qwen3-8b-base_dapo_gspo ").split("|")[1]


def test_the_notes_follow_the_config():
    config = paper_config()
    config["algorithms"]["grpo-clip-higher"]["clip_ratio_high"] = 0.3
    config["experiments"][R + "gspo_len-only"]["extra_tokens"] = 0
    config["training"]["eval_step"] = 200
    config["evaluation"]["bare_questions"] = []
    data = report_data(config, mode="authors")
    main, ablation = rendered(data, "main"), rendered(data, "ablation")
    assert "clip_ratio_high 0.3 (low 0.2)" in main and "ours are each run's step-200 checkpoint" in main
    assert "graded in mode authors" in main
    assert "with e = 0 (experiments" in ablation
    assert "bare questions" not in rendered(data, "families")


def test_a_summary_without_a_mode_is_said_so():
    data = report_data(copy.deepcopy(paper_config()))
    for summary in data.summaries.values():
        del summary["grading"]
    assert "graded in mode unrecorded (an older summary: rerun `lie evaluate`)" in rendered(data, "scale")


def test_evaluation_lengths_table(paper):
    rows = tables.length_rows(paper)
    assert {r["budget"] for r in rows} == set(paper_config()["evaluation"]["budgets"])
    md = markdown(tables.length_table(paper, rows))
    assert (
        "| model | MATH-500 | OlympiadBench | AMC | AIME24 | AIME25 | ARC-c | GPQA-Diamond | MMLU-Pro | Minerva |"
        in md
    )
    octo = [r for r in rows if r["key"] == "octothinker-3b_deepmath-5k_gspo" and r["budget"] == 32768]
    salt = sum(map(ord, "octothinker-3b_deepmath-5k_gspo"))
    aime = next(r for r in octo if r["bench"] == "aime24")
    cut = [min(1000 * (1 + (salt + s) % 40), 32768) for s in range(32)]  # longer ones count the budget
    assert aime["mean_tokens"] == pytest.approx(sum(cut) / 32)
