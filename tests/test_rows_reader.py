"""One reader per file that passes between stages: training rows (``lie.formats.rows.read_rows``),
grade lines (``lie.formats.graded.read_graded_lines``), a run's metrics and rollout files
(``lie.formats.runs``). The same bad file is refused by every stage and engine that reads it, in one
line naming the file, the row (or line) and the key."""

from __future__ import annotations

import copy
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from small import paper_config, write_config

from lie.config import Config
from lie.core.errors import LieError
from lie.formats.rows import Item, make_row

BENCH = "aime24"


def _rows() -> list[dict]:
    template = paper_config()["prompt"]["math"]
    rows = [
        make_row(BENCH, "math", "test", i, Item(f"What is {i} + 1?", str(i + 1)), template) for i in range(3)
    ]
    for row in rows:
        row["reward_model"]["num_tokens"] = 100
    return rows


def _content_none(rows):
    rows[1]["prompt"][0]["content"] = None  # `lie reflen` used to send the model the string "None"


def _content_empty(rows):
    rows[1]["prompt"][0]["content"] = "  "


def _ref_len_text(rows):
    for row in rows:
        row["reward_model"]["num_tokens"] = "many"


def _choice_without_letters(rows):
    rows[1]["extra_info"].update(kind="choice", letters=[], choices=[])
    rows[1]["reward_model"]["ground_truth"] = "B"


def _no_prompt(rows):
    for row in rows:
        del row["prompt"]


CASES = {
    "content None": (_content_none, "row 1: field 'prompt[0].content' is missing"),
    "content empty": (_content_empty, "row 1: field 'prompt[0].content' must be a non-empty string"),
    "L_ref as text": (
        _ref_len_text,
        "row 0: field 'reward_model.num_tokens' must be a positive integer, got str",
    ),
    "choice without letters": (
        _choice_without_letters,
        "row 1: a choice item needs field 'extra_info.letters'",
    ),
    "no prompt column": (_no_prompt, "column 'prompt' is missing"),
}


@pytest.fixture(scope="module")
def tokenizer():
    from lie.stages.tiny import build_tokenizer

    return build_tokenizer([m["content"] for r in _rows() for m in r["prompt"]], vocab_size=200)


def _generate(path, tokenizer, tmp_path, capsys):
    from lie.stages.generate import read_problems

    read_problems(path, BENCH)


def _reflen(path, tokenizer, tmp_path, capsys):
    """The real door: ``lie reflen`` in this process; a bad row is one error line before any model loads."""
    from lie.cli import main

    config = write_config(tmp_path / "config.yaml", paper_config())
    args = ["reflen", "--config", str(config), "--model", "qwen3-4b-base", "--data", str(path)]
    assert main([*args, "--out", str(tmp_path / "out.parquet")]) == 2
    (line,) = [line for line in capsys.readouterr().err.splitlines() if line.startswith("lie reflen: ")]
    raise LieError(line)


def _trl(path, tokenizer, tmp_path, capsys):
    from lie.engines.trl.train import load_rows

    load_rows(path, 64, tokenizer, None)


def _tiny_corpus(path, tokenizer, tmp_path, capsys):
    from lie.stages.base_model import corpus_texts

    corpus_texts([path])


def _compare(path, tokenizer, tmp_path, capsys):
    from lie.stages.data.compare import compare

    compare(path, path)


def _options(path, tokenizer, tmp_path, capsys):
    from lie.formats.generations import read_options

    read_options([path])


READERS = {  # reader -> (how it reads, the columns it reads)
    "lie generate": (_generate, ("prompt", "reward_model", "extra_info")),
    "lie reflen": (_reflen, ("prompt", "reward_model")),
    "TRL's training rows": (_trl, ("prompt", "reward_model", "extra_info")),
    "the tiny model's corpus": (_tiny_corpus, ("prompt", "reward_model")),
    "lie data --compare-with": (_compare, ("prompt", "reward_model", "extra_info")),
    "lie evaluate's option texts": (_options, ("extra_info",)),
}
KEYS = {"content None": "prompt", "content empty": "prompt", "L_ref as text": "reward_model",
        "choice without letters": "extra_info", "no prompt column": "prompt"}  # fmt: skip


PAIRS = [(r, c) for r in READERS for c in CASES if KEYS[c] in READERS[r][1]]


@pytest.mark.parametrize("reader, case", PAIRS)
def test_every_reader_refuses_a_bad_row_in_one_line_naming_file_row_and_key(
    tmp_path, tokenizer, capsys, reader, case
):
    read, _ = READERS[reader]
    change, message = CASES[case]
    if reader != "lie reflen":  # (which would go on to sample with the paper's model)
        good = tmp_path / "good.parquet"
        pq.write_table(pa.Table.from_pylist(_rows()), good)
        read(good, tokenizer, tmp_path, capsys)
    rows = copy.deepcopy(_rows())
    change(rows)
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    with pytest.raises(LieError) as caught:
        read(path, tokenizer, tmp_path, capsys)
    text = str(caught.value)
    assert "\n" not in text and str(path) in text
    assert re.search(re.escape(message), text), text


def _graded_line(**change):
    line = {"bench": BENCH, "index": 0, "sample": 0, "kind": "math", "gold": "1", "num_tokens": 5,
            "finish_reason": "stop", "grades": {"100": {"correct": True, "pred": "1", "status": "ok"}}}  # fmt: skip
    line.update(change)
    return line


