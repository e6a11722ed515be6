"""The whole config as one frozen, typed object (``Config``), built once by ``load_config``.

Every stage, engine, report and rule reads its settings from here, by attribute: a typo is a type
checker's error (``make lint`` runs mypy), not a ``KeyError`` in a job an hour later, and each key has
one type and one default, in this package. The schema (``schema.yaml``) has checked the shape before
this runs; a view here gives names and types and the errors the schema cannot state (a missing
section of a partial config, a run's merged keys: ``RunSettings``).

One section is handed on as written to the one typed reader that knows its meaning, in the layer that
owns it: the study's (``lie.study.spec``, which checks it against the runs). ``Config.as_written`` gives a section as written (a deep copy), for what must
stay byte-stable: the settings digests and Snakemake's params (``lie.config.identity``), the config file
the jobs read, and the preflight's trial config.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from lie.config.datasets import DatasetSpec, parse_spec
from lie.config.sections import CHECKOUT, Engines, Evaluation, Experiment
from lie.config.settings import RunSettings
from lie.config.supervised import SFTSettings
from lie.core.errors import LieError
from lie.core.reward import RewardConfig


def _req(section: Mapping[str, Any], key: str, where: str) -> Any:
    """``section[key]``, or one line naming ``where.key`` when it is missing."""
    if key not in section:
        raise LieError(f"config: key '{where}.{key}' is missing")
    return section[key]


def _frozen(value: Any) -> Any:
    """A read-only deep view: mappings as ``MappingProxyType``, lists as tuples."""
    if isinstance(value, Mapping):
        return MappingProxyType({k: _frozen(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(_frozen(v) for v in value)
    return value


def _section(raw: Mapping[str, Any], name: str, source: str) -> dict[str, Any] | None:
    section = raw.get(name)
    if section is None:
        return None
    if not isinstance(section, dict):
        raise LieError(f"{source}: key '{name}': must be a mapping, got {type(section).__name__}")
    return section


@dataclass(frozen=True)
class Prompt:
    """``prompt:``: the question templates, ``{question}`` (math) and ``{question}``/``{choices}`` (choice)."""

    math: str
    choice: str

    def template(self, kind: str) -> str:
        """The template of a data set's ``kind`` (math or choice)."""
        if kind not in ("math", "choice"):
            raise LieError(f"config: no prompt template for kind {kind!r} (math or choice)")
        return self.math if kind == "math" else self.choice


@dataclass(frozen=True)
class Tiny:
    """``models.<m>.tiny``: a small model built locally (``lie base-model``), its tokenizer from ``corpus``."""

    seed: int
    vocab_size: int
    hidden: int
    layers: int
    corpus: tuple[str, ...]
    head_dim: int | None = None


@dataclass(frozen=True)
class ModelEntry:
    """``models.<m>``: a base model on the hub at a pinned revision, a local folder, or a tiny model."""

    name: str
    hf_id: str | None
    revision: str | None
    path: str | None
    enable_thinking: bool | None
    tiny: Tiny | None
    sft: SFTSettings | None  # the supervised stage of a tiny model
    written: Mapping[str, Any] = field(repr=False, compare=False)  # the entry as written, for records

    def tiny_as_written(self) -> dict[str, Any]:
        """``tiny:`` as written: what a built model's record says it was made from."""
        return _thawed(self.written.get("tiny") or {})

    @classmethod
    def of(cls, name: str, entry: Mapping[str, Any]) -> ModelEntry:
        tiny = entry.get("tiny")
        unknown = sorted(set(tiny or {}) - set(Tiny.__dataclass_fields__))
        if unknown:  # the schema refuses them in a file; a mapping built in code gets the same line
            valid = ", ".join(Tiny.__dataclass_fields__)
            raise LieError(f"models.{name}.tiny: unknown key(s) {', '.join(unknown)}; valid: {valid}")
        return cls(
            name=name,
            hf_id=entry.get("hf_id"),
            revision=entry.get("revision"),
            path=entry.get("path"),
            enable_thinking=entry.get("enable_thinking"),
            tiny=None
            if not tiny
            else Tiny(
                seed=int(_req(tiny, "seed", f"models.{name}.tiny")),
                vocab_size=int(_req(tiny, "vocab_size", f"models.{name}.tiny")),
                hidden=int(_req(tiny, "hidden", f"models.{name}.tiny")),
                layers=int(_req(tiny, "layers", f"models.{name}.tiny")),
                corpus=tuple(tiny.get("corpus") or ()),
                head_dim=tiny.get("head_dim"),
            ),
            sft=SFTSettings.from_mapping(entry["sft"], f"models.{name}.sft")
            if entry.get("sft") is not None
            else None,
            written=_frozen(entry),
        )


