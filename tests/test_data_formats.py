"""Row adapters, answer normalisation, verl rows and the checks on a ``datasets:`` entry."""

from __future__ import annotations

import copy

import pytest
from hubcache import repo_config

from lie.config import Config
from lie.config.datasets import KEYS, parse_spec
from lie.core.errors import LieError
from lie.formats.rows import format_choices, make_row
from lie.stages.data.adapters import FORMATS, Context, last_boxed, normalise_answer, strip_dapo_template
from lie.stages.data.build import dataset_spec

CTX = Context("datasets.eval.x", row=0, shuffle_seed=0)


@pytest.mark.parametrize(
    "raw, expected",
    [
        (27.0, "27"),
        (-4.0, "-4"),
        (0.5, "0.5"),
        (7, "7"),
        ("025", "25"),
        ("000", "0"),
        ("27.0", "27"),
        ("  142.00 ", "142"),
        ("$\\frac{1}{2 n+2}$", "\\frac{1}{2 n+2}"),
        ("$69$,$84$", "$69$,$84$"),  # two formulas: left alone
        ("\\left( 3, \\frac{\\pi}{2} \\right)", "\\left( 3, \\frac{\\pi}{2} \\right)"),
        ("4.5e33", "4.5e33"),
        (None, ""),
    ],
)
def test_answers_are_normalised(raw, expected):
    assert normalise_answer(raw) == expected


def test_last_boxed_balances_braces_and_takes_the_last():
    text = "first \\boxed{1} then \\boxed{\\frac{a}{b}} and \\boxed {x^{2}}."
    assert last_boxed(text) == "x^{2}"
    assert last_boxed("\\boxed{\\frac{2 \\pi}{\\lambda^{5}}} done") == "\\frac{2 \\pi}{\\lambda^{5}}"
    assert last_boxed("no box here") == ""


def test_dapo_instruction_is_cut_out():
    wrapped = (
        "Solve the following math problem step by step. The last line of your response should be of the form "
        "Answer: $Answer (without quotes) where $Answer is the answer to the problem.\n\n"
        'Find $x$ if $x+1=2$.\n\nRemember to put your answer on its own line after "Answer:".'
    )
    assert strip_dapo_template(wrapped) == "Find $x$ if $x+1=2$."
    assert strip_dapo_template("Find $x$.") == "Find $x$."
    reworded = wrapped.replace("(without quotes) ", "").replace('"Answer:".', "'Answer:'")
    assert strip_dapo_template(reworded) == "Find $x$ if $x+1=2$."


def test_arc_numeric_labels_map_to_letters():
    rec = {
        "question": "Q?",
        "choices": {"text": ["a", "b", "c", "d"], "label": ["1", "2", "3", "4"]},
        "answerKey": "3",
    }
    item = FORMATS["arc"].parse(rec, CTX)
    assert item.answer == "C" and item.choices == ("a", "b", "c", "d")
    rec = {"question": "Q?", "choices": {"text": ["a", "b", "c"], "label": ["A", "B", "C"]}, "answerKey": "D"}
    with pytest.raises(LieError, match="answer 'D' is not one of the labels"):
        FORMATS["arc"].parse(rec, CTX)


def gpqa_record(i: int) -> dict:
    return {
        "Question": f" Question {i}?\n",
        "Correct Answer": f" right {i}",
        "Incorrect Answer 1": f"wrong a{i} ",
        "Incorrect Answer 2": f"wrong b{i}",
        "Incorrect Answer 3": f"wrong c{i}",
        "Record ID": f"rec{i}",
    }


