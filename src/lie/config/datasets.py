"""One ``datasets:`` entry of ``config.yaml``, checked so that a mistake names its key.

Every key is written out in ``config.yaml`` (DESIGN: Snakemake drops schema defaults in remote
jobs); a missing key reads as null here, an unknown key is an error (it is most likely a typo).
The source is ``local`` when set, else ``url``, else ``hf_id`` (which then needs ``revision``).
Every entry is checked when the config loads (``Config.datasets``); that a ``format`` gives rows of
its ``kind`` is checked where the rows are read (``lie.stages.data.build``, which knows the formats).
An evaluation set may name a second file for its bare questions (``bare: {url, sha1, local}``,
the authors' Llama file): the models of ``evaluation.bare_questions`` are evaluated on it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from lie.config.supervised import TASK_NAMES
from lie.core.errors import LieError

KEYS = (
    "hf_id",  # hub data set id
    "revision",  # commit SHA (best), tag or branch; mandatory with hf_id
    "config",  # hub config (subset) name, or null
    "split",  # split name
    "url",  # a raw file URL pinned to a commit (OlympiadBench, Minerva)
    "sha1",  # git blob id of the url's file, checked after download
    "local",  # a local file or directory (a mirror of the hub repo); wins over url and hf_id
    "format",  # which adapter reads the rows (lie.stages.data.adapters.FORMATS)
    "kind",  # math | choice
    "gated",  # true: the hub repo needs HF_TOKEN (GPQA)
    "dedup",  # true: keep the first row of every distinct prompt
    "sample",  # a seeded draw of this many rows, or null for all
    "seed",  # the draw's seed
    "filter",  # {column: {min: x, max: y}} or {column: [values]} before the draw, or null
    "shuffle_seed",  # seed of the option shuffle (GPQA)
    "expected_rows",  # rows a full build should give (a warning when it does not), or null
    "n",  # samples per problem at evaluation (read by lie evaluate)
    "synthetic",  # {task, count, seed, min_depth, max_depth}: rows the project writes itself
    "bare",  # {url, sha1, local}: the same problems as bare questions (evaluation sets), or null
)
BARE_KEYS = ("url", "sha1", "local")
SYNTHETIC_KEYS = ("task", "count", "seed", "min_depth", "max_depth")
COMMIT = re.compile(r"[0-9a-f]{40}")


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    group: str  # train | eval
    hf_id: str | None
    revision: str | None
    config: str | None
    split: str | None
    url: str | None
    sha1: str | None
    local: str | None
    format: str
    kind: str
    gated: bool
    dedup: bool
    sample: int | None
    seed: int | None
    filter: dict[str, Any] | None
    shuffle_seed: int | None
    expected_rows: int | None
    synthetic: dict[str, Any] | None = None
    bare: dict[str, Any] | None = None
    n: int | None = None  # samples per problem at evaluation (eval sets)

    @property
    def where(self) -> str:
        return f"datasets.{self.group}.{self.name}"

    @property
    def source_kind(self) -> str:
        if self.synthetic:
            return "synthetic"
        return "local" if self.local else "url" if self.url else "hub"

    @property
    def synthetic_task(self) -> str | None:
        """The task that writes a synthetic set's rows (the study reads depth back with it), else None."""
        return self.synthetic["task"] if self.synthetic else None

    @property
    def pinned(self) -> bool:
        return bool(self.revision and COMMIT.fullmatch(self.revision))


def _get(entry: dict[str, Any], key: str, where: str, types: tuple[type, ...], required: bool = False) -> Any:
    value = entry.get(key)
    if value is None:
        if required:
            raise LieError(f"{where}.{key} is missing; {_HELP.get(key, 'set it in config.yaml')}")
        return None
    if isinstance(value, bool) and bool not in types:
        raise LieError(f"{where}.{key} must be {' or '.join(t.__name__ for t in types)}, got {value!r}")
    if not isinstance(value, types):
        raise LieError(f"{where}.{key} must be {' or '.join(t.__name__ for t in types)}, got {value!r}")
    return value


_HELP = {
    "revision": "pin the hub revision (a 40-hex commit SHA, or a tag/branch such as main)",
    "split": "name the split to read (e.g. train or test)",
    "format": "name the row adapter, one of lie.stages.data.adapters.FORMATS",
    "kind": "set math or choice",
    "seed": "a seeded draw needs its seed",
    "shuffle_seed": "options are shuffled with a recorded seed; set an integer",
}


