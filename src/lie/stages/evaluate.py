"""Evaluation (``lie evaluate``): grade generations at every token budget and summarise per benchmark.

``lie evaluate --config config.yaml --gen GEN.jsonl [--gen ...] [--data BENCH.parquet ...]
--tokenizer MODEL --out-scores SCORES.jsonl --out-summary SUMMARY.json`` (or ``SUMMARY.csv``).

Test-time scaling without regenerating: each generation (``lie generate``) is cut at every budget
of ``evaluation.budgets`` (its first B token ids, decoded with the model's tokenizer, special
tokens skipped) and graded; a generation of at most B tokens is graded once, on its own text.
Identical texts are graded once. Grading runs in worker processes under
``evaluation.grade_timeout_s`` per item (``lie.grading.grade_many``). Multiple-choice items are
read in the mode ``evaluation.choice_grading`` (``robust``, or ``authors``: their evaluation
script's patterns) with their option texts (``options``), taken from the benchmarks' data files
(``--data``, rows of ``lie data``: ``extra_info.choices``) or from the generation lines; the mode
is recorded in the summary. Every multiple-choice text is also read by the other reader: its grades
are in the score line's ``grades_by_reader`` and its numbers in the summary's ``by_reader`` (per
choice benchmark, and per domain average that holds one), so that the report shows both.

Scores, one JSON line per sample: ``bench``, ``index``, ``sample``, ``kind``, ``gold``,
``num_tokens``, ``finish_reason``, ``grades`` ({budget: {``correct``, ``pred``, ``status``}}).
Summary per benchmark and budget: ``avg@n:n=N``, ``pass@k:k=K&n=N`` (K in 1,2,4,..,32, K <= N;
``pass@k:k=1`` is Pass@1), ``n_timeouts``, ``n_no_answer``, ``n_errors``, ``n_truncated``; per
benchmark ``mean_tokens`` (the mean response length at each budget, in tokens); and the
in-domain and out-of-domain averages of avg@n over ``evaluation.in_domain`` / ``out_of_domain``
(``null`` with the ``missing`` benchmarks named when any is absent; ``mean_of_present`` beside it).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from lie.config.typed import Config
from lie.core.errors import LieError
from lie.core.metrics import PASS_KS, metric_name, summarize
from lie.formats.generations import Generation, read_generations, read_options
from lie.formats.graded import DOMAINS, write_summary
from lie.formats.jsonl import atomic_output, dumps
from lie.formats.outputs import check_output_file
from lie.grading import CHOICE_GRADINGS, DEFAULT_CHOICE_GRADING, check_item, grade_many
from lie.stages.base_model import tokenizer_for

log = logging.getLogger(__name__)


def configured_choice_grading(config: Config) -> str:
    """``evaluation.choice_grading``, or the grader's default reader where the config leaves it unset
    (the evaluate rule's params and ``lie evaluate`` ask this one function)."""
    mode = config.evaluation.choice_grading
    return mode if mode is not None else DEFAULT_CHOICE_GRADING


def budget_texts(samples: Sequence[Generation], budgets: Sequence[int], tokenizer: Any) -> list[list[str]]:
    """For every sample, its text at each budget: the first B token ids decoded, or its own text."""
    out = []
    for s in samples:
        texts = []
        for budget in budgets:
            if len(s.token_ids) <= budget:
                texts.append(s.text)
            else:
                texts.append(tokenizer.decode(list(s.token_ids[:budget]), skip_special_tokens=True))
        out.append(texts)
    return out


def grading_items(
    samples: Sequence[Generation], texts: Sequence[Sequence[str]], modes: Sequence[str]
) -> tuple[list[dict[str, Any]], dict[str, list[list[int]]]]:
    """The distinct items to grade, and per reading mode, for every sample the item of each budget's text.

    A math text is one item for every mode; a choice text is one item per mode.
    """
    unique: dict[tuple[Any, ...], int] = {}
    items: list[dict[str, Any]] = []
    slots: dict[str, list[list[int]]] = {mode: [] for mode in modes}
    for s, per_budget in zip(samples, texts):
        rows: dict[str, list[int]] = {mode: [] for mode in modes}
        for text in per_budget:
            for mode in modes:
                reader = mode if s.kind == "choice" else None
                key = (text, s.gold, s.kind, tuple(s.letters), tuple(s.options), reader)
                if key not in unique:
                    unique[key] = len(items)
                    item: dict[str, Any] = {"response": text, "gold": s.gold, "kind": s.kind}
                    if s.kind == "choice":
                        item.update(choices=s.letters, choice_grading=mode)
                        if s.options:
                            item["options"] = s.options
                    items.append(item)
                rows[mode].append(unique[key])
        for mode in modes:
            slots[mode].append(rows[mode])
    return items, slots


def _grades(budgets: Sequence[int], row: Sequence[int], results: Sequence[Any]) -> dict[str, dict[str, Any]]:
    """{budget: {correct, pred, status[, message]}} of one sample."""
    grades = {}
    for budget, slot in zip(budgets, row):
        r = results[slot]
        grade = {"correct": bool(r.correct), "pred": r.pred, "status": r.status}
        if r.message:
            grade["message"] = r.message
        grades[str(budget)] = grade
    return grades


def evaluate(
    config: Config,
    gen_paths: Sequence[str],
    tokenizer: Any | Callable[[], Any] | None = None,
    timeout_s: float | None = None,
    workers: int | None = None,
    progress: bool = True,
    grader: Callable[..., list[Any]] | None = None,
    data_paths: Sequence[str] = (),
    mode: str | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(per-sample score lines, summary). ``tokenizer`` may be a loader, called only if some text is cut.

    ``data_paths``: the benchmarks' data files, for the option texts; ``mode``: the choice grading
    mode (default ``evaluation.choice_grading``).
    """
    if grader is None:
        grader = grade_many
    evaluation = config.evaluation
    budgets = list(evaluation.budgets)
    where = "--choice-grading" if mode is not None else "config: evaluation.choice_grading"
    if mode is None:
        mode = configured_choice_grading(config)
    if mode not in CHOICE_GRADINGS:
        raise LieError(f"{where} must be one of {CHOICE_GRADINGS}, got {mode!r}")
    timeout_s = float(timeout_s if timeout_s is not None else evaluation.grade_timeout_s)
    workers = int(workers if workers is not None else evaluation.grade_workers)
    samples = read_generations(gen_paths, read_options(data_paths) if data_paths else None)
    for s in samples:  # gold, kind and letters as the graders take them, or the line named
        check_item(
            {"response": s.text, "gold": s.gold, "kind": s.kind, "choices": s.letters or None}, s.where
        )
    longest = max(len(s.token_ids) for s in samples)
    if longest > budgets[0]:
        if tokenizer is None:
            cut = sum(len(s.token_ids) > budgets[0] for s in samples)
            raise LieError(
                f"{cut} generations are longer than the {budgets[0]}-token budget: "
                "pass --tokenizer (the generating model) to decode their prefixes"
            )
        if callable(tokenizer) and not hasattr(tokenizer, "decode"):
            tokenizer = tokenizer()
    texts = budget_texts(samples, budgets, tokenizer)
    modes = [mode, *(m for m in CHOICE_GRADINGS if m != mode)]  # every reader: the report shows both
    items, slots = grading_items(samples, texts, modes)
    log.info(
        "%d samples x %d budgets: %d distinct items to grade (limit %.1f s each, choice grading %s; "
        "also read as %s)",
        len(samples),
        len(budgets),
        len(items),
        timeout_s,
        mode,
        ", ".join(modes[1:]),
    )
    results = grader(items, timeout_s=timeout_s, workers=workers, progress=progress)
    scores = []
    for number, s in enumerate(samples):
        line = {
            "bench": s.bench,
            "index": s.index,
            "sample": s.sample,
            "kind": s.kind,
            "gold": s.gold,
            "num_tokens": len(s.token_ids),
            "finish_reason": s.finish_reason,
            "grades": _grades(budgets, slots[mode][number], results),
        }
        if s.kind == "choice":
            line["grades_by_reader"] = {m: _grades(budgets, slots[m][number], results) for m in modes}
        scores.append(line)
    summary = summarize_scores(scores, budgets, config)
    add_readers(summary, scores, budgets, config, modes)
    choice = [s for s in samples if s.kind == "choice"]
    summary["grading"] = {
        "timeout_s": timeout_s,
        "choice_grading": mode,
        "samples": len(samples),
        "graded_texts": len(items),
        "choice_samples": len(choice),
        "choice_samples_with_options": sum(bool(s.options) for s in choice),
    }
    return scores, summary


def add_readers(
    summary: dict[str, Any],
    scores: Sequence[dict[str, Any]],
    budgets: Sequence[int],
    config: Config,
    modes: Sequence[str],
) -> None:
    """``by_reader`` beside the multiple-choice benchmarks and the domain averages: their numbers
    under every reader (math benchmarks enter a domain average as they are)."""
    choice = {line["bench"] for line in scores if "grades_by_reader" in line}
    if not choice:
        return
    for mode in modes:
        other = summarize_scores(scores, budgets, config, reader=mode)
        for bench in choice:
            summary["benchmarks"][bench].setdefault("by_reader", {})[mode] = {
                "budgets": other["benchmarks"][bench]["budgets"]
            }
        for domain in DOMAINS:
            if choice & set(summary[domain]["benchmarks"]):
                summary[domain].setdefault("by_reader", {})[mode] = {"budgets": other[domain]["budgets"]}


def summarize_scores(
    scores: Sequence[dict[str, Any]],
    budgets: Sequence[int],
    config: Config,
    reader: str | None = None,
) -> dict[str, Any]:
    """Per benchmark and budget: avg@n, pass@k, status counts; then the domain averages.

    ``reader``: the multiple-choice lines as read by that reader (``grades_by_reader``), not the main one.
    """
    evaluation = config.evaluation
    by_bench: dict[str, dict[int, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for line in scores:
        if reader is not None and reader in (line.get("grades_by_reader") or {}):
            line = {**line, "grades": line["grades_by_reader"][reader]}
        by_bench[line["bench"]][line["index"]].append(line)
    benchmarks: dict[str, Any] = {}
    for bench in sorted(by_bench):
        problems = [sorted(v, key=lambda x: x["sample"]) for _, v in sorted(by_bench[bench].items())]
        n = len(problems[0])
        entry: dict[str, Any] = {"problems": len(problems), "n": n, "samples": sum(map(len, problems))}
        per_budget = {}
        for budget in budgets:
            key = str(budget)
            correct = [[s["grades"][key]["correct"] for s in p] for p in problems]
            metrics: dict[str, Any] = summarize(correct, PASS_KS, what=f"benchmark {bench}")
            statuses = [s["grades"][key]["status"] for p in problems for s in p]
            metrics.update(
                n_timeouts=statuses.count("timeout"),
                n_no_answer=statuses.count("no_answer"),
                n_errors=statuses.count("error"),
                n_truncated=sum(s["num_tokens"] > budget for p in problems for s in p),
            )
            per_budget[key] = metrics
        entry["avg@n"] = metric_name("avg@n", n=n)
        entry["budgets"] = per_budget
        entry["mean_tokens"] = mean_tokens(problems, budgets)
        benchmarks[bench] = entry
        spec = config.datasets.get(bench)
        expected = spec.n if spec is not None and spec.group == "eval" else None
        if expected is not None and expected != n:
            log.warning("%s: %d samples a problem, config says %d", bench, n, expected)
    summary: dict[str, Any] = {"budgets": list(budgets), "benchmarks": benchmarks}
    for domain in DOMAINS:
        names = list(getattr(evaluation, domain))
        present = [b for b in names if b in benchmarks]
        missing = [b for b in names if b not in benchmarks]
        values = {}
        for budget in budgets:
            key = str(budget)
            got = [benchmarks[b]["budgets"][key][benchmarks[b]["avg@n"]] for b in present]
            mean_present = sum(got) / len(got) if got else None
            values[key] = {"avg": None if missing else mean_present, "mean_of_present": mean_present}
        if missing and present:
            log.warning("%s average left empty: %s not evaluated", domain, ", ".join(missing))
        summary[domain] = {"benchmarks": names, "missing": missing, "budgets": values}
    return summary


def mean_tokens(problems: Sequence[Sequence[dict[str, Any]]], budgets: Sequence[int]) -> dict[str, float]:
    """Mean response length in tokens at each budget (a response longer than B counts B)."""
    lengths = [s["num_tokens"] for p in problems for s in p]
    return {str(b): sum(min(n, b) for n in lengths) / max(1, len(lengths)) for b in budgets}


def evaluate_files(
    config: Config,
    gen_paths: Sequence[str],
    out_scores: str,
    out_summary: str,
    tokenizer: str | None = None,
    data_paths: Sequence[str] = (),
    timeout_s: float | None = None,
    workers: int | None = None,
    progress: bool = True,
    mode: str | None = None,
) -> dict[str, Any]:
    """``lie evaluate``: :func:`evaluate` the ``gen_paths`` files, write the score lines to ``out_scores``
    and the summary to ``out_summary`` (``.json`` or ``.csv``), both or neither; return the summary.
    ``tokenizer``: the model (a config name or a folder) whose tokenizer cuts texts at the budgets."""
    if not str(out_summary).lower().endswith((".json", ".csv")):
        raise LieError(f"--out-summary must end in .json or .csv, got {out_summary}")
    inputs = [*gen_paths, *data_paths]
    check_output_file(out_scores, inputs)
    check_output_file(out_summary, [*inputs, out_scores])

    def load_tokenizer() -> Any:
        return tokenizer_for(config, str(tokenizer))

    scores, summary = evaluate(
        config,
        gen_paths,
        load_tokenizer if tokenizer else None,
        timeout_s=timeout_s,
        workers=workers,
        progress=progress,
        data_paths=data_paths,
        mode=mode,
    )
    with atomic_output(
        out_scores
    ) as out:  # renamed into place after the summary: never one without the other
        for line in scores:
            out.write(dumps(line) + "\n")
        write_summary(summary, out_summary)
    for bench, entry in summary["benchmarks"].items():
        last = entry["budgets"][str(summary["budgets"][-1])]
        log.info(
            "%s: %s = %.4f at %s tokens", bench, entry["avg@n"], last[entry["avg@n"]], summary["budgets"][-1]
        )
    return summary
