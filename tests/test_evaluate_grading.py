"""``lie evaluate``'s grading inputs: the choice-grading mode, the option texts, evaluation lengths.

The mode (``evaluation.choice_grading``) and the option texts (the benchmark's data rows,
``extra_info.choices``) reach every multiple-choice item the graders see; the summary records the
mode, so that two summaries of the same generations say which reader produced them. Every choice
text is also read by the other reader (``grades_by_reader``, the summary's ``by_reader``).
"""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from conftest import REPO

from lie.cli import main
from lie.config import Config
from lie.core.errors import LieError
from lie.grading import grade_many
from lie.stages.evaluate import evaluate

OPTIONS = {0: ["trout", "whale", "crow", "frog"], 1: ["iron", "ice", "salt", "neon"]}
GOLD = {0: "B", 1: "D"}


def config(mode: str | None = "robust") -> dict:
    cfg = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))
    cfg["evaluation"].update(budgets=[2, 1000], grade_workers=1)
    if mode is None:
        del cfg["evaluation"]["choice_grading"]
    else:
        cfg["evaluation"]["choice_grading"] = mode
    return cfg


def data_file(path, options=OPTIONS):
    """arc-c rows as `lie data` writes them (only the fields evaluate reads)."""
    rows = [
        {
            "data_source": "arc-c",
            "extra_info": {"index": i, "letters": list("ABCD"), "choices": texts},
        }
        for i, texts in options.items()
    ]
    pq.write_table(pa.Table.from_pylist(rows), path)
    return str(path)


def generations(path, texts=("I'd pick the whale: \\boxed{B}", "neon, so D")):
    lines = [
        {"bench": "arc-c", "index": i, "sample": 0, "gold": GOLD[i], "kind": "choice", "letters": list("ABCD"),
         "token_ids": list(range(3 + i)), "text": text, "finish_reason": "stop"}
        for i, text in enumerate(texts)
    ]  # fmt: skip
    lines.append({"bench": "aime24", "index": 0, "sample": 0, "gold": "204", "kind": "math",
                  "token_ids": [1, 2, 3, 4, 5], "text": "\\boxed{204}", "finish_reason": "stop"})  # fmt: skip
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return str(path)


class Cut:
    """A tokenizer stand-in: a cut generation reads as the words of its kept token ids."""

    def decode(self, ids, skip_special_tokens=True):
        return " ".join(f"t{i}" for i in ids)


class Recorder:
    """The real grader, keeping the items it was given."""

    def __init__(self):
        self.items = []

    def __call__(self, items, **kwargs):
        self.items.extend(items)
        return grade_many(items, **kwargs)


@pytest.mark.parametrize("mode", ["robust", "authors"])
def test_mode_and_option_texts_reach_every_choice_item(tmp_path, mode):
    grader = Recorder()
    scores, summary = evaluate(
        Config.of(config(mode)), [generations(tmp_path / "g.jsonl")], Cut(), progress=False, grader=grader,
        data_paths=[data_file(tmp_path / "arc-c.parquet")],
    )  # fmt: skip
    choice = [i for i in grader.items if i["kind"] == "choice"]
    math = [i for i in grader.items if i["kind"] == "math"]
    assert {i["choice_grading"] for i in choice} == {"robust", "authors"}  # both readers, always
    assert len(choice) == 8  # two samples, each cut at 2 tokens and whole, read by each reader
    assert {tuple(i["options"]) for i in choice} == {tuple(v) for v in OPTIONS.values()}
    assert math and not any("options" in i or "choice_grading" in i for i in math)
    assert summary["grading"]["choice_grading"] == mode
    assert (summary["grading"]["choice_samples"], summary["grading"]["choice_samples_with_options"]) == (2, 2)
    assert scores[0]["grades"]["1000"]["correct"] is True  # \boxed{B}, gold B
    # the main grades are the mode's; both readers' are kept beside them, and summarised
    assert scores[1]["grades"] == scores[1]["grades_by_reader"][mode]
    assert [scores[1]["grades_by_reader"][m]["1000"]["correct"] for m in ("robust", "authors")] == [
        True,
        False,
    ]
    assert "grades_by_reader" not in scores[2]  # math
    readers = summary["benchmarks"]["arc-c"]["by_reader"]
    assert {m: readers[m]["budgets"]["1000"]["avg@n:n=1"] for m in readers} == {"robust": 1.0, "authors": 0.5}
    ood = summary["out_of_domain"]["by_reader"]
    assert {m: ood[m]["budgets"]["1000"]["mean_of_present"] for m in ood} == {"robust": 1.0, "authors": 0.5}
    assert summary["benchmarks"]["arc-c"]["budgets"] == readers[mode]["budgets"]
    assert "by_reader" not in summary["benchmarks"]["aime24"] and "by_reader" not in summary["in_domain"]


def test_the_mode_defaults_to_robust_and_a_bad_one_is_refused(tmp_path):
    gen = generations(tmp_path / "g.jsonl")
    _, summary = evaluate(Config.of(config(None)), [gen], Cut(), progress=False)
    assert summary["grading"]["choice_grading"] == "robust"
    assert summary["grading"]["choice_samples_with_options"] == 0  # no data file: letters only
    with pytest.raises(LieError, match="evaluation.choice_grading must be one of .*got 'lenient'"):
        evaluate(Config.of(config("lenient")), [gen], Cut(), progress=False)


def test_options_that_do_not_fit_the_letters_are_refused(tmp_path):
    bad = data_file(tmp_path / "arc-c.parquet", {0: ["a", "b", "c"], 1: OPTIONS[1]})
    with pytest.raises(LieError, match="line 1: 3 option texts for the 4 letters"):
        evaluate(
            Config.of(config()), [generations(tmp_path / "g.jsonl")], Cut(), progress=False, data_paths=[bad]
        )


def test_mean_response_length_per_benchmark_and_budget(tmp_path):
    _, summary = evaluate(Config.of(config()), [generations(tmp_path / "g.jsonl")], Cut(), progress=False)
    assert summary["benchmarks"]["arc-c"]["mean_tokens"] == {"2": 2.0, "1000": 3.5}  # 3 and 4 tokens
    assert summary["benchmarks"]["aime24"]["mean_tokens"] == {"2": 2.0, "1000": 5.0}


def test_cli_records_the_mode_given_on_the_command_line(tmp_path):
    cfg = tmp_path / "config.yaml"
    cfg.write_text(
        yaml.safe_dump({**config("robust"), "evaluation": {**config()["evaluation"], "budgets": [1000]}})
    )
    out, summary = tmp_path / "scores.jsonl", tmp_path / "summary.json"
    args = ["evaluate", "--config", str(cfg), "--gen", generations(tmp_path / "g.jsonl"),
            "--data", data_file(tmp_path / "arc-c.parquet"), "--choice-grading", "authors",
            "--out-scores", str(out), "--out-summary", str(summary), "--no-progress"]  # fmt: skip
    assert main(args) == 0
    assert json.loads(summary.read_text())["grading"]["choice_grading"] == "authors"
    csv_path = tmp_path / "summary.csv"
    args[args.index("--out-summary") + 1] = str(csv_path)
    assert main(args) == 0
    assert "aime24,1000,mean_tokens,5.0," in csv_path.read_text().splitlines()
