"""Generation (``lie generate``): n sampled completions per benchmark problem, with their token ids.

``lie generate aime24 --config config.yaml --model M --data aime24.parquet --out GEN.jsonl``
samples ``datasets.eval.<bench>.n`` completions per problem (32 for AIME24/AIME25/AMC, 1 for the
rest) to ``evaluation.max_tokens`` (capped at the model's context minus the prompt) at
``evaluation.temperature`` / ``top_p``, each sample with its own seed hashed from
(``evaluation.seed``, benchmark, model, problem index, sample: :func:`stream_seed`), with engine ``engines.generate`` (vllm on GPUs, hf on
a CPU). ``M`` is a model of config.yaml or a local folder (a merged checkpoint). Work goes in
``GEN.jsonl.shards/``, shards of about ``evaluation.shard_size`` samples' expected tokens
(``lie.stages.sample_shards``; a killed run resumes there; removed after success); ``GEN.manifest.json`` then records the settings (engine and its version
included) and counts.

Out, one JSON line per sample: ``bench``, ``index`` (problem), ``sample`` (0..n-1), ``gold``,
``kind``, ``letters`` (choice items), ``prompt_tokens``, ``max_tokens`` (the sample's budget),
``seed``, ``token_ids``, ``text``, ``num_tokens``, ``finish_reason`` (``stop`` | ``length``).
``lie evaluate`` scores them at every token budget.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from lie.config.datasets import DatasetSpec
from lie.config.layout import Layout
from lie.config.sections import Evaluation
from lie.config.typed import Config
from lie.core.errors import LieError
from lie.engines.generation import (
    SEED_RULE,
    SamplingSettings,
    batch_invariant_mode,
    engine_version,
    load_engine,
    sample_seed,
)
from lie.formats.generations import generation_line
from lie.formats.jsonl import atomic_output, dumps
from lie.formats.outputs import check_output_file, record_of
from lie.formats.resumable import remove_work
from lie.formats.rows import answer_of, prompt_messages, read_rows
from lie.stages.base_model import file_sha256, resolve_model
from lie.stages.sample_shards import Draw, Drawn, Prompt, sample_in_shards

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Problem:
    index: int
    messages: list[dict[str, str]]
    gold: str
    kind: str
    letters: list[str]


def read_problems(path: str | Path, bench: str, limit: int | None = None) -> list[Problem]:
    """The benchmark's problems (verl rows, read by ``lie.formats.rows.read_rows``); a bad row names
    its number and field."""
    rows = read_rows(path, ("prompt", "reward_model", "extra_info"), limit)
    problems: list[Problem] = []
    seen: dict[int, int] = {}
    for number, row in enumerate(rows):
        where = f"{path} row {number}"
        source = row.get("data_source")
        if source and source != bench:
            raise LieError(f"{where}: data_source is {source!r}, not the benchmark {bench!r}; check --data")
        answer = answer_of(row, where)
        index = (row.get("extra_info") or {}).get("index")
        if not isinstance(index, int) or isinstance(index, bool):
            raise LieError(f"{where}: field 'extra_info.index' must be an integer, got {index!r}")
        if index in seen:
            raise LieError(
                f"{where}: extra_info.index {index} repeats row {seen[index]}; keep one row per problem "
                "(the n samples come from datasets.eval.<bench>.n)"
            )
        seen[index] = number
        problems.append(
            Problem(index, prompt_messages(row, where), answer.gold, answer.kind, list(answer.letters))
        )
    if not problems:
        raise LieError(f"{path}: no problems")
    return problems


def run_generate(
    config: Config,
    model: str,
    bench: str,
    data: str | Path,
    out: str | Path,
    engine: str | None = None,
    n: int | None = None,
    max_tokens: int | None = None,
    seed: int | None = None,
    shard_size: int | None = None,
    enable_thinking: bool | None = None,
    limit: int | None = None,
    engine_kwargs: dict[str, Any] | None = None,
    progress: bool = True,
    rule: SamplingRule | None = None,
    temperature: float | None = None,
    top_p: float | None = None,
) -> dict[str, Any]:
    """Generate, resumably, and write ``out``; return the settings and counts. ``rule``: a change to
    how the engine samples (the study's forced-depth probe), named in the records."""
    if str(out) == "-":
        raise LieError(
            "--out - is standard output; this command writes a file (atomically, with its records): give a file name"
        )
    check_output_file(out, [data])
    entry = config.dataset(bench)
    if entry.group != "eval":
        raise LieError(f"{bench!r} is a training set; --bench takes a name of datasets.eval")
    evaluation = config.evaluation
    kind = engine or config.engines.generate
    sampling = _sampling(evaluation, entry, bench, n, max_tokens, temperature, top_p)
    seed = int(seed if seed is not None else evaluation.seed)
    shard_size = int(shard_size if shard_size is not None else evaluation.shard_size)
    path, _ = resolve_model(config, model)
    for written in (out, manifest_path(out)):  # before anything is written: none inside the model
        check_output_file(written, [data, path])
    problems = read_problems(data, bench, limit)
    if enable_thinking is None:
        enable_thinking = evaluation_thinking(config, model)
    trust = config.trust_remote_code
    settings = {
        "bench": bench,
        "data": str(Path(data).resolve()),
        "data_sha256": file_sha256(data),
        "limit": limit,
        "model": str(path),
        "engine": kind,
        "engine_version": engine_version(kind),
        "engine_kwargs": engine_kwargs or {},
        "batch_invariant": batch_invariant_mode(kind, engine_kwargs),
        "enable_thinking": enable_thinking,
        "shard_size": shard_size,
        "shard_unit": "sample",
        "seed": seed,
        "seed_model": model_name(model),
        "seed_rule": f"{STREAM_RULE}; then {SEED_RULE}",
        **asdict(sampling),
        **({"sampling_rule": rule.name} if rule else {}),
    }
    log.info("generate %s: %s", bench, ", ".join(f"{k}={v}" for k, v in settings.items()))
    prompts = [Prompt(p.index, p.messages, f"{bench} problem {p.index}") for p in problems]
    draw = Draw(sampling, stream_seed(seed, bench, model_name(model)), enable_thinking)
    by_index = {p.index: p for p in problems}

    def load() -> Any:
        engine = load_engine(kind, str(path), trust_remote_code=trust, **(engine_kwargs or {}))
        if rule:
            rule.apply(engine)
        return engine

    work_dir = Path(f"{out}.shards")
    lines = sample_in_shards(
        prompts,
        draw,
        load,
        lambda drawn: [_line(bench, by_index[d.prompt.index], d) for d in drawn],
        work_dir,
        settings,
        shard_size,
        desc=f"generate {bench}",
        progress=progress,
    )
    count = truncated = capped = 0
    with atomic_output(out) as handle:
        for line in lines:  # the flat (problem, sample) order, whatever the shards
            handle.write(dumps(line) + "\n")
            count += 1
            truncated += line["finish_reason"] == "length"
            capped += line["max_tokens"] < sampling.max_tokens
    summary = {**settings, "problems": len(problems), "samples": count, "truncated": truncated,
               "budget_capped": capped}  # fmt: skip
    with atomic_output(manifest_path(out)) as handle:
        handle.write(dumps(summary, indent=2) + "\n")
    remove_work(work_dir)  # lie's files only: a file the user put there stays
    log.info("%s: %d samples of %d problems, %d cut at their budget", out, count, len(problems), truncated)
    if capped:
        log.warning(
            "%s: %d samples had less than max_tokens=%d: the model's context minus the prompt "
            "(each line's max_tokens is its budget)",
            out,
            capped,
            sampling.max_tokens,
        )
    return summary


def manifest_path(out: str | Path) -> Path:
    """Where ``lie generate`` records how ``out`` was sampled: ``GEN.jsonl`` -> ``GEN.manifest.json``."""
    out = Path(out)
    return out.with_name(f"{out.stem}.manifest.json")


STREAM_RULE = "base = sample_seed(seed, text_key(bench), text_key(model name)); text_key = blake2b-64 >> 1"


def config_model_of(config: Config, model: str) -> str | None:
    """The config's model behind ``--model``: its name; or, for a folder, the base model it holds or
    the model of the run merged into it (the folder's place in the outdir, else its merge record)."""
    models, experiments = config.models, config.experiments
    if model in models:
        return model
    layout, here = Layout(config), Path(model).resolve()
    for name in models:
        if layout.base_model(name).resolve() == here:
            return name
    for run, spec in experiments.items():
        if layout.merged_model(run).resolve() == here:
            return spec.model
    record = record_of(model)
    merged = record.get("run") if record.get("command") == "merge" else None
    if isinstance(merged, str) and merged in experiments:
        return experiments[merged].model
    named = record.get("model")
    return named if isinstance(named, str) and named in models else None


def evaluation_thinking(config: Config, model: str) -> bool | None:
    """The thinking switch ``--model`` is evaluated with when ``--enable-thinking`` is not given: the
    one the DAG passes for the same model (a run folder gets its base model's)."""
    name = config_model_of(config, model)
    if name is None:
        log.warning(
            "%s: no model of the config behind it (not a base model or run folder of this outdir, no merge "
            "record naming one): thinking as the chat template's default; pass --enable-thinking to choose",
            model,
        )
        return None
    return config.thinking_at_evaluation(name)


@dataclass(frozen=True)
class SamplingRule:
    """A change to how an engine samples: ``apply`` sets it on the loaded engine; ``name`` is recorded."""

    name: str
    apply: Callable[[Any], None]


def model_name(model: str) -> str:
    """What names a model in its seeds: its config name, or a folder's own name (a run's merged model)."""
    return Path(model).name or model


def _text_key(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big") >> 1


def stream_seed(seed: int, bench: str, model: str) -> int:
    """The base seed of one (benchmark, model): problem k of two benchmarks, or of two models, draws
    from noise streams of its own (``STREAM_RULE``; each sample's seed is hashed from this one)."""
    return sample_seed(seed, _text_key(bench), _text_key(model))


def _sampling(
    evaluation: Evaluation,
    entry: DatasetSpec,
    bench: str,
    n: int | None,
    max_tokens: int | None,
    temperature: float | None = None,
    top_p: float | None = None,
) -> SamplingSettings:
    """The sampling settings, checked before any model loads; an error names the key to change."""
    return SamplingSettings(
        n=int(n if n is not None else entry.n or 1),
        max_tokens=int(max_tokens if max_tokens is not None else evaluation.max_tokens),
        temperature=evaluation.temperature if temperature is None else float(temperature),
        top_p=evaluation.top_p if top_p is None else float(top_p),
        keys={
            "n": f"datasets.eval.{bench}.n (or --n)" if n is None else "--n",
            "max_tokens": "evaluation.max_tokens (or --max-tokens)" if max_tokens is None else "--max-tokens",
            "temperature": "evaluation.temperature" if temperature is None else "the temperature asked for",
            "top_p": "evaluation.top_p" if top_p is None else "the top_p asked for",
        },
    )


def _line(bench: str, problem: Problem, drawn: Drawn) -> dict[str, Any]:
    comp = drawn.completion
    return generation_line(
        bench, problem.index, drawn.sample, problem.gold, problem.kind, problem.letters, drawn.prompt_tokens,
        comp.max_tokens, comp.seed, comp.token_ids, comp.text, comp.finish_reason,
    )  # fmt: skip
