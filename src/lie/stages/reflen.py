"""Per-prompt reference lengths ``L_ref`` for the LIE length reward (SPEC section 1).

The base model answers every training prompt ``k`` times (the authors: once) with the run's
sampling settings and response limit; ``avg_response_len`` is the mean token count of those
responses (end-of-sequence token included, as verl counts), ``ori_acc`` their mean correctness,
and ``num_tokens = L_ref = min(avg_response_len + offset, cap)`` (the authors' files: offset 1000,
cap 9192). Sampling goes through ``lie.engines.generation`` as ``lie generate`` does: each sample
is its own request with a seed hashed from (seed, row, sample) and a budget of ``max_tokens``
capped at the model's context minus the prompt. Work runs in resumable shards of ``shard_size``
samples: a killed run continues where it stopped.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import pyarrow as pa

from lie.config import grading_limits
from lie.config.typed import Config
from lie.core.errors import LieError
from lie.engines.generation import SEED_RULE, SamplingSettings, batch_invariant_mode, load_engine
from lie.engines.rewarding import Rollout
from lie.formats.outputs import check_output_file
from lie.formats.resumable import remove_work
from lie.formats.rows import (
    REFLEN_EXTRA_FIELDS,
    REFLEN_REWARD_FIELDS,
    answer_of,
    arrow_fields,
    prompt_messages,
    read_checked,
    read_metadata,
    with_metadata,
    write_table,
)
from lie.grading import grade_many
from lie.grading.executor import DEFAULT_TIMEOUT_S
from lie.stages import sample_shards
from lie.stages.base_model import file_sha256, resolve_model
from lie.stages.sample_shards import Draw, Prompt

log = logging.getLogger(__name__)

FORMULA = (
    "num_tokens = round(min(avg_response_len + offset, cap)); avg over k samples of len(token_ids incl. EOS)"
)


def reference_length(avg_response_len: float, offset: int = 1000, cap: int = 9192) -> int:
    """``L_ref = min(avg + offset, cap)`` as an integer (half rounds up when k > 1 gives fractions)."""
    return int(math.floor(min(float(avg_response_len) + offset, cap) + 0.5))


@dataclass(frozen=True)
class ReflenSettings:
    k: int = 1
    offset: int = 1000
    cap: int = 9192
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 8192
    seed: int = 0
    shard_size: int = 512
    max_prompt_tokens: int | None = None
    enable_thinking: bool | None = None
    grade_timeout_s: float = DEFAULT_TIMEOUT_S
    grade_workers: int = 0

    def __post_init__(self) -> None:
        for name in ("k", "max_tokens", "shard_size", "cap"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise LieError(f"reflen.{name} must be an integer >= 1, got {getattr(self, name)!r}")
        if not isinstance(self.offset, int) or self.offset < 0:
            raise LieError(f"reflen.offset must be an integer >= 0, got {self.offset!r}")
        self.sampling()  # refuse what vLLM would refuse before any model loads

    def sampling(self) -> SamplingSettings:
        """The engine's settings for one sample (each sample is its own request)."""
        return SamplingSettings(
            n=self.k,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            top_p=self.top_p,
            keys={f: f"reflen.{f}" for f in ("max_tokens", "temperature", "top_p")} | {"n": "reflen.k"},
        )


def settings_from_config(config: Config, **overrides: Any) -> ReflenSettings:
    """``reflen:`` of config.yaml (plus the prompt limit and grading knobs), then non-None overrides."""
    limit, workers = grading_limits(config, missing=(DEFAULT_TIMEOUT_S, 0))
    values: dict[str, Any] = {
        "max_prompt_tokens": config.prompt_limit,
        "grade_timeout_s": limit,
        "grade_workers": workers,
        **asdict(config.reflen),
    }
    values.update({k: v for k, v in overrides.items() if v is not None})
    return ReflenSettings(**values)  # unknown keys refused above; every field has a default