def parse_spec(name: str, group: str, entry: Any) -> DatasetSpec:
    """Check ``entry`` (the mapping under ``datasets.<group>.<name>``) and return its spec."""
    where = f"datasets.{group}.{name}"
    if not isinstance(entry, dict):
        raise LieError(f"{where} must be a mapping of keys ({', '.join(KEYS)}), got {type(entry).__name__}")
    unknown = sorted(set(entry) - set(KEYS))
    if unknown:
        raise LieError(f"{where}: unknown key(s) {', '.join(unknown)}; valid keys: {', '.join(KEYS)}")
    fmt = _get(entry, "format", where, (str,), required=True)
    kind = _get(entry, "kind", where, (str,), required=True)
    spec = DatasetSpec(
        name=name,
        group=group,
        hf_id=_get(entry, "hf_id", where, (str,)),
        revision=_get(entry, "revision", where, (str,)),
        config=_get(entry, "config", where, (str,)),
        split=_get(entry, "split", where, (str,)),
        url=_get(entry, "url", where, (str,)),
        sha1=_get(entry, "sha1", where, (str,)),
        local=_get(entry, "local", where, (str,)),
        format=fmt,
        kind=kind,
        gated=bool(_get(entry, "gated", where, (bool,))),
        dedup=bool(_get(entry, "dedup", where, (bool,))),
        sample=_get(entry, "sample", where, (int,)),
        seed=_get(entry, "seed", where, (int,)),
        filter=_get(entry, "filter", where, (dict,)),
        shuffle_seed=_get(entry, "shuffle_seed", where, (int,)),
        expected_rows=_get(entry, "expected_rows", where, (int,)),
        synthetic=_get(entry, "synthetic", where, (dict,)),
        bare=_get(entry, "bare", where, (dict,)),
        n=_get(entry, "n", where, (int,)),  # read by lie generate and lie evaluate
    )
    _check(spec, entry, where)
    return spec


def _check(spec: DatasetSpec, entry: dict[str, Any], where: str) -> None:
    if spec.synthetic is not None:
        _check_synthetic(spec, where)
        return
    if not (spec.local or spec.url or spec.hf_id):
        raise LieError(f"{where}: no source; set hf_id (with revision), url (with sha1), local or synthetic")
    if spec.source_kind == "hub":
        _get(entry, "revision", where, (str,), required=True)
        _get(entry, "split", where, (str,), required=True)
        if not (spec.revision or "").strip():
            raise LieError(f"{where}.revision is empty; {_HELP['revision']}")
    if spec.sha1 is not None and not COMMIT.fullmatch(spec.sha1):
        raise LieError(f"{where}.sha1 must be a 40-hex git blob id, got {spec.sha1!r}")
    if spec.sample is not None:
        if spec.sample < 1:
            raise LieError(f"{where}.sample must be >= 1 or null, got {spec.sample}")
        _get(entry, "seed", where, (int,), required=True)
    if spec.format == "gpqa":
        _get(entry, "shuffle_seed", where, (int,), required=True)
    if spec.bare is not None:
        _check_bare(spec.bare, f"{where}.bare")
    for column, rule in (spec.filter or {}).items():
        ok = isinstance(rule, list) or (
            isinstance(rule, dict)
            and rule
            and set(rule) <= {"min", "max"}
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in rule.values())
        )
        if not ok:
            raise LieError(
                f"{where}.filter.{column} must be a list of allowed values or {{min: x, max: y}}, got {rule!r}"
            )


def _check_bare(bare: dict[str, Any], where: str) -> None:
    unknown = sorted(set(bare) - set(BARE_KEYS))
    if unknown:
        raise LieError(f"{where}: unknown key(s) {', '.join(unknown)}; valid keys: {', '.join(BARE_KEYS)}")
    for key in BARE_KEYS:
        _get(bare, key, where, (str,))
    if not (bare.get("url") or bare.get("local")):
        raise LieError(f"{where}: set url (with sha1) or local, or set bare to null")
    if bare.get("sha1") is not None and not COMMIT.fullmatch(bare["sha1"]):
        raise LieError(f"{where}.sha1 must be a 40-hex git blob id, got {bare['sha1']!r}")


def bare_spec(spec: DatasetSpec) -> DatasetSpec:
    """``spec`` reading its bare-question file (``bare``) instead of its own source."""
    from dataclasses import replace

    if spec.bare is None:
        return spec
    return replace(
        spec, url=spec.bare.get("url"), sha1=spec.bare.get("sha1"), local=spec.bare.get("local"), bare=None
    )


def _check_synthetic(spec: DatasetSpec, where: str) -> None:
    synthetic = spec.synthetic or {}
    unknown = sorted(set(synthetic) - set(SYNTHETIC_KEYS))
    missing = [k for k in SYNTHETIC_KEYS if k not in synthetic]
    if unknown or missing:
        raise LieError(
            f"{where}.synthetic needs exactly the keys {', '.join(SYNTHETIC_KEYS)} (unknown: {unknown}, missing: {missing})"
        )
    if synthetic["task"] not in TASK_NAMES:
        raise LieError(
            f"{where}.synthetic.task must be one of {', '.join(TASK_NAMES)}, got {synthetic['task']!r}"
        )
    for key in ("count", "seed", "min_depth", "max_depth"):
        if not isinstance(synthetic[key], int) or isinstance(synthetic[key], bool) or synthetic[key] < 0:
            raise LieError(f"{where}.synthetic.{key} must be an integer >= 0, got {synthetic[key]!r}")
    if not 1 <= synthetic["min_depth"] <= synthetic["max_depth"]:
        raise LieError(f"{where}.synthetic: need 1 <= min_depth <= max_depth")
    expected = {"math": "problem-answer", "choice": "mmlu-pro"}[spec.kind]
    if spec.format != expected:
        raise LieError(f"{where}: synthetic {spec.kind} rows use format {expected!r}, got {spec.format!r}")
