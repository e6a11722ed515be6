"""One adapter per family of data sets: which columns it reads, and the item each row gives.

An item is the raw question (math questions byte for byte as in the source, so that prompts
match the authors' files), the gold answer as a string (normalised: ``27.0`` -> ``27``,
``025`` -> ``25``, one pair of enclosing ``$`` dropped) and, for multiple choice, the option
texts in letter order A-J. Sources that already hold the model's prompt (the authors' own files,
format ``lie-authors``) also give that prompt, kept verbatim instead of the config's template.
Which adapter a data set uses is its ``format`` key in config.yaml.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from lie.core.errors import LieError
from lie.formats.rows import LETTERS, Item

# DAPO-Math-17k wraps every problem in this instruction (the hub set's `prompt` column).
DAPO_PREFIX = (
    "Solve the following math problem step by step. The last line of your response should be of the "
    "form Answer: $Answer (without quotes) where $Answer is the answer to the problem.\n\n"
)
DAPO_SUFFIX = '\n\nRemember to put your answer on its own line after "Answer:".'
DAPO_HEAD = "Solve the following math problem step by step."
DAPO_TAIL = "\n\nRemember to put your answer on its own line after"
# The instruction the authors' Qwen files append to every question (valid.all_qwen3.parquet,
# deepmath-5k-octothinker_add1k.parquet); their Llama files hold the question alone.
AUTHORS_INSTRUCTION = " Let's think step by step and output the final answer within \\boxed{}."
GPQA_SHUFFLE = (
    "numpy.random.default_rng([shuffle_seed, source_row]).permutation(4) of [correct, incorrect 1-3]"
)


@dataclass(frozen=True)
class Context:
    where: str
    row: int  # position in the source (after filter/dedup/draw: the row's original position)
    shuffle_seed: int | None = None


@dataclass(frozen=True)
class Format:
    name: str
    kind: str
    columns: tuple[str, ...]
    parse: Callable[[dict[str, Any], Context], Item]
    optional: tuple[str, ...] = ()
    key: Callable[[pa.Table], pa.ChunkedArray] | None = field(default=None, repr=False)  # dedup key

    def dedup_key(self, table: pa.Table) -> pa.ChunkedArray:
        return self.key(table) if self.key else table[self.columns[0]]


def normalise_answer(value: Any) -> str:
    """The gold answer as a string: integers without ``.0`` or leading zeros, outer ``$`` dropped."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        value = float(value)
        if math.isfinite(value) and value.is_integer():
            return str(int(value))
        return repr(value)
    text = str(value).strip()
    inner = re.fullmatch(r"\$([^$]+)\$", text)
    if inner:
        text = inner.group(1).strip()
    if re.fullmatch(r"[+-]?\d+\.0*", text):
        text = text.split(".", 1)[0]
    if re.fullmatch(r"[+-]?\d+", text):
        text = str(int(text))
    return text


def last_boxed(text: str) -> str:
    """The content of the last ``\\boxed{...}`` (balanced braces) in ``text``, or ``""``."""
    start = text.rfind("\\boxed")
    while start != -1:
        i = start + len("\\boxed")
        while i < len(text) and text[i] == " ":
            i += 1
        if i < len(text) and text[i] == "{":
            depth = 0
            for j in range(i, len(text)):
                depth += {"{": 1, "}": -1}.get(text[j], 0)
                if depth == 0:
                    return text[i + 1 : j].strip()
        start = text.rfind("\\boxed", 0, start)
    return ""


def strip_dapo_template(prompt: str) -> str:
    """The bare problem inside DAPO's "Solve the following ... Answer:" instruction.

    The exact wording is cut first; a slightly different wording of the same two paragraphs (the
    instruction line, the closing reminder) is cut too, so that no instruction leaks through.
    """
    text = prompt
    if text.startswith(DAPO_PREFIX):
        text = text[len(DAPO_PREFIX) :]
    elif text.startswith(DAPO_HEAD) and "\n\n" in text:
        text = text.split("\n\n", 1)[1]
    if text.endswith(DAPO_SUFFIX):
        text = text[: -len(DAPO_SUFFIX)]
    elif DAPO_TAIL in text:
        text = text[: text.rindex(DAPO_TAIL)]
    return text.strip()