def _known_length(row: dict[str, Any]) -> float | None:
    """A row's earlier reference length (``extra_info.avg_response_len``), to size shards by; else None."""
    extra = row.get("extra_info")
    value = extra.get("avg_response_len") if isinstance(extra, dict) else None
    ok = (
        isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0
    )
    return float(value) if ok and value is not None else None


def sample_lengths(
    rows: Sequence[dict[str, Any]],
    load_engine: Callable[[], Any],
    settings: ReflenSettings,
    work_dir: str | Path,
    manifest: dict[str, Any],
    grader: Callable[..., list[Any]] | None = None,
    source: str = "data",
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Per row: ``index``, token ``lengths``, ``correct``, ``finish`` and ``budgets`` of its k samples.

    Resumable, in shards of ``settings.shard_size`` samples of the flat (row, sample) order
    (``lie.stages.sample_shards``, the loop ``lie generate`` uses too).
    """
    if grader is None:
        grader = grade_many
    prompts = [
        Prompt(i, prompt_messages(row, f"{source} row {i}"), f"{source} row {i}", _known_length(row))
        for i, row in enumerate(rows)
    ]
    answers = [answer_of(row, p.where) for row, p in zip(rows, prompts)]  # graded as training grades
    draw = Draw(settings.sampling(), settings.seed, settings.enable_thinking, settings.max_prompt_tokens)

    def records(drawn: list[Any]) -> list[dict[str, Any]]:
        items = [
            Rollout(d.completion.text, d.completion.token_ids, answers[d.prompt.index], d.prompt.where).item()
            for d in drawn
        ]
        grades = grader(
            items, timeout_s=settings.grade_timeout_s, workers=settings.grade_workers, progress=False
        )
        if len(grades) != len(items):
            raise LieError(f"the grader returned {len(grades)} results for {len(items)} responses")
        return [
            {"index": d.prompt.index, "sample": d.sample, "length": len(d.completion.token_ids),
             "correct": bool(grade.correct), "finish": d.completion.finish_reason,
             "budget": d.completion.max_tokens}
            for d, grade in zip(drawn, grades)
        ]  # fmt: skip

    state = dict(manifest, **asdict(settings), shard_unit="sample", seed_rule=SEED_RULE)
    samples = list(
        sample_shards.sample_in_shards(
            prompts,
            draw,
            load_engine,
            records,
            Path(work_dir),
            state,
            settings.shard_size,
            "reflen",
            progress,
        )
    )
    if [(s["index"], s["sample"]) for s in samples] != [
        (i, j) for i in range(len(rows)) for j in range(settings.k)
    ]:
        raise LieError(
            f"{work_dir}: the shards do not cover rows 0..{len(rows) - 1}; delete that folder and rerun"
        )
    return [_row_stats(samples[i * settings.k : (i + 1) * settings.k]) for i in range(len(rows))]


def _row_stats(samples: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return {
        "index": samples[0]["index"],
        "lengths": [s["length"] for s in samples],
        "correct": [s["correct"] for s in samples],
        "finish": [s["finish"] for s in samples],
        "budgets": [s["budget"] for s in samples],
    }


def add_reference_lengths(
    table: pa.Table, stats: Sequence[dict[str, Any]], settings: ReflenSettings
) -> pa.Table:
    """``table`` with ``reward_model.num_tokens`` and ``extra_info.{avg_response_len,gen_count,ori_acc}``."""
    rows = table.to_pylist()
    for row, stat in zip(rows, stats, strict=True):
        avg = sum(stat["lengths"]) / len(stat["lengths"])
        reward = dict(row.get("reward_model") or {})
        reward["num_tokens"] = reference_length(avg, settings.offset, settings.cap)
        extra = dict(row.get("extra_info") or {})
        extra.update(
            avg_response_len=float(avg),
            gen_count=len(stat["lengths"]),
            ori_acc=sum(stat["correct"]) / len(stat["correct"]),
        )
        row["reward_model"], row["extra_info"] = reward, extra
    schema = table.schema
    for column, added in (
        ("reward_model", arrow_fields(REFLEN_REWARD_FIELDS)),
        ("extra_info", arrow_fields(REFLEN_EXTRA_FIELDS)),
    ):  # the data set's own struct (it may have more fields), with the reflen fields set
        old = schema.field(column).type if column in schema.names else pa.struct([])
        names = {f.name for f in added}
        kept = [old.field(i) for i in range(old.num_fields) if old.field(i).name not in names]
        struct = pa.struct(kept + added)
        if column in schema.names:
            schema = schema.set(schema.get_field_index(column), pa.field(column, struct))
        else:
            schema = schema.append(pa.field(column, struct))
    return pa.Table.from_pylist(rows, schema=schema.remove_metadata())


def run_reflen(
    config: Config,
    model: str,
    data: str | Path,
    out: str | Path,
    engine: str | None = None,
    limit: int | None = None,
    progress: bool = True,
    grader: Callable[..., list[Any]] | None = None,
    engine_kwargs: dict[str, Any] | None = None,
    **overrides: Any,
) -> dict[str, Any]:
    """``lie reflen``: read ``data``, sample, write ``out`` with L_ref; return the recorded metadata."""
    if str(out) == "-":
        raise LieError(
            "--out - is standard output; this command writes a file (atomically, with its records): give a file name"
        )
    check_output_file(out, [data])
    settings = settings_from_config(config, **overrides)
    kind = engine or config.engines.generate
    table, rows = read_checked(
        data, ("prompt", "reward_model"), limit
    )  # a bad row stops before a model loads

    path, entry = resolve_model(config, model)
    check_output_file(out, [data, path])  # not inside the model folder
    if settings.enable_thinking is None and entry is not None and entry.enable_thinking is not None:
        settings = replace(settings, enable_thinking=entry.enable_thinking)
    trust = config.trust_remote_code
    manifest = {
        "data": str(Path(data).resolve()),
        "data_sha256": file_sha256(data),
        "rows": len(rows),
        "model": str(path),
        "engine": kind,
        "engine_kwargs": engine_kwargs or {},
        "batch_invariant": batch_invariant_mode(kind, engine_kwargs),
    }
    work_dir = Path(f"{out}.shards")
    stats = sample_lengths(
        rows,
        lambda: load_engine(kind, path, trust_remote_code=trust, **(engine_kwargs or {})),
        settings,
        work_dir,
        manifest,
        grader,
        str(data),
        progress,
    )
    result = add_reference_lengths(table, stats, settings)
    lengths = [sum(s["lengths"]) / len(s["lengths"]) for s in stats]
    truncated = sum(f == "length" for s in stats for f in s["finish"])
    capped = sum(b < settings.max_tokens for s in stats for b in s["budgets"])
    metadata = read_metadata(data)
    metadata["reflen"] = {
        **asdict(settings),
        "model": model,
        "model_path": str(path),
        "hf_id": entry.hf_id if entry else None,
        "revision": entry.revision if entry else None,
        "engine": kind,
        "engine_kwargs": engine_kwargs or {},
        "batch_invariant": manifest["batch_invariant"],
        "formula": FORMULA,
        "data": str(data),
        "limit": limit,
        "rows": len(rows),
        "mean_avg_response_len": sum(lengths) / len(lengths) if lengths else 0.0,
        "mean_ori_acc": sum(sum(s["correct"]) / len(s["correct"]) for s in stats) / len(stats)
        if stats
        else 0.0,
        "truncated_samples": truncated,
        "budget_capped_samples": capped,
    }
    write_table(with_metadata(result, metadata), out)
    remove_work(work_dir)  # lie's files only: a file the user put there stays
    if capped:
        log.warning(
            "reflen: %d samples had less than max_tokens=%d: the model's context minus the prompt",
            capped,
            settings.max_tokens,
        )
    log.info(
        "reflen: %d prompts, mean length %.1f, %d samples cut at their budget; wrote %s",
        len(rows),
        metadata["reflen"]["mean_avg_response_len"],
        truncated,
        out,
    )
    return metadata
