"""Per-prompt reference lengths ``L_ref`` for the LIE length reward (SPEC section 1).

The base model answers every training prompt ``k`` times (the authors: once) with the run's
sampling settings and response limit; ``avg_response_len`` is the mean token count of those
responses (end-of-sequence token included, as verl counts), ``ori_acc`` their mean correctness,
and ``num_tokens = L_ref = min(avg_response_len + offset, cap)`` (the authors' files: offset 1000,
cap 9192). Work runs in seeded, resumable shards: a killed run continues where it stopped.
"""

from __future__ import annotations

import logging
import math
import shutil
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

import pyarrow as pa

from lie.errors import LieError

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
    grade_timeout_s: float = 10.0
    grade_workers: int = 0

    def __post_init__(self) -> None:
        for name in ("k", "max_tokens", "shard_size", "cap"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise LieError(f"reflen.{name} must be an integer >= 1, got {getattr(self, name)!r}")
        if not isinstance(self.offset, int) or self.offset < 0:
            raise LieError(f"reflen.offset must be an integer >= 0, got {self.offset!r}")


def settings_from_config(config: dict[str, Any], **overrides: Any) -> ReflenSettings:
    """``reflen:`` of config.yaml (plus the prompt limit and grading knobs), then non-None overrides."""
    section = dict(config.get("reflen") or {})
    known = {f.name for f in fields(ReflenSettings)}
    unknown = sorted(set(section) - known)
    if unknown:
        raise LieError(
            f"config: unknown key(s) reflen.{', reflen.'.join(unknown)}; valid: {', '.join(sorted(known))}"
        )
    training = config.get("training") or {}
    evaluation = config.get("evaluation") or {}
    values: dict[str, Any] = {
        "max_prompt_tokens": training.get("max_prompt_length"),
        "grade_timeout_s": evaluation.get("grade_timeout_s", 10.0),
        "grade_workers": evaluation.get("grade_workers", 0),
    }
    values.update({k: v for k, v in section.items() if v is not None})
    values.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return ReflenSettings(**values)
    except TypeError as exc:
        raise LieError(f"config: reflen: {exc}") from None


def _kind(row: dict[str, Any]) -> str:
    extra = row.get("extra_info") or {}
    kind = extra.get("kind") if isinstance(extra, dict) else None
    return kind or ("choice" if str(row.get("ability", "")).lower() == "choice" else "math")


def _messages(row: dict[str, Any], where: str) -> list[dict[str, str]]:
    prompt = row.get("prompt")
    if not isinstance(prompt, list) or not prompt or not all(isinstance(m, dict) for m in prompt):
        raise LieError(f"{where}: 'prompt' must be a list of chat messages, got {prompt!r:.80}")
    return [{"role": str(m.get("role")), "content": str(m.get("content"))} for m in prompt]


def _gold(row: dict[str, Any], where: str) -> str:
    reward = row.get("reward_model")
    gold = reward.get("ground_truth") if isinstance(reward, dict) else None
    if gold is None or str(gold) == "":
        raise LieError(f"{where}: reward_model.ground_truth is missing; build the file with `lie data`")
    return str(gold)


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
    """Per row: ``index``, token ``lengths``, ``correct`` and ``finish`` of its k samples (resumable)."""
    from lie.engines.generation import SamplingSettings, prompt_seed
    from lie.prompts import prompt_token_ids
    from lie.resumable import iter_shards, run_in_shards

    if grader is None:
        from lie.grading import grade_many as grader
    sampling = SamplingSettings(
        n=settings.k, max_tokens=settings.max_tokens, temperature=settings.temperature, top_p=settings.top_p
    )
    engine: list[Any] = []

    def work(shard: range) -> list[dict[str, Any]]:
        if not engine:
            engine.append(load_engine())
        eng = engine[0]
        where = [f"{source} row {i}" for i in shard]
        prompts = [
            prompt_token_ids(
                eng.tokenizer, _messages(rows[i], w), settings.enable_thinking, settings.max_prompt_tokens
            )
            for i, w in zip(shard, where)
        ]
        golds = [_gold(rows[i], w) for i, w in zip(shard, where)]
        outs = eng.generate(prompts, sampling, [prompt_seed(settings.seed, i) for i in shard])
        for i, comps in zip(shard, outs):
            if len(comps) != settings.k:
                raise LieError(
                    f"the engine gave {len(comps)} samples for {source} row {i}, expected {settings.k}"
                )
        items = [
            {"response": c.text, "gold": gold, "kind": _kind(rows[i])}
            for i, gold, comps in zip(shard, golds, outs)
            for c in comps
        ]
        grades = grader(
            items, timeout_s=settings.grade_timeout_s, workers=settings.grade_workers, progress=False
        )
        if len(grades) != len(items):
            raise LieError(f"the grader returned {len(grades)} results for {len(items)} responses")
        out, pos = [], 0
        for i, comps in zip(shard, outs):
            got = grades[pos : pos + len(comps)]
            pos += len(comps)
            out.append(
                {
                    "index": i,
                    "lengths": [len(c.token_ids) for c in comps],
                    "correct": [bool(g.correct) for g in got],
                    "finish": [c.finish_reason for c in comps],
                }
            )
        return out

    state = dict(manifest, **asdict(settings))
    paths = run_in_shards(
        len(rows), settings.shard_size, work_dir, state, work, desc="reflen prompts", progress=progress
    )
    stats = sorted(iter_shards(paths), key=lambda r: r["index"])
    if [s["index"] for s in stats] != list(range(len(rows))):
        raise LieError(
            f"{work_dir}: the shards do not cover rows 0..{len(rows) - 1}; delete that folder and rerun"
        )
    return stats


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
        ("reward_model", [pa.field("num_tokens", pa.int64())]),
        (
            "extra_info",
            [
                pa.field("avg_response_len", pa.float64()),
                pa.field("gen_count", pa.int64()),
                pa.field("ori_acc", pa.float64()),
            ],
        ),
    ):
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
    config: dict[str, Any],
    model: str,
    data: str | Path,
    out: str | Path,
    engine: str | None = None,
    limit: int | None = None,
    progress: bool = True,
    grader: Callable[..., list[Any]] | None = None,
    **overrides: Any,
) -> dict[str, Any]:
    """``lie reflen``: read ``data``, sample, write ``out`` with L_ref; return the recorded metadata."""
    import pyarrow.parquet as pq

    from lie.data.rows import read_metadata, with_metadata, write_table
    from lie.engines.generation import load_engine

    settings = settings_from_config(config, **overrides)
    kind = engine or (config.get("engines") or {}).get("generate") or "hf"
    try:
        table = pq.read_table(data)
    except (OSError, pa.ArrowInvalid) as exc:
        raise LieError(f"cannot read {data} as parquet ({exc})") from None
    for column in ("prompt", "reward_model"):
        if column not in table.column_names:
            raise LieError(f"{data}: column {column!r} is missing; build the file with `lie data`")
    if limit is not None:
        if limit < 1:
            raise LieError(f"--limit must be >= 1, got {limit}")
        table = table.slice(0, limit)
    from lie.models import file_sha256, resolve_model

    path, entry = resolve_model(config, model)
    if settings.enable_thinking is None and entry.get("enable_thinking") is not None:
        settings = replace(settings, enable_thinking=bool(entry["enable_thinking"]))
    trust = bool(config.get("trust_remote_code", False))
    rows = table.to_pylist()
    manifest = {
        "data": str(Path(data).resolve()),
        "data_sha256": file_sha256(data),
        "rows": len(rows),
        "model": str(path),
        "engine": kind,
    }
    work_dir = Path(f"{out}.shards")
    stats = sample_lengths(
        rows,
        lambda: load_engine(kind, path, trust_remote_code=trust),
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
    metadata = read_metadata(data)
    metadata["reflen"] = {
        **asdict(settings),
        "model": model,
        "model_path": str(path),
        "hf_id": entry.get("hf_id"),
        "revision": entry.get("revision"),
        "engine": kind,
        "formula": FORMULA,
        "data": str(data),
        "limit": limit,
        "rows": len(rows),
        "mean_avg_response_len": sum(lengths) / len(lengths) if lengths else 0.0,
        "mean_ori_acc": sum(sum(s["correct"]) / len(s["correct"]) for s in stats) / len(stats)
        if stats
        else 0.0,
        "truncated_samples": truncated,
    }
    write_table(with_metadata(result, metadata), out)
    shutil.rmtree(work_dir, ignore_errors=True)
    log.info(
        "reflen: %d prompts, mean length %.1f, %d samples cut at max_tokens; wrote %s",
        len(rows),
        metadata["reflen"]["mean_avg_response_len"],
        truncated,
        out,
    )
    return metadata