@pytest.mark.parametrize(
    "change, message",
    [
        ({"index": "0"}, "line 2: field 'index' must be an integer, got str"),
        ({"grades": {}}, "line 2: field 'grades' must be a mapping of budget"),
        ({"grades": {"100": {"correct": "yes"}}}, "line 2: field 'grades.100.correct' must be true or false"),
        (
            {"grades_by_reader": {"authors": {"all": {"correct": True}}}},
            "line 2: field 'grades_by_reader.authors.all' must be keyed by a token budget",
        ),
    ],
)
def test_the_report_and_the_study_read_grade_lines_alike(tmp_path, change, message):
    import json

    from lie.report.intervals import read_problem_scores
    from lie.study.responses import read_grades

    path = tmp_path / "scores.jsonl"
    path.write_text(json.dumps(_graded_line()) + "\n" + json.dumps(_graded_line(sample=1, **change)) + "\n")
    for read in (lambda: read_grades(path), lambda: read_problem_scores(path, 100, ["robust"])):
        with pytest.raises(LieError, match=re.escape(f"{path} {message}")):
            read()
    path.write_text(json.dumps(_graded_line()) + "\n" + json.dumps(_graded_line(sample=1)) + "\n")
    assert read_grades(path) == {(BENCH, 0, 0): {"100": True}, (BENCH, 0, 1): {"100": True}}
    assert read_problem_scores(path, 100, ["robust"])[None] == {BENCH: {0: 1.0}}


def test_metrics_appends_are_read_by_one_reader_that_names_a_bad_line(tmp_path):
    from lie.formats.runs import RunDir, append_metrics, read_metrics

    rundir = RunDir(tmp_path, "run")
    path = rundir.new_metrics_file()
    append_metrics(path, 1, {"actor/pg_loss": float("nan"), "critic/score/mean": 0.5})
    append_metrics(path, 2, {"critic/score/mean": 0.25})
    assert '"actor/pg_loss": null' in path.read_text()  # strict JSON
    assert read_metrics(rundir) == [
        {"step": 1, "actor/pg_loss": None, "critic/score/mean": 0.5},
        {"step": 2, "critic/score/mean": 0.25},
    ]
    with open(path, "a", encoding="utf-8") as out:
        out.write('{"step": 3, "data": {"critic/sc')  # torn by a kill: skipped
    assert [m["step"] for m in read_metrics(rundir)] == [1, 2]
    path.write_text(path.read_text().rsplit("\n", 1)[0] + '\n{"step": "3", "data": {}}\n')
    with pytest.raises(LieError, match=re.escape(f"{path} line 3: field 'step' must be an integer")):
        read_metrics(rundir)
    path.write_text(path.read_text().replace('"step": "3", "data": {}', '"step": 3, "data": [1]'))
    with pytest.raises(LieError, match=re.escape(f"{path} line 3: field 'data' must be a mapping")):
        read_metrics(rundir)


def test_a_steps_rollouts_are_rewritten_in_the_order_of_their_ids(tmp_path):
    """verl's reward worker logs samples as they are scored; LIETrainer sorts the step's file by group
    and sample id (digit runs as numbers), leaves other steps alone, and keeps every record."""
    import json

    from lie.formats.runs import append_rollouts, read_rollouts, sort_rollouts

    def record(step: int, group: str, session: int) -> dict:
        return {"step": step, "group": group, "uid": f"{group}_{session}_0", "response": f"{group}/{session}"}

    arrival = [record(1, "s000001c0r0001", 10), record(1, "s000001c0r0000", 2), record(1, "s000001c0r0001", 2),
               record(1, "s000001c0r0000", 0)]  # fmt: skip
    later = [record(2, "s000002c0r0000", 1), record(2, "s000002c0r0000", 0)]
    folder = tmp_path / "rollouts"
    append_rollouts(folder, 1, "host-1", arrival)
    append_rollouts(folder, 2, "host-1", later)
    step2 = (folder / "step-000002.host-1.jsonl").read_bytes()
    sort_rollouts(folder, 1)
    assert [r["response"] for r in read_rollouts(tmp_path, 1)] == [
        "s000001c0r0000/0", "s000001c0r0000/2", "s000001c0r0001/2", "s000001c0r0001/10"]  # fmt: skip
    assert (folder / "step-000002.host-1.jsonl").read_bytes() == step2
    assert sorted(json.dumps(r) for r in read_rollouts(tmp_path, 1)) == sorted(json.dumps(r) for r in arrival)
    sort_rollouts(folder, 3)  # no file of that step: nothing to do


def test_lie_plan_reads_the_reference_lengths_through_the_same_reader(tmp_path):
    from lie.stages.plan import plan

    config = paper_config()
    config["outdir"] = str(tmp_path)
    config["runs"] = ["qwen3-4b-base_dapo_gspo"]
    rows = [make_row("dapo", "math", "train", i, Item(f"q{i}", "1"), "{question}") for i in range(256)]
    for row in rows:
        row["extra_info"]["avg_response_len"] = 1000.0
    path = tmp_path / "data" / "dapo.qwen3-4b-base.reflen.parquet"
    path.parent.mkdir()
    pq.write_table(pa.Table.from_pylist(rows), path)
    (run,) = plan(Config.of(config))
    assert (run.prompts, run.mean_response, run.steps) == (256, 1000.0, 10 * (256 // 128))
    rows[7]["extra_info"]["kind"] = "essay"
    pq.write_table(pa.Table.from_pylist(rows), path)
    with pytest.raises(
        LieError, match=re.escape(f"{path} row 7: field 'extra_info.kind' must be math or choice")
    ):
        plan(Config.of(config))
