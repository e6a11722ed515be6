"""docs/example-main-table.md: what the report's main table looks like beside the paper, before any paper
model has been trained with this pipeline.

The rows are the paper's (config.yaml's names: the base model and GRPO, GRPO + LIE, GSPO, GSPO + LIE on
Qwen3-4B-Base), so the paper's columns, differences and footnotes appear as they will; the scores are
made up: seeded draws, 30 problems a benchmark (each benchmark's samples a problem as config.yaml asks),
summarised by ``lie evaluate``'s own summariser and rendered by ``lie report``'s own table code. No
number in it is a result. ``python tests/example_main_table.py`` rewrites the page;
tests/test_example_main_table.py checks that it is what this code renders now.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "example-main-table.md"
BASE = "qwen3-4b-base"
RUNS = (
    "qwen3-4b-base_dapo_grpo",
    "qwen3-4b-base_dapo_grpo_lie",
    "qwen3-4b-base_dapo_gspo",
    "qwen3-4b-base_dapo_gspo_lie",
)
# made-up chances of a right answer, a factor on each problem's own ease: not a prediction of anything
SKILL = {BASE: 0.35, RUNS[0]: 0.5, RUNS[1]: 0.53, RUNS[2]: 0.55, RUNS[3]: 0.58}
PROBLEMS = 30

HEADER = """# An example of the main table beside the paper (made-up scores)

**No number below is a result.** No paper model has been trained with this pipeline yet; this page shows
the layout a paper run's report will have. The rows are named as the paper's runs (config.yaml), so
the paper's columns, the differences with their 95% intervals, the gain rows and the footnotes are the
ones `lie report` writes for them; the scores are seeded draws (30 problems a benchmark), summarised by
`lie evaluate`'s own code and rendered by `lie report`'s own table code
(`tests/example_main_table.py`; `tests/test_example_main_table.py` keeps this page equal to what the
code renders). How to read every column: [report.md](report.md).

"""


def example_config() -> dict[str, Any]:
    config = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))
    config["runs"] = list(RUNS)
    config["evaluation"]["base_models"] = [BASE]
    return config


def score_lines(config: Any, key: str) -> list[dict[str, Any]]:
    """Score lines as ``lie evaluate`` grades them: each problem's ease drawn once for every key (the
    same problems), each sample right with chance SKILL[key] x ease, at a drawn length."""
    lines = []
    budgets = config.evaluation.budgets
    for bench in config.evaluation.benchmarks:
        entry = config.dataset(bench)
        ease = random.Random(f"ease {bench}")
        draws = random.Random(f"draws {key} {bench}")
        for index in range(PROBLEMS):
            chance = min(1.0, SKILL[key] * ease.uniform(0.2, 1.8))
            for sample in range(entry.n or 1):
                correct = draws.random() < chance
                length = draws.randint(500, max(budgets) + 4000)
                grades = {
                    str(b): {"correct": correct and length <= b, "pred": "", "status": "ok"} for b in budgets
                }
                line = {"bench": bench, "index": index, "sample": sample, "kind": entry.kind, "gold": "1",
                        "num_tokens": length, "finish_reason": "stop", "grades": grades}  # fmt: skip
                if entry.kind == "choice":  # both readers read these answers alike
                    line["grades_by_reader"] = {"robust": grades, "authors": grades}
                lines.append(line)
    return lines


def render() -> str:
    """The page: the header, then the main table as ``lie report`` writes tables/main.md."""
    from lie.analysis.behaviours import load_classifier
    from lie.config import Config
    from lie.config.layout import Layout
    from lie.report import render as rendering
    from lie.report import tables
    from lie.report.groups import TABLES, evaluated_keys, table_keys
    from lie.report.inputs import READERS, ReportData, largest_budget
    from lie.report.intervals import problem_scores
    from lie.report.paper import load_paper
    from lie.stages.evaluate import add_readers, summarize_scores

    config = Config.of(example_config(), "config.yaml")
    keys = evaluated_keys(config)
    budgets, budget = config.evaluation.budgets, largest_budget(config)
    summaries, per_problem = {}, {}
    for key in keys:
        lines = score_lines(config, key)
        summary = summarize_scores(lines, budgets, config)
        add_readers(summary, lines, budgets, config, list(READERS))
        summary["grading"] = {"choice_grading": config.evaluation.choice_grading}
        summaries[key] = summary
        per_problem[key] = problem_scores(lines, budget, READERS)
    data = ReportData(config=config, layout=Layout(config), paper=load_paper(), keys=keys, runs=list(RUNS),
                      benchmarks=list(config.evaluation.benchmarks), budget=budget, summaries=summaries,
                      dynamics={}, evals={}, classifier=load_classifier(), n=config.reward.n,
                      unit=config.reward.unit, problem_scores=per_problem,
                      steps=dict.fromkeys(RUNS, None))  # fmt: skip
    main = table_keys(config, keys)["main"]
    table = tables.result_table(data, main, tables.result_rows(data, main, "main"))
    return HEADER + rendering.markdown(table, f"{TABLES['main']}: `{config.name}` beside the paper")


if __name__ == "__main__":
    PAGE.write_text(render(), encoding="utf-8")
    print(f"wrote {PAGE.relative_to(REPO)}", file=sys.stderr)