@dataclass(frozen=True)
class Reflen:
    """``reflen:``: the reference lengths' sampling (SPEC 3)."""

    k: int
    offset: int
    cap: int
    temperature: float
    top_p: float
    max_tokens: int
    seed: int
    shard_size: int


@dataclass(frozen=True)
class Cluster:
    """``cluster:``: a Slurm site's settings (execution only)."""

    account: str | None
    cpu_partition: str | None
    gpu_partition: str | None
    constraint: str | None
    qos: str | None
    sbatch_extra: str
    mem_mb_per_node: int
    cpus_per_gpu: int
    esi_redundant_time_s: float
    binds: tuple[str, ...]
    nccl: Mapping[str, str | int | None]


@dataclass(frozen=True, eq=False)
class Config:
    """The whole config (module docstring). Build it with ``load_config`` or ``Config.of``."""

    source: str
    name: str
    outdir: Path
    trust_remote_code: bool
    sft_cache: Path | None
    image: str | None
    models: Mapping[str, ModelEntry]
    datasets: Mapping[str, DatasetSpec]  # train and eval sets by name, checked (lie.config.datasets)
    experiments: Mapping[str, Experiment]
    runs: tuple[str, ...]
    paper_numbers: str | None  # report.paper_numbers
    _engines: Engines | None
    _prompt: Prompt | None
    _reflen: Reflen | None
    _cluster: Cluster | None
    _evaluation: Evaluation | None
    _reward: RewardConfig
    _written: Mapping[str, Any] = field(repr=False, compare=False)
    # each run's settings, built on first use; this object's own (a dataclasses.replace starts afresh)
    _runs: dict[str, RunSettings] = field(default_factory=dict, init=False, repr=False, compare=False)

    @classmethod
    def of(cls, raw: Mapping[str, Any], source: str = "config") -> Config:
        """The typed view of a checked mapping (``validate_config`` first: the schema's shape)."""
        if isinstance(raw, Config):
            return raw
        engines = _section(raw, "engines", source)
        prompt = _section(raw, "prompt", source)
        reflen = _section(raw, "reflen", source)
        cluster = _section(raw, "cluster", source)
        datasets = _section(raw, "datasets", source) or {}
        try:
            return cls(
                source=source,
                name=str(raw.get("name") or "default"),
                outdir=Path(raw.get("outdir") or f"results/{raw.get('name', 'default')}"),
                trust_remote_code=raw.get("trust_remote_code") is True,
                # a relative cache is the checkout's (as engines.vllm_cpu.venv), wherever the reader runs
                sft_cache=CHECKOUT / raw["sft_cache"] if raw.get("sft_cache") else None,
                image=raw.get("image") or None,
                models=MappingProxyType(
                    {n: ModelEntry.of(n, e) for n, e in (_section(raw, "models", source) or {}).items()}
                ),
                datasets=MappingProxyType(
                    {
                        n: parse_spec(n, group, copy.deepcopy(e))
                        for group in ("train", "eval")
                        for n, e in (datasets.get(group) or {}).items()
                    }
                ),
                experiments=MappingProxyType(
                    {
                        n: Experiment(
                            n,
                            _req(e, "model", f"experiments.{n}"),
                            _req(e, "data", f"experiments.{n}"),
                            _req(e, "algorithm", f"experiments.{n}"),
                            _req(e, "lie", f"experiments.{n}"),
                            e.get("parent"),
                            e.get("group"),
                        )  # fmt: skip
                        for n, e in (_section(raw, "experiments", source) or {}).items()
                    }
                ),
                runs=tuple(raw.get("runs") or ()),
                paper_numbers=(_section(raw, "report", source) or {}).get("paper_numbers"),
                _engines=Engines.of(raw) if engines is not None else None,
                _prompt=_prompt(prompt, source) if prompt is not None else None,
                _reflen=_reflen(reflen, source) if reflen else None,
                _cluster=_cluster(cluster) if cluster is not None else None,
                _evaluation=Evaluation.of(raw) if raw.get("evaluation") is not None else None,
                _reward=RewardConfig.from_mapping(raw.get("reward") or {}, source="reward"),
                _written=_frozen(raw),
            )
        except KeyError as exc:
            raise LieError(f"{source}: key {exc.args[0]!r} is missing") from None

    def _need(self, value: Any, name: str) -> Any:
        if value is None:
            raise LieError(f"{self.source}: the {name}: section is missing")
        return value

    @property
    def engines(self) -> Engines:
        return self._need(self._engines, "engines")

    @property
    def prompt(self) -> Prompt:
        return self._need(self._prompt, "prompt")

    @property
    def reflen(self) -> Reflen:
        return self._need(self._reflen, "reflen")

    @property
    def cluster(self) -> Cluster:
        return self._need(self._cluster, "cluster")

    @property
    def evaluation(self) -> Evaluation:
        return self._need(self._evaluation, "evaluation")

    @property
    def has_evaluation(self) -> bool:
        """A config with an evaluation section (``lie reflen`` also takes training-only configs)."""
        return self._evaluation is not None

    @property
    def reward(self) -> RewardConfig:
        """``reward:``: the knobs every LIE run shares (a run's own are its ``run(name).reward``)."""
        return self._reward

    @property
    def study(self) -> dict[str, Any] | None:
        """``study:`` as written (a plain copy): ``lie.study.spec.study_spec`` checks and types it."""
        return self.as_written("study")

    @property
    def prompt_limit(self) -> int | None:
        """``training.max_prompt_length``: the prompt limit a reference-length file shares with every run
        of its data and model (a run's own limit is ``run(name).max_prompt_length``)."""
        return (self._written.get("training") or {}).get("max_prompt_length")

    def run(self, name: str) -> RunSettings:
        """A run's settings, typed and merged (``lie.config.settings.RunSettings``), built once per run."""
        if name not in self._runs:
            self._runs[name] = RunSettings.of(self, name)
        return self._runs[name]

    def experiment(self, run: str) -> Experiment:
        if run not in self.experiments:
            raise LieError(f"run {run!r} is not in experiments; known runs: {', '.join(self.experiments)}")
        return self.experiments[run]

    def model(self, name: str) -> ModelEntry:
        if name not in self.models:
            raise LieError(f"model {name!r} is not in models; known: {', '.join(self.models)}")
        return self.models[name]

    def dataset(self, name: str) -> DatasetSpec:
        if name not in self.datasets:
            raise LieError(f"data set {name!r} is not in datasets; known: {', '.join(self.datasets)}")
        return self.datasets[name]

    def model_of(self, key: str) -> str:
        """The model of an evaluated key: a run's base model, or the key itself (a base model)."""
        return self.experiments[key].model if key in self.experiments else key

    def enable_thinking(self, model: str) -> bool | None:
        """The thinking switch ``model`` trains with (``models.<m>.enable_thinking``)."""
        return self.model(model).enable_thinking

    def thinking_at_evaluation(self, model: str) -> bool | None:
        """``evaluation.enable_thinking.<model>`` when named there (null: the template's default), else
        the model's own switch."""
        switches = self._written.get("evaluation", {}).get("enable_thinking") or {}
        if model in switches:
            return switches[model]
        return self.models[model].enable_thinking if model in self.models else None

    @property
    def retries(self) -> int:
        """``training.retries``: a train job's attempts after the first (the train rule's, every run's)."""
        return int(_req(self._need(self._written.get("training"), "training"), "retries", "training"))

    def as_written(self, *keys: str) -> Any:
        """The value at ``keys`` (the whole config when none) as written, a plain deep copy; None if absent."""
        value: Any = self._written
        for key in keys:
            if not isinstance(value, Mapping) or key not in value:
                return None
            value = value[key]
        return _thawed(value)