def test_gpqa_shuffle_is_seeded_and_keeps_the_answer():
    fmt = FORMATS["gpqa"]
    items = [fmt.parse(gpqa_record(i), Context("w", row=i, shuffle_seed=0)) for i in range(40)]
    again = [fmt.parse(gpqa_record(i), Context("w", row=i, shuffle_seed=0)) for i in range(40)]
    other = [fmt.parse(gpqa_record(i), Context("w", row=i, shuffle_seed=1)) for i in range(40)]
    assert items == again
    assert [it.choices for it in items] != [it.choices for it in other]
    for i, item in enumerate(items):
        assert item.choices["ABCD".index(item.answer)] == f"right {i}"
        assert sorted(item.choices) == sorted([f"right {i}", f"wrong a{i}", f"wrong b{i}", f"wrong c{i}"])
        assert item.question == f"Question {i}?"
    assert len({it.answer for it in items}) == 4  # the correct option lands on every letter


def test_mmlu_pro_ten_options_and_checked_answer():
    rec = {"question": "Q", "options": [f"o{i}" for i in range(10)], "answer": "J", "answer_index": 9}
    assert FORMATS["mmlu-pro"].parse(rec, CTX).answer == "J"
    with pytest.raises(LieError, match="does not name one"):
        FORMATS["mmlu-pro"].parse(dict(rec, answer="I"), CTX)  # disagrees with answer_index


def test_each_source_row_a_parser_cannot_read_is_one_line_naming_the_row():
    """What the format parsers refuse or read as empty, each naming the config entry and source row:
    a text column holding something else, ARC choices that are not 1-10 labelled options, MMLU-Pro
    with no options, GPQA without its recorded shuffle seed; a missing text is empty, a flag-like
    answer stays as written, a DAPO prompt given as a plain string is read whole, and a ``\\boxed``
    without braces is passed over for the one before it."""
    ctx = Context("datasets.eval.x", row=7, shuffle_seed=0)
    with pytest.raises(
        LieError, match=r"datasets.eval.x: source row 7: column 'problem' should be text, got 12"
    ):
        FORMATS["problem-answer"].parse({"problem": 12, "answer": "1"}, ctx)
    assert FORMATS["problem-answer"].parse({"problem": None, "answer": "1"}, ctx).question == ""
    bad_choices = {"text": ["a", "b"], "label": ["A"]}
    with pytest.raises(LieError, match=r"source row 7: choices .* are not 1-10 labelled options"):
        FORMATS["arc"].parse({"question": "Q", "choices": bad_choices, "answerKey": "A"}, ctx)
    with pytest.raises(LieError, match="source row 7: 0 options, expected 1 to 10"):
        FORMATS["mmlu-pro"].parse({"question": "Q", "options": [], "answer": "A"}, ctx)
    with pytest.raises(LieError, match=r"datasets.eval.x.shuffle_seed is missing"):
        FORMATS["gpqa"].parse(gpqa_record(0), Context("datasets.eval.x", row=0, shuffle_seed=None))
    assert normalise_answer(True) == "True"
    dapo = FORMATS["dapo"].parse({"prompt": "Find $x$.", "reward_model": {"ground_truth": "3"}}, ctx)
    assert (dapo.question, dapo.answer) == ("Find $x$.", "3")
    assert last_boxed("so \\boxed{4} and then \\boxed x") == "4"


def test_choice_rows_render_letters_with_the_template():
    config = repo_config()
    item = FORMATS["mmlu-pro"].parse({"question": "Pick.", "options": ["x", "y", "z"], "answer": "B"}, CTX)
    row = make_row("mmlu-pro", "choice", "test", 3, item, config["prompt"]["choice"])
    content = row["prompt"][0]["content"]
    assert content.startswith("Pick.\n\nA. x\nB. y\nC. z\n\n") and "\\boxed{}" in content
    assert row["extra_info"]["letters"] == ["A", "B", "C"] and row["extra_info"]["choices"] == ["x", "y", "z"]
    assert row["reward_model"] == {"ground_truth": "B", "style": "rule"}
    assert row["ability"] == "choice" and row["extra_info"]["index"] == 3
    assert format_choices(["p", "q"]) == "A. p\nB. q"


