"""The reasoning-behaviour classifier on labelled sentences, and the judge's prompt and answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from lie.analysis.behaviours import BEHAVIOURS, Tally, load_classifier, split_sentences, tally
from lie.analysis.judge import JudgeAnswerError, chunks, load_prompt, parse_answer
from lie.core.errors import LieError
from lie.engines.generation import Completion
from lie.stages.judge import judge_texts

SENTENCES = Path(__file__).with_name("data") / "behaviour_sentences.yaml"
# Measured on the labelled set when the patterns were written (docs/report.md gives the numbers);
# the set was written by the patterns' author, so these are upper bounds for real traces.
MIN_PRECISION = {"backtracking": 0.9, "verification": 0.9, "subgoal_setting": 0.9, "enumeration": 0.85}
MIN_RECALL = {"backtracking": 0.9, "verification": 0.9, "subgoal_setting": 0.85, "enumeration": 0.9}


@pytest.fixture(scope="module")
def classifier():
    return load_classifier()


@pytest.fixture(scope="module")
def labelled():
    return yaml.safe_load(SENTENCES.read_text(encoding="utf-8"))["sentences"]


def test_the_labelled_set_covers_every_behaviour(labelled):
    assert len(labelled) >= 60
    for name in BEHAVIOURS:
        positives = [s for s in labelled if name in s["labels"]]
        negatives = [s for s in labelled if name not in s["labels"]]
        assert len(positives) >= 10 and len(negatives) >= 40, name
    assert sum(not s["labels"] for s in labelled) >= 20
    assert all(set(s["labels"]) <= set(BEHAVIOURS) for s in labelled)


def test_precision_and_recall_per_behaviour(classifier, labelled):
    predicted = [classifier.labels(s["text"]) for s in labelled]
    for name in BEHAVIOURS:
        tp = sum(name in p and name in s["labels"] for p, s in zip(predicted, labelled))
        fp = sum(name in p and name not in s["labels"] for p, s in zip(predicted, labelled))
        fn = sum(name not in p and name in s["labels"] for p, s in zip(predicted, labelled))
        precision, recall = tp / (tp + fp), tp / (tp + fn)
        assert precision >= MIN_PRECISION[name], (name, precision)
        assert recall >= MIN_RECALL[name], (name, recall)


def test_exact_labels_on_the_core_sentences(classifier, labelled):
    core = [s for s in labelled if s.get("core")]
    assert len(core) >= 30
    wrong = [(s["text"], sorted(classifier.labels(s["text"])), s["labels"]) for s in core
             if classifier.labels(s["text"]) != set(s["labels"])]  # fmt: skip
    assert not wrong


def test_counts_are_sentences_per_behaviour(classifier):
    response = (
        "First, we find the roots, then we add their squares. The roots are 2 and 3.\n"
        "Wait, that is wrong: the roots are 1 and 6. Let's verify: 1 * 6 = 6.\n"
        "Case 1: x = 1. Case 2: x = 6. So the answer is \\boxed{37}."
    )
    assert classifier.count(response) == {
        "backtracking": 1,
        "verification": 1,
        "subgoal_setting": 1,
        "enumeration": 2,
    }
    assert classifier.count("") == dict.fromkeys(BEHAVIOURS, 0)
    assert classifier.why("Wait, let me double-check.") == {
        "backtracking": [r"^\W*(but\s+|hmm+,?\s+)?wait\b", r"\bwait\s*[,.!?:;]"],
        "verification": [r"\b(double|re|cross)[- ]?check(s|ed|ing)?\b"],
    }
    total = tally([response, response, "Nothing here."], classifier)
    assert (total.responses, total.counts["enumeration"], total.with_behaviour["enumeration"]) == (3, 4, 2)
    assert total.per_100("enumeration") == pytest.approx(400 / 3)
    assert Tally(BEHAVIOURS).per_100("enumeration") is None


@pytest.mark.parametrize(
    "text, sentences",
    [
        (
            "Wait, that's wrong. Let's verify: x = 3.5 here.",
            ["Wait, that's wrong.", "Let's verify: x = 3.5 here."],
        ),
        ("Case 1: x is even!\nCase 2: x is odd?  Done", ["Case 1: x is even!", "Case 2: x is odd?", "Done"]),
        ("Use e.g. the sine rule. Then stop.", ["Use e.g. the sine rule.", "Then stop."]),
        ('He said "stop." Then we go.', ['He said "stop."', "Then we go."]),
        ("\n\n  \n", []),
    ],
)
def test_sentence_splitting(text, sentences):
    assert split_sentences(text) == sentences


def test_bad_pattern_files_are_named(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("behaviours:\n  backtracking:\n    patterns: ['(unclosed']\n")
    with pytest.raises(LieError, match=r"bad.yaml: behaviours.backtracking.patterns\[0\] '\(unclosed'"):
        load_classifier(bad)
    bad.write_text("behaviours:\n  backtracking: {description: x}\n")
    with pytest.raises(LieError, match="behaviours.backtracking needs a non-empty list 'patterns'"):
        load_classifier(bad)
    with pytest.raises(LieError, match="cannot read behaviour patterns"):
        load_classifier(tmp_path / "absent.yaml")


# ---------------------------------------------------------------- judge
def test_judge_prompt_holds_the_definitions_and_the_response(classifier):
    prompt = load_prompt()
    text = prompt.render("Wait, {definitions} is not a placeholder here.", classifier)
    for name in BEHAVIOURS:
        assert f"- {name}: {classifier.descriptions[name]}" in text
    assert "<<<BEGIN>>>\nWait, {definitions} is not a placeholder here.\n<<<END>>>" in text
    assert json.dumps(dict.fromkeys(BEHAVIOURS, 0)) in text
    assert "{response}" not in text and "{keys}" not in text
    assert prompt.version == 1


@pytest.mark.parametrize(
    "answer, expected",
    [
        ('{"backtracking": 2, "verification": 1, "subgoal_setting": 0, "enumeration": 3}', [2, 1, 0, 3]),
        ('<think>maybe {"backtracking": 9}</think>\nCounts:\n{"backtracking": 1, "verification": 0, '
         '"subgoal_setting": 4, "enumeration": 0}\n', [1, 0, 4, 0]),
        ('{"backtracking": 5, "verification": 5, "subgoal_setting": 5, "enumeration": 5} then '
         '{"backtracking": 1.0, "verification": "2", "subgoal_setting": 0, "enumeration": 0, "other": 7}',
         [1, 2, 0, 0]),
        ('{"backtracking": 1, "verification": 1, "subgoal_setting": 1, "enumeration": 1} and {"note": "x"}',
         [1, 1, 1, 1]),
    ],
)  # fmt: skip
def test_judge_answers_are_parsed(answer, expected):
    assert parse_answer(answer, BEHAVIOURS) == dict(zip(BEHAVIOURS, expected))


@pytest.mark.parametrize(
    "answer, message",
    [
        ("I counted two backtracking steps.", "no JSON object"),
        ('{"backtracking": 1, "verification": 0, "subgoal_setting": 0}', "enumeration is None"),
        (
            '{"backtracking": -1, "verification": 0, "subgoal_setting": 0, "enumeration": 0}',
            "backtracking is -1",
        ),
        (
            '{"backtracking": true, "verification": 0, "subgoal_setting": 0, "enumeration": 0}',
            "backtracking is True",
        ),
        ("{backtracking: 1}", "not JSON"),
    ],
)
def test_unreadable_judge_answers_are_errors(answer, message):
    with pytest.raises(JudgeAnswerError, match=message):
        parse_answer(answer, BEHAVIOURS)


def test_long_responses_are_judged_in_parts_cut_between_sentences():
    sentences = [f"Sentence number {i} is here." for i in range(40)]
    parts = chunks(" ".join(sentences), 120)
    assert all(len(p) <= 120 for p in parts) and len(parts) > 5
    assert " ".join(parts) == " ".join(sentences)
    assert all(p.endswith(".") for p in parts)
    assert chunks("x" * 250, 100) == ["x" * 100, "x" * 100, "x" * 50]
    assert chunks("", 100) == [""]
    with pytest.raises(LieError):
        chunks("a", 0)


class CannedJudge:
    """A stand-in for the vLLM engine (not installed here): real tokenizer, canned answers."""

    def __init__(self, tokenizer, answers):
        self.tokenizer, self.answers, self.prompts = tokenizer, list(answers), []

    def generate(self, prompts, settings, seeds):
        assert settings.temperature == 0.0 and settings.n == 1
        self.prompts.extend(self.tokenizer.decode(p) for p in prompts)
        return [[Completion([1], self.answers.pop(0), "stop")] for _ in prompts]


def test_judge_adds_the_parts_and_keeps_unreadable_answers_as_errors(classifier):
    from lie.stages.tiny import build_tokenizer

    tokenizer = build_tokenizer(["Wait, check the sum."], vocab_size=300)
    counts = '{{"backtracking": {}, "verification": 1, "subgoal_setting": 0, "enumeration": 0}}'
    long_text = "Wait, check the sum. " * 10
    engine = CannedJudge(tokenizer, [counts.format(2), counts.format(3), counts.format(1), "no idea"])
    results = judge_texts([long_text, "Short one.", "Another."], classifier, "judge-model",
                          chunk_chars=120, engine_factory=lambda: engine, keep_answers=True)  # fmt: skip
    assert results[0].parts == 2 and results[0].counts == {
        "backtracking": 5, "verification": 2, "subgoal_setting": 0, "enumeration": 0
    }  # fmt: skip
    assert results[1].counts["backtracking"] == 1 and results[1].error is None
    assert results[2].counts is None and "no JSON object" in results[2].error
    assert results[2].answers == ["no idea"]
    assert "<|im_start|>user" in engine.prompts[0] and "Wait, check the sum." in engine.prompts[0]
    assert "Short one." in engine.prompts[2]


def test_count_behaviours_adds_the_judges_counts_per_file_and_refuses_a_limit_below_one(
    tmp_path, monkeypatch
):
    """``lie behaviours --judge``: the judge's counts (through lie.stages.judge, its model's answers
    canned) are tallied per file beside the patterns' and written per response; an answer it cannot
    read is that response's ``judge_error``; ``--limit 0`` is one line."""
    import functools

    from lie.stages import judge as judge_stage
    from lie.stages.behaviours import JudgeChoice, count_behaviours
    from lie.stages.tiny import build_tokenizer

    texts = {"a.jsonl": ["Wait, check the sum.", "Fine."], "b.jsonl": ["Let me verify: 2 + 2 = 4."]}
    for name, lines in texts.items():
        rows = [{"bench": "x", "index": i, "sample": 0, "text": t} for i, t in enumerate(lines)]
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    gen = [str(tmp_path / name) for name in texts]
    with pytest.raises(LieError, match="--limit must be >= 1, got 0"):
        count_behaviours(gen, limit=0)
    counts = '{{"backtracking": {}, "verification": 1, "subgoal_setting": 0, "enumeration": 0}}'
    engine = CannedJudge(build_tokenizer(sum(texts.values(), []), vocab_size=300),
                         [counts.format(2), "no idea", counts.format(0)])  # fmt: skip
    monkeypatch.setattr(
        judge_stage, "judge_texts", functools.partial(judge_stage.judge_texts, engine_factory=lambda: engine)
    )
    out = tmp_path / "per_response.jsonl"
    table = count_behaviours(gen, out=str(out), judge=JudgeChoice(model="judge-model", engine="hf"))
    lines = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert [x.get("judge", {}).get("backtracking") for x in lines] == [2, None, 0]
    assert "no JSON object" in lines[1]["judge_error"]
    judged = [row for row in table.splitlines() if "(judge," in row]
    assert judged[0].startswith(f"| {gen[0]} (judge, 1 read) | 2 | 2 (200.0) | 1 (100.0) |"), judged
    assert judged[1].startswith(f"| {gen[1]} (judge, 1 read) | 1 | 0 (0.0) | 1 (100.0) |"), judged