def _text(value: Any, column: str, ctx: Context) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise LieError(f"{ctx.where}: source row {ctx.row}: column {column!r} should be text, got {value!r}")
    return value


def _sid(*values: Any) -> str:
    for v in values:
        if v is not None and v != "":
            return str(v)
    return ""


def _dapo_content(prompt: Any) -> str:
    if isinstance(prompt, (list, tuple)) and prompt and isinstance(prompt[0], dict):
        return str(prompt[0].get("content") or "")
    return str(prompt or "")


def _parse_dapo(rec: dict[str, Any], ctx: Context) -> Item:
    gold = rec["reward_model"]
    answer = gold.get("ground_truth") if isinstance(gold, dict) else gold
    extra = rec.get("extra_info") or {}
    return Item(
        strip_dapo_template(_dapo_content(rec["prompt"])),
        normalise_answer(answer),
        source_id=_sid(extra.get("index") if isinstance(extra, dict) else None),
    )


def _dapo_key(table: pa.Table) -> pa.ChunkedArray:
    import pyarrow.compute as pc

    return pc.struct_field(pc.list_element(table["prompt"], 0), "content")


def _parse_authors(rec: dict[str, Any], ctx: Context) -> Item:
    """A row of the authors' verl files: their prompt verbatim, the question without their instruction."""
    prompt = _dapo_content(rec["prompt"])
    question = prompt[: -len(AUTHORS_INSTRUCTION)] if prompt.endswith(AUTHORS_INSTRUCTION) else prompt
    gold = rec["reward_model"]
    extra = rec.get("extra_info") or {}
    index = extra.get("index") if isinstance(extra, dict) else None
    return Item(
        question,
        normalise_answer(gold.get("ground_truth") if isinstance(gold, dict) else gold),
        source_id=_sid(index if index != -1 else None),
        prompt=prompt,
    )


def _parse_problem_answer(rec: dict[str, Any], ctx: Context) -> Item:
    return Item(
        _text(rec["problem"], "problem", ctx),
        normalise_answer(rec["answer"]),
        source_id=_sid(rec.get("id"), rec.get("unique_id")),
    )


def _parse_question_final(rec: dict[str, Any], ctx: Context) -> Item:
    return Item(_text(rec["question"], "question", ctx), normalise_answer(rec["final_answer"]))


def _parse_olympiad(rec: dict[str, Any], ctx: Context) -> Item:
    final = rec["final_answer"]
    answer = final[0] if isinstance(final, (list, tuple)) and final else final
    return Item(
        _text(rec["question"], "question", ctx), normalise_answer(answer), source_id=_sid(rec.get("id"))
    )


def _parse_minerva(rec: dict[str, Any], ctx: Context) -> Item:
    return Item(
        _text(rec["problem"], "problem", ctx),
        normalise_answer(last_boxed(_text(rec["solution"], "solution", ctx))),
        source_id=_sid(rec.get("idx")),
    )


def _letter(label: Any, labels: list[str], ctx: Context) -> str:
    """ARC labels are A-E, or 1-5 for a few items: both map to the position's letter."""
    key = str(label).strip()
    if key in labels:
        return LETTERS[labels.index(key)]
    raise LieError(f"{ctx.where}: source row {ctx.row}: answer {label!r} is not one of the labels {labels}")


def _parse_arc(rec: dict[str, Any], ctx: Context) -> Item:
    choices = rec["choices"] or {}
    texts = [str(t).strip() for t in choices.get("text") or []]
    labels = [str(lab).strip() for lab in choices.get("label") or []]
    if not texts or len(texts) != len(labels) or len(texts) > len(LETTERS):
        raise LieError(
            f"{ctx.where}: source row {ctx.row}: choices {choices!r} are not 1-10 labelled options"
        )
    return Item(
        _text(rec["question"], "question", ctx).strip(),
        _letter(rec["answerKey"], labels, ctx),
        tuple(texts),
        _sid(rec.get("id")),
    )