def test_every_config_entry_parses_and_writes_every_key():
    config = repo_config()
    for group in ("train", "eval"):
        for name, entry in config["datasets"][group].items():
            expected = set(KEYS) - ({"n"} if group == "train" else set())
            assert set(entry) == expected, f"{group}.{name} does not write every key"
            spec = dataset_spec(Config.of(config), name)
            assert spec.kind == FORMATS[spec.format].kind


def entry(**changes):
    base = copy.deepcopy(repo_config()["datasets"]["eval"]["aime24-hub"])
    base.update(changes)
    return base


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"revison": "main"}, "unknown key\\(s\\) revison"),
        ({"revision": None}, "datasets.eval.aime24.revision is missing"),
        ({"revision": " "}, "revision is empty"),
        ({"sample": 10, "seed": None}, "seed is missing"),
        ({"filter": {"difficulty": "hard"}}, "filter.difficulty must be"),
        ({"hf_id": None}, "no source"),
        ({"sha1": "abc"}, "40-hex git blob id"),
        ({"gated": "yes"}, "gated must be bool"),
        ({"n": "32"}, "n must be int"),
        (
            {"bare": {"url": None, "sha1": None, "local": None}},
            "aime24.bare: set url \\(with sha1\\) or local",
        ),
        ({"bare": {"path": "x"}}, "aime24.bare: unknown key\\(s\\) path"),
        ({"bare": {"url": "https://x", "sha1": "abc", "local": None}}, "aime24.bare.sha1 must be a 40-hex"),
    ],
)
def test_bad_entries_name_the_key(changes, message):
    with pytest.raises(LieError, match=message):
        parse_spec("aime24", "eval", entry(**changes))


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"kind": "choice"}, "kind is 'choice' but format 'problem-answer' gives 'math'"),
        ({"format": "nope"}, "format is 'nope', not one of"),
    ],
)
def test_a_format_that_cannot_give_the_entry_s_rows_is_named_before_any_row_is_read(changes, message):
    """The row formats are the data stage's: a config entry names one, lie data checks it fits the kind."""
    config = repo_config()
    config["datasets"]["eval"]["aime24-hub"].update(changes)
    with pytest.raises(LieError, match=message):
        dataset_spec(Config.of(config), "aime24-hub")


def test_gpqa_needs_a_shuffle_seed():
    gpqa = copy.deepcopy(repo_config()["datasets"]["eval"]["gpqa-diamond"])
    gpqa["shuffle_seed"] = None
    with pytest.raises(LieError, match="gpqa-diamond.shuffle_seed is missing"):
        parse_spec("gpqa-diamond", "eval", gpqa)


def test_an_entry_that_is_not_a_mapping_or_samples_nothing_names_the_key():
    with pytest.raises(LieError, match=r"datasets.eval.aime24 must be a mapping of keys \(.*\), got list"):
        parse_spec("aime24", "eval", ["hf_id", "revision"])
    with pytest.raises(LieError, match="datasets.eval.aime24.sample must be >= 1 or null, got 0"):
        parse_spec("aime24", "eval", entry(sample=0, seed=1))


def _synthetic(**changes):
    import yaml
    from small import REPO

    smoke = yaml.safe_load((REPO / "workflow" / "configs" / "smoke.yaml").read_text(encoding="utf-8"))
    base = copy.deepcopy(smoke["datasets"]["train"]["arith-train"])
    base["synthetic"].update(changes.pop("synthetic", {}))
    base.update(changes)
    return base


@pytest.mark.parametrize(
    "changes, message",
    [
        (
            {"synthetic": {"depth": 3}},
            r"synthetic needs exactly the keys .* \(unknown: \['depth'\], missing: \[\]\)",
        ),
        ({"synthetic": {"task": "sudoku"}}, "synthetic.task must be one of .*, got 'sudoku'"),
        ({"synthetic": {"count": -1}}, "synthetic.count must be an integer >= 0, got -1"),
        ({"synthetic": {"seed": True}}, "synthetic.seed must be an integer >= 0, got True"),
        ({"synthetic": {"min_depth": 4, "max_depth": 2}}, "synthetic: need 1 <= min_depth <= max_depth"),
        ({"format": "minerva"}, "synthetic math rows use format 'problem-answer', got 'minerva'"),
    ],
)
def test_a_bad_synthetic_entry_names_the_key(changes, message):
    with pytest.raises(LieError, match=message):
        parse_spec("arith-train", "train", _synthetic(**changes))


