"""A run's settings, typed and frozen, built once from the validated config (``RunSettings.of``).

Everything a training run needs: ``training:`` (SPEC 2's shared settings), its algorithm's loss,
its own keys of ``experiments:`` (``max_response_length``, ``max_steps`` and ``seed`` over the
shared ones), its engine, its parent and its reward knobs (``lie.core.reward.RewardConfig``). Both
engines (``lie.engines.verl.overrides``, ``lie.engines.trl.train``), ``lie train``, ``lie plan``,
``lie preflight`` and the Snakemake rules read a run's settings here and nowhere else, so that each
key has one type and no second default in code: the schema requires every key this object reads
except the optional ``seed``, ``threads``, ``world_size_change``, ``rollout_ignore_eos``, ``cpu_rollout``, ``gpu_rollout`` (below) and a
run's ``engine``, ``group`` and ``reward``. A changed value for one launch (``lie train --nnodes``) is a
``dataclasses.replace`` of the object, never an edit of the loaded config.

:func:`written_settings` is the same merge as the config writes it (a dict, every value as
written): what a run's settings digest reads (``lie.config.identity``), kept byte-stable so that a
run folder of older code still resumes.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lie.config.load import LIE_MODES
from lie.core.errors import LieError
from lie.core.reward import RewardConfig

if TYPE_CHECKING:
    from lie.config.typed import Config

FINAL = "final"
BEST_VAL = "best_val"
WORLD_SIZE_CHANGES = ("stop", "restart")


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


def _lie_off(config: Config, spec: Any) -> str | None:
    """The first-stage LIE-off run of ``spec``'s model, data and algorithm (its baseline), if any."""
    for name, other in config.experiments.items():
        same = (other.model, other.data, other.algorithm) == (spec.model, spec.data, spec.algorithm)
        if same and other.lie == "off" and not other.parent and not other.group:
            return name
    return None


def baseline_of(config: Config, run: str) -> str | None:
    """The run a LIE run is compared with: same model, data and algorithm, LIE off (first stages only)."""
    spec = config.experiments.get(run)
    if spec is None or spec.lie != "on" or spec.parent or spec.group:
        return None
    return _lie_off(config, spec)


def steps_reference(config: Config, run: str) -> str | None:
    """Under ``evaluation.equal_steps``, the run whose epochs ``run`` is evaluated after: the LIE-off run
    of the same model, data and algorithm (first stages), for every other first-stage run of that start
    (LIE, its length-only ablation, its sensitivity runs: all then compare at equal steps); else None."""
    spec = config.experiments.get(run)
    if not config.evaluation.equal_steps or spec is None or spec.lie == "off" or spec.parent:
        return None
    return _lie_off(config, spec)


def _equal_steps(config: Config, run: str, r: _Reader) -> EpochStep | None:
    """A run's :class:`EpochStep` under ``evaluation.equal_steps`` where its reference (the baseline)
    trains fewer epochs (None otherwise); a setting it cannot honour is one line."""
    from lie.config.load import selected_runs

    base = steps_reference(config, run)
    if base is None:
        return None
    epochs, theirs = r.integer("epochs"), _Reader(config, base).integer("epochs")
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


def _spec(config: Config, run: str) -> dict[str, Any]:
    """``experiments.<run>`` as written (a copy); an unknown run is one line naming the known ones."""
    return config.as_written("experiments", config.experiment(run).name)


def written_settings(config: Config, run: str) -> dict[str, Any]:
    """A run's keys as written: shared settings, its algorithm, then its own keys (a null of its own
    does not hide a shared value); plus ``run``. For the settings digest only: read ``RunSettings``."""
    spec = _spec(config, run)
    settings = config.as_written("training") or {}
    settings.update(config.as_written("algorithms", spec["algorithm"]) or {})
    for key, value in spec.items():
        if value is not None or key not in settings:
            settings[key] = value
    settings["run"] = run
    return settings


def reward_settings(config: Config, run: str) -> dict[str, Any]:
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


def train_engine(config: Config, run: str) -> str:
    """The run's own ``engine``, else ``engines.train`` (required)."""
    return _spec(config, run).get("engine") or config.engines.train


