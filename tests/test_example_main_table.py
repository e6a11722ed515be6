"""docs/example-main-table.md is what the report's own code renders for its made-up scores now
(tests/example_main_table.py): a change to the main table's layout, notes or the paper's numbers shows
on that page in the same commit."""

from __future__ import annotations

from example_main_table import PAGE, RUNS, render


def test_the_example_page_is_what_the_report_code_renders():
    assert PAGE.read_text(encoding="utf-8") == render(), "rerun: .venv/bin/python tests/example_main_table.py"


def test_the_example_shows_the_papers_columns_and_says_its_scores_are_made_up():
    page = PAGE.read_text(encoding="utf-8")
    assert "**No number below is a result.**" in page
    header = next(line for line in page.splitlines() if line.startswith("| model | paper row |"))
    assert "MATH-500 paper" in header and "ID avg paper" in header and "OOD avg paper" in header
    rows = {
        line.split(" | ")[0].lstrip("| "): line for line in page.splitlines() if line.startswith("| qwen3")
    }
    assert set(RUNS) <= set(rows)
    assert (
        "| GSPO+LIE | " in rows["qwen3-4b-base_dapo_gspo_lie"]
        and "| 88.4 |" in rows["qwen3-4b-base_dapo_gspo_lie"]
    )