def test_a_prompt_template_without_its_places_and_a_limit_below_one_are_one_line(tmp_path):
    """The config's prompt templates must place the question (and, for choice, the options); ``lie data
    --limit`` takes at least one row. Each is one line before anything is read or written."""
    from lie.stages.data.build import build_dataset, template_for

    config = repo_config()
    with pytest.raises(
        LieError, match=r"config: prompt.math must be a template with \{question\}, got 'Solve it.'"
    ):
        template_for(Config.of({**config, "prompt": {**config["prompt"], "math": "Solve it."}}), "math")
    with pytest.raises(LieError, match=r"config: prompt.choice must place the options with \{choices\}"):
        template_for(
            Config.of({**config, "prompt": {**config["prompt"], "choice": "{question} Pick one."}}), "choice"
        )
    assert template_for(Config.of(config), "math") == config["prompt"]["math"]
    with pytest.raises(LieError, match="--limit must be >= 1, got 0"):
        build_dataset(Config.of(config), "aime24", tmp_path / "aime24.parquet", limit=0)
    assert not list(tmp_path.iterdir())


def test_a_filter_keeps_the_rows_it_names_and_a_column_the_set_lacks_is_one_line():
    """``filter:`` of a data set entry: none keeps the table as it is; a list keeps those values, a
    range its bounds; a column the set lacks names the entry and the column."""
    import pyarrow as pa

    from lie.stages.data.tables import apply_filter

    table = pa.table({"level": [1, 2, 3, 4, 5], "source": ["a", "b", "a", "c", "a"]})
    assert apply_filter(table, None, "datasets.train.x") is table
    kept = apply_filter(table, {"source": ["a"], "level": {"min": 2, "max": 5}}, "datasets.train.x")
    assert kept.column("level").to_pylist() == [3, 5]
    with pytest.raises(
        LieError, match=r"datasets.train.x.filter names column 'difficulty', which the data set lacks"
    ):
        apply_filter(table, {"difficulty": {"min": 3}}, "datasets.train.x")


def test_a_synthetic_set_its_task_cannot_make_is_one_line(tmp_path):
    """Past the entry's own checks: a pointer-chasing depth beyond its table, and multiple-choice rows
    of a task that has no options, are each one line naming the entry; nothing is written. A flag
    where a number belongs is named with the key."""
    import yaml
    from small import REPO

    from lie.stages.data.build import build_dataset

    config = yaml.safe_load((REPO / "workflow" / "configs" / "smoke.yaml").read_text(encoding="utf-8"))
    assert dataset_spec(Config.of(config), "arith-train").source_kind == "synthetic"
    config["datasets"]["train"]["arith-train"]["synthetic"].update(task="pointer", min_depth=2, max_depth=99)
    with pytest.raises(
        LieError, match=r"datasets.train.arith-train.synthetic: need 1 <= min_depth <= max_depth <"
    ):
        build_dataset(Config.of(config), "arith-train", tmp_path / "train.parquet", progress=False)
    config["datasets"]["eval"]["arith-choice"]["synthetic"]["task"] = "chain"
    with pytest.raises(
        LieError, match="arith-choice: multiple-choice rows are written for the arithmetic task only"
    ):
        build_dataset(Config.of(config), "arith-choice", tmp_path / "choice.parquet", progress=False)
    assert not list(tmp_path.iterdir())
    with pytest.raises(LieError, match=r"datasets.eval.aime24.sample must be int, got True"):
        parse_spec("aime24", "eval", entry(sample=True, seed=1))
