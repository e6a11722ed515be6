"""``lie evaluate``: grade generations at every token budget and summarise per benchmark.

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
is recorded in the summary, so that both modes can be graded from the same generations.

Scores, one JSON line per sample: ``bench``, ``index``, ``sample``, ``kind``, ``gold``,
``num_tokens``, ``finish_reason``, ``grades`` ({budget: {``correct``, ``pred``, ``status``}}).
Summary per benchmark and budget: ``avg@n:n=N``, ``pass@k:k=K&n=N`` (K in 1,2,4,..,32, K <= N;
``pass@k:k=1`` is Pass@1), ``n_timeouts``, ``n_no_answer``, ``n_errors``, ``n_truncated``; per
benchmark ``mean_tokens`` (the mean response length at each budget, in tokens); and the
in-domain and out-of-domain averages of avg@n over ``evaluation.in_domain`` / ``out_of_domain``
(``null`` with the ``missing`` benchmarks named when any is absent; ``mean_of_present`` beside it).
"""

from __future__ import annotations

import argparse
import array
import csv
import logging
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lie.errors import LieError
from lie.grading.executor import DEFAULT_TIMEOUT_S

log = logging.getLogger(__name__)

DOMAINS = ("in_domain", "out_of_domain")
CHOICE_GRADING = ("robust", "authors")