def _section(config: Config, name: str) -> dict[str, Any]:
    section = config.as_written(name)
    if not isinstance(section, dict):
        raise LieError(f"config: the {name}: section is missing")
    return section


class _Reader:
    """Typed reads of a run's merged keys, each error naming the key where the value was written."""

    def __init__(self, config: Config, run: str):
        spec = _spec(config, run)
        training = _section(config, "training")
        algorithms = _section(config, "algorithms")
        self.values: dict[str, Any] = {}
        self.where: dict[str, str] = {}
        for key, value in training.items():
            self.values[key], self.where[key] = value, f"training.{key}"
        algorithm = algorithms.get(str(spec.get("algorithm")))
        if not isinstance(algorithm, dict):
            raise LieError(
                f"config: key 'experiments.{run}.algorithm': {spec.get('algorithm')!r} is not one of "
                f"{sorted(algorithms)}"
            )
        for key, value in algorithm.items():
            self.values[key], self.where[key] = value, f"algorithms.{spec['algorithm']}.{key}"
        for key, value in spec.items():
            if value is not None or key not in self.values:
                self.values[key], self.where[key] = value, f"experiments.{run}.{key}"

    def _name(self, key: str) -> str:
        return self.where.get(key, f"training.{key}")

    def bad(self, key: str, what: str) -> LieError:
        return LieError(f"config: key '{self._name(key)}': {self.values.get(key)!r} is not {what}")

    def raw(self, key: str, optional: bool = False) -> Any:
        if key not in self.values:
            if optional:
                return None
            raise LieError(f"config: key '{self._name(key)}' is missing")
        return self.values[key]

    def integer(self, key: str) -> int:
        value = self.raw(key)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.bad(key, "an integer")
        return value

    def integer_or_none(self, key: str, optional: bool = False) -> int | None:
        """An integer, or None where the key is null (or, ``optional``, absent)."""
        if self.raw(key, optional) is None:
            return None
        return self.integer(key)

    def number(self, key: str) -> float:
        value = self.raw(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.bad(key, "a number")
        return float(value)

    def flag(self, key: str, optional: bool = False) -> bool:
        value = self.raw(key, optional)
        if value is None and optional:
            return False
        if not isinstance(value, bool):
            raise self.bad(key, "true or false")
        return value

    def text(self, key: str) -> str:
        value = self.raw(key)
        if not isinstance(value, str):
            raise self.bad(key, "a string")
        return value

    def text_or_none(self, key: str, optional: bool = False) -> str | None:
        """A string, or None where the key is null (or, ``optional``, absent)."""
        if self.raw(key, optional) is None:
            return None
        return self.text(key)

    def names(self, key: str) -> tuple[str, ...]:
        value = self.raw(key)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.bad(key, "a list of names")
        return tuple(value)

    def eval_step(self) -> str | int:
        value = self.raw("eval_step")
        if value in (FINAL, BEST_VAL) or (
            isinstance(value, int) and not isinstance(value, bool) and value >= 1
        ):
            return value
        raise self.bad("eval_step", f"{FINAL}, {BEST_VAL} or a step (an integer from 1)")


@dataclass(frozen=True)
class RunSettings:
    """One run's settings (module docstring); ``RunSettings.of(config, run)`` builds it."""

    run: str
    engine: str  # verl | trl: the run's own engine, else engines.train
    model: str
    data: str
    algorithm: str
    lie: str  # on | off | length-only
    parent: str | None  # the run whose final model this one starts from (continual stage)
    group: str | None
    epochs: int
    seed: int | None  # the run's, else training.seed; None: neither is written (verl's recipe: 1, TRL: 0)
    # training: (a run's own max_response_length and max_steps over the shared ones)
    lr: float
    lr_warmup_steps: int
    weight_decay: float
    grad_clip: float
    train_batch_size: int
    rollout_n: int
    ppo_mini_batch_size: int
    ppo_epochs: int
    max_prompt_length: int
    max_response_length: int
    temperature: float
    top_p: float
    clip_ratio_c: float
    entropy_coeff: float
    use_dynamic_bsz: bool
    nnodes: int
    n_gpus_per_node: int
    save_freq: int
    test_freq: int
    val_temperature: float
    val_sets: tuple[str, ...]
    eval_step: str | int  # final | best_val | a step | an EpochStep (evaluation.equal_steps)
    logger: tuple[str, ...]
    max_steps: int | None  # None: the epochs decide
    keep_checkpoints: int | None  # None: all (so for an EpochStep: its step is known at the end only)
    walltime_min: int
    retries: int
    world_size_change: str  # stop | restart (optional key; stop when absent)
    threads: int | None  # optional
    # optional (false): every rollout runs to max_response_length, EOS or not (verl's rollout.ignore_eos);
    # the preflight's trial sets it, so that it loads a step as the shape's longest responses do
    rollout_ignore_eos: bool
    # optional (transformers): the server of a verl run's rollouts on the CPU backend; vllm: verl's own
    # vLLM server on vLLM's CPU build (lie.engines.verl.cpu.vllm_rollout). GPUs always sample with vLLM.
    cpu_rollout: str
    # optional (vllm): the server of a verl run's rollouts on GPUs; transformers: lie's transformers server
    # on the CPU beside them (a check where vLLM is not installed; lie.engines.verl.cpu.rollout_plugin)
    gpu_rollout: str
    # the algorithm's loss (algorithms.<name>)
    loss_mode: str
    clip_ratio_low: float
    clip_ratio_high: float
    loss_agg_mode: str
    reward: RewardConfig  # the reward knobs the run trains with (its LIE mode decides the terms)

    @classmethod
    def of(cls, config: Config, run: str) -> RunSettings:
        r = _Reader(config, run)
        world = r.text_or_none("world_size_change", optional=True) or "stop"
        if world not in WORLD_SIZE_CHANGES:
            raise r.bad("world_size_change", f"one of {WORLD_SIZE_CHANGES}")
        knobs = reward_settings(config, run)
        equal = _equal_steps(config, run, r)  # evaluation.equal_steps: its step is known once it has run
        if not isinstance(knobs["extra_tokens"], int) or isinstance(knobs["extra_tokens"], bool):
            raise r.bad("extra_tokens", "an integer")
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
            seed=r.integer_or_none("seed", optional=True),
            lr=r.number("lr"),
            lr_warmup_steps=r.integer("lr_warmup_steps"),
            weight_decay=r.number("weight_decay"),
            grad_clip=r.number("grad_clip"),
            train_batch_size=r.integer("train_batch_size"),
            rollout_n=r.integer("rollout_n"),
            ppo_mini_batch_size=r.integer("ppo_mini_batch_size"),
            ppo_epochs=r.integer("ppo_epochs"),
            max_prompt_length=r.integer("max_prompt_length"),
            max_response_length=r.integer("max_response_length"),
            temperature=r.number("temperature"),
            top_p=r.number("top_p"),
            clip_ratio_c=r.number("clip_ratio_c"),
            entropy_coeff=r.number("entropy_coeff"),
            use_dynamic_bsz=r.flag("use_dynamic_bsz"),
            nnodes=r.integer("nnodes"),
            n_gpus_per_node=r.integer("n_gpus_per_node"),
            save_freq=r.integer("save_freq"),
            test_freq=r.integer("test_freq"),
            val_temperature=r.number("val_temperature"),
            val_sets=r.names("val_sets"),
            eval_step=equal or r.eval_step(),
            logger=r.names("logger"),
            max_steps=r.integer_or_none("max_steps"),
            keep_checkpoints=None if equal else r.integer_or_none("keep_checkpoints"),
            walltime_min=r.integer("walltime_min"),
            retries=r.integer("retries"),
            world_size_change=world,
            threads=r.integer_or_none("threads", optional=True),
            rollout_ignore_eos=r.flag("rollout_ignore_eos", optional=True),
            cpu_rollout=r.text_or_none("cpu_rollout", optional=True) or "transformers",
            gpu_rollout=r.text_or_none("gpu_rollout", optional=True) or "vllm",
            loss_mode=r.text("loss_mode"),
            clip_ratio_low=r.number("clip_ratio_low"),
            clip_ratio_high=r.number("clip_ratio_high"),
            loss_agg_mode=r.text("loss_agg_mode"),
            reward=RewardConfig.from_mapping(knobs, source=f"config: run {run}'s reward"),
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