def _parse_gpqa(rec: dict[str, Any], ctx: Context) -> Item:
    if ctx.shuffle_seed is None:
        raise LieError(f"{ctx.where}.shuffle_seed is missing; the options are shuffled with a recorded seed")
    options = [str(rec[c] if rec[c] is not None else "").strip() for c in GPQA_OPTIONS]
    order = np.random.default_rng([ctx.shuffle_seed, ctx.row]).permutation(len(options)).tolist()
    shuffled = tuple(options[i] for i in order)
    return Item(
        _text(rec["Question"], "Question", ctx).strip(),
        LETTERS[order.index(0)],
        shuffled,
        _sid(rec.get("Record ID")),
    )


def _parse_mmlu_pro(rec: dict[str, Any], ctx: Context) -> Item:
    options = [str(o).strip() for o in rec["options"] or []]
    if not 1 <= len(options) <= len(LETTERS):
        raise LieError(f"{ctx.where}: source row {ctx.row}: {len(options)} options, expected 1 to 10")
    answer = str(rec["answer"]).strip().upper()
    index = rec.get("answer_index")
    if answer not in LETTERS[: len(options)] or (index is not None and LETTERS[int(index)] != answer):
        raise LieError(
            f"{ctx.where}: source row {ctx.row}: answer {rec['answer']!r} (index {index}) does not name one "
            f"of the {len(options)} options"
        )
    return Item(
        _text(rec["question"], "question", ctx).strip(), answer, tuple(options), _sid(rec.get("question_id"))
    )


GPQA_OPTIONS = ("Correct Answer", "Incorrect Answer 1", "Incorrect Answer 2", "Incorrect Answer 3")

FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        # DAPO-Math-17k: verl rows already; the bare problem is cut out of DAPO's instruction.
        Format("dapo", "math", ("prompt", "reward_model"), _parse_dapo, ("extra_info",), _dapo_key),
        # The authors' files (LINs-lab/LIE data/*.parquet): verl rows, prompt kept verbatim; select a
        # benchmark of their validation file with `filter: {data_source: [...]}` and `dedup: true`.
        Format(
            "lie-authors",
            "math",
            ("prompt", "reward_model"),
            _parse_authors,
            ("extra_info", "data_source"),
            _dapo_key,
        ),
        # AIME 2024/2025, AMC, MATH-500, Polaris: `problem` -> `answer`.
        Format("problem-answer", "math", ("problem", "answer"), _parse_problem_answer, ("id", "unique_id")),
        # DeepMath-103K: `question` -> `final_answer` (the three R1 solutions are never read).
        Format("question-final_answer", "math", ("question", "final_answer"), _parse_question_final),
        # Qwen2.5-Math's OlympiadBench: `question` -> `final_answer[0]`.
        Format("olympiadbench", "math", ("question", "final_answer"), _parse_olympiad, ("id",)),
        # Qwen2.5-Math's Minerva: the answer is the last \boxed{} of `solution`.
        Format("minerva", "math", ("problem", "solution"), _parse_minerva, ("idx",)),
        # allenai/ai2_arc: `choices.{text,label}`, `answerKey` (labels A-E or 1-5).
        Format("arc", "choice", ("question", "choices", "answerKey"), _parse_arc, ("id",)),
        # Idavidrein/gpqa: the correct and three incorrect answers, shuffled with a recorded seed.
        Format("gpqa", "choice", ("Question", *GPQA_OPTIONS), _parse_gpqa, ("Record ID",)),
        # TIGER-Lab/MMLU-Pro: `options` (up to 10), `answer` a letter A-J.
        Format(
            "mmlu-pro",
            "choice",
            ("question", "options", "answer"),
            _parse_mmlu_pro,
            ("question_id", "answer_index"),
        ),
    )
}