@dataclass
class Sample:
    bench: str
    index: int
    sample: int
    gold: str
    kind: str
    letters: list[str]
    options: list[str]  # option texts in letter order (choice items; empty when unknown)
    token_ids: Sequence[int]  # an array of 4-byte ints: 12k MMLU-Pro samples of 32k tokens fit in memory
    text: str
    finish_reason: str | None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", required=True, help="config.yaml (its evaluation: section)")
    parser.add_argument(
        "--gen", action="append", required=True, help="generations of `lie generate` (repeat)"
    )
    parser.add_argument(
        "--data", action="append", default=[], help="benchmark parquet of `lie data` (option texts; repeat)"
    )
    parser.add_argument(
        "--choice-grading", choices=CHOICE_GRADING, default=None, help="default: evaluation.choice_grading"
    )
    parser.add_argument("--tokenizer", help="the model (folder or config model name) whose tokenizer decodes")
    parser.add_argument("--out-scores", required=True, help="per-sample scores, JSON lines")
    parser.add_argument("--out-summary", required=True, help="summary, .json or .csv")
    parser.add_argument("--timeout", type=float, default=None, help="hard limit per item (grade_timeout_s)")
    parser.add_argument("--workers", type=int, default=None, help="grading processes (grade_workers)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def _int(obj: dict[str, Any], name: str, where: str) -> int:
    value = obj.get(name)
    if not isinstance(value, int) or isinstance(value, bool):
        raise LieError(f"{where}: field '{name}' must be an integer, got {value!r}")
    return value


def _compact(ids: list[int], where: str) -> Sequence[int]:
    try:
        return array.array("i", ids)
    except OverflowError:
        raise LieError(f"{where}: field 'token_ids' holds an id outside 0..2^31") from None


def read_options(paths: Sequence[str]) -> dict[tuple[str, int], list[str]]:
    """Option texts of the choice rows of ``lie data`` files, by (benchmark, problem index)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out: dict[tuple[str, int], list[str]] = {}
    for path in paths:
        try:
            table = pq.read_table(path, columns=["data_source", "extra_info"])
        except (OSError, pa.ArrowInvalid, KeyError) as exc:
            raise LieError(f"--data {path}: not a data file of `lie data` ({exc})") from None
        for row in table.to_pylist():
            extra = row.get("extra_info") or {}
            choices, index = extra.get("choices"), extra.get("index")
            if choices and isinstance(index, int):
                out[(str(row["data_source"]), index)] = [str(c) for c in choices]
    return out


def _options(
    obj: dict[str, Any], table: dict[tuple[str, int], list[str]], key: tuple[str, int], where: str
) -> list[str]:
    """A choice item's option texts: the generation line's ``options``, else the data file's."""
    options = obj.get("options") or table.get(key) or []
    letters = obj.get("letters") or []
    if options and len(options) != len(letters):
        raise LieError(
            f"{where}: {len(options)} option texts for the {len(letters)} letters {letters}; the data file "
            "(--data) is not the one the generations were made from"
        )
    return [str(o) for o in options]


def read_generations(
    paths: Sequence[str], options: dict[tuple[str, int], list[str]] | None = None
) -> list[Sample]:
    """Every sample of every file, checked: a bad line names its file, line and field."""
    from lie.grading import check_item
    from lie.jsonl import read_jsonl

    samples: list[Sample] = []
    seen: dict[tuple[str, int, int], str] = {}
    for path in paths:
        for lineno, obj in read_jsonl(path):
            where = f"{path} line {lineno}"
            for name in ("bench", "token_ids", "text"):
                if obj.get(name) is None:
                    raise LieError(f"{where}: missing field '{name}'")
            index, sample = _int(obj, "index", where), _int(obj, "sample", where)
            ids = obj["token_ids"]
            if not isinstance(ids, list) or not all(
                isinstance(t, int) and not isinstance(t, bool) for t in ids
            ):
                raise LieError(f"{where}: field 'token_ids' must be a list of integers")
            if obj.get("num_tokens") is not None and obj["num_tokens"] != len(ids):
                raise LieError(
                    f"{where}: field 'num_tokens' is {obj['num_tokens']} but token_ids has {len(ids)}"
                )
            if obj.get("kind") == "choice" and not obj.get("letters"):
                raise LieError(f"{where}: a choice item needs field 'letters' (its option letters)")
            item = check_item(
                {
                    "response": obj["text"],
                    "gold": obj.get("gold"),
                    "kind": obj.get("kind"),
                    "choices": obj.get("letters"),
                },
                where,
            )
            key = (str(obj["bench"]), index, sample)
            if key in seen:
                raise LieError(f"{where}: sample {sample} of {key[0]} problem {index} is also in {seen[key]}")
            seen[key] = where
            texts = _options(obj, options or {}, key[:2], where) if item["kind"] == "choice" else []
            samples.append(
                Sample(
                    key[0],
                    index,
                    sample,
                    item["gold"],
                    item["kind"],
                    item.get("choices", []),
                    texts,
                    _compact(ids, where),
                    item["response"],
                    obj.get("finish_reason"),
                )
            )
    if not samples:
        raise LieError(f"no generations in {', '.join(paths)}")
    return samples


def budget_texts(samples: Sequence[Sample], budgets: Sequence[int], tokenizer: Any) -> list[list[str]]:
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


def _budgets(evaluation: dict[str, Any]) -> list[int]:
    budgets = evaluation.get("budgets")
    if not isinstance(budgets, list) or not budgets or not all(isinstance(b, int) and b > 0 for b in budgets):
        raise LieError(f"config: evaluation.budgets must be a list of positive token counts, got {budgets!r}")
    return sorted(set(budgets))


def choice_grading(evaluation: dict[str, Any], override: str | None = None) -> str:
    """The multiple-choice grading mode: ``override``, else ``evaluation.choice_grading`` (robust)."""
    mode = override if override is not None else evaluation.get("choice_grading", "robust")
    if mode not in CHOICE_GRADING:
        raise LieError(f"config: evaluation.choice_grading must be one of {CHOICE_GRADING}, got {mode!r}")
    return mode


def grading_items(
    samples: Sequence[Sample], texts: Sequence[Sequence[str]], mode: str
) -> tuple[list[dict[str, Any]], list[list[int]]]:
    """The distinct items to grade, and for every sample the item of each budget's text."""
    unique: dict[tuple[Any, ...], int] = {}
    items: list[dict[str, Any]] = []
    slots: list[list[int]] = []
    for s, per_budget in zip(samples, texts):
        row = []
        for text in per_budget:
            key = (text, s.gold, s.kind, tuple(s.letters), tuple(s.options))
            if key not in unique:
                unique[key] = len(items)
                item: dict[str, Any] = {"response": text, "gold": s.gold, "kind": s.kind}
                if s.kind == "choice":
                    item.update(choices=s.letters, choice_grading=mode)
                    if s.options:
                        item["options"] = s.options
                items.append(item)
            row.append(unique[key])
        slots.append(row)
    return items, slots


def evaluate(
    config: dict[str, Any],
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
        from lie.grading import grade_many as grader
    evaluation = config.get("evaluation") or {}
    budgets = _budgets(evaluation)
    mode = choice_grading(evaluation, mode)
    timeout_s = float(
        timeout_s if timeout_s is not None else evaluation.get("grade_timeout_s", DEFAULT_TIMEOUT_S)
    )
    workers = int(workers if workers is not None else evaluation.get("grade_workers", 0))
    samples = read_generations(gen_paths, read_options(data_paths) if data_paths else None)
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
    items, slots = grading_items(samples, texts, mode)
    log.info(
        "%d samples x %d budgets: %d distinct texts to grade (limit %.1f s each, choice grading %s)",
        len(samples),
        len(budgets),
        len(items),
        timeout_s,
        mode,
    )
    results = grader(items, timeout_s=timeout_s, workers=workers, progress=progress)
    scores = []
    for s, row in zip(samples, slots):
        grades = {}
        for budget, slot in zip(budgets, row):
            r = results[slot]
            grade = {"correct": bool(r.correct), "pred": r.pred, "status": r.status}
            if r.message:
                grade["message"] = r.message
            grades[str(budget)] = grade
        scores.append(
            {
                "bench": s.bench,
                "index": s.index,
                "sample": s.sample,
                "kind": s.kind,
                "gold": s.gold,
                "num_tokens": len(s.token_ids),
                "finish_reason": s.finish_reason,
                "grades": grades,
            }
        )
    summary = summarize_scores(scores, budgets, config)
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


def summarize_scores(
    scores: Sequence[dict[str, Any]], budgets: Sequence[int], config: dict[str, Any]
) -> dict[str, Any]:
    """Per benchmark and budget: avg@n, pass@k, status counts; then the domain averages."""
    from lie.metrics import PASS_KS, metric_name, summarize

    evaluation = config.get("evaluation") or {}
    eval_sets = (config.get("datasets") or {}).get("eval") or {}
    by_bench: dict[str, dict[int, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for line in scores:
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
        expected = (eval_sets.get(bench) or {}).get("n")
        if expected is not None and expected != n:
            log.warning("%s: %d samples a problem, config says %d", bench, n, expected)
    summary: dict[str, Any] = {"budgets": list(budgets), "benchmarks": benchmarks}
    for domain in DOMAINS:
        names = list(evaluation.get(domain) or [])
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


def summary_rows(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """The summary as long rows ``bench, budget, metric, value, note`` (the CSV form)."""
    rows = []
    for bench, entry in summary["benchmarks"].items():
        for budget, metrics in entry["budgets"].items():
            for metric, value in metrics.items():
                rows.append({"bench": bench, "budget": budget, "metric": metric, "value": value, "note": ""})
            if budget in entry.get("mean_tokens", {}):
                value = entry["mean_tokens"][budget]
                rows.append(
                    {"bench": bench, "budget": budget, "metric": "mean_tokens", "value": value, "note": ""}
                )
    for domain in DOMAINS:
        entry = summary[domain]
        note = f"missing: {' '.join(entry['missing'])}" if entry["missing"] else ""
        for budget, values in entry["budgets"].items():
            value = values["avg"]
            rows.append(
                {
                    "bench": domain,
                    "budget": budget,
                    "metric": "avg@n (mean over benchmarks)",
                    "value": "" if value is None else value,
                    "note": note,
                }
            )
    return rows


def write_summary(summary: dict[str, Any], path: str) -> None:
    from lie.jsonl import atomic_output, dumps

    with atomic_output(path) as out:
        if str(path).lower().endswith(".csv"):
            writer = csv.DictWriter(out, fieldnames=["bench", "budget", "metric", "value", "note"])
            writer.writeheader()
            writer.writerows(summary_rows(summary))
        else:
            out.write(dumps(summary, indent=2) + "\n")


def run(args: argparse.Namespace) -> int:
    from lie.config import load_config
    from lie.engines.generation import load_tokenizer
    from lie.jsonl import atomic_output, dumps

    config = load_config(args.config)
    if not str(args.out_summary).lower().endswith((".json", ".csv")):
        raise LieError(f"--out-summary must end in .json or .csv, got {args.out_summary}")
    trust = bool(config.get("trust_remote_code", False))

    def tokenizer() -> Any:
        if args.tokenizer is None:
            return None
        from lie.models import resolve_model

        path = args.tokenizer if Path(args.tokenizer).is_dir() else resolve_model(config, args.tokenizer)[0]
        return load_tokenizer(str(path), trust_remote_code=trust)

    scores, summary = evaluate(
        config,
        args.gen,
        tokenizer if args.tokenizer else None,
        timeout_s=args.timeout,
        workers=args.workers,
        progress=not args.no_progress,
        data_paths=args.data,
        mode=args.choice_grading,
    )
    with atomic_output(args.out_scores) as out:
        for line in scores:
            out.write(dumps(line) + "\n")
    write_summary(summary, args.out_summary)
    for bench, entry in summary["benchmarks"].items():
        last = entry["budgets"][str(summary["budgets"][-1])]
        log.info(
            "%s: %s = %.4f at %s tokens", bench, entry["avg@n"], last[entry["avg@n"]], summary["budgets"][-1]
        )
    return 0