def _thawed(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _thawed(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [_thawed(v) for v in value]
    return copy.copy(value)


def _prompt(section: Mapping[str, Any], source: str) -> Prompt:
    for kind in ("math", "choice"):
        if not isinstance(section.get(kind), str):
            raise LieError(f"{source}: key 'prompt.{kind}' is missing (a template of {kind} questions)")
    return Prompt(section["math"], section["choice"])


def _reflen(section: Mapping[str, Any], source: str) -> Reflen:
    known = sorted(Reflen.__dataclass_fields__)
    unknown = sorted(set(section) - set(known))
    if unknown:  # the schema refuses them in a file; a mapping built in code gets the same line
        raise LieError(
            f"{source}: unknown key(s) reflen.{', reflen.'.join(unknown)}; valid: {', '.join(known)}"
        )
    return Reflen(**{k: section[k] for k in known})


def _cluster(section: Mapping[str, Any]) -> Cluster:
    return Cluster(
        account=_req(section, "account", "cluster"),
        cpu_partition=_req(section, "cpu_partition", "cluster"),
        gpu_partition=_req(section, "gpu_partition", "cluster"),
        constraint=_req(section, "constraint", "cluster"),
        qos=_req(section, "qos", "cluster"),
        sbatch_extra=_req(section, "sbatch_extra", "cluster"),
        mem_mb_per_node=int(_req(section, "mem_mb_per_node", "cluster")),
        cpus_per_gpu=int(_req(section, "cpus_per_gpu", "cluster")),
        esi_redundant_time_s=float(_req(section, "esi_redundant_time_s", "cluster")),
        binds=tuple(section.get("binds") or ()),
        nccl=MappingProxyType(dict(section.get("nccl") or {})),
    )
