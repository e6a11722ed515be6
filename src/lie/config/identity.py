"""What a run *is*: the settings that change what it learns, apart from how it is executed.

A change here must retrain (Snakemake's ``params`` of the train rule, and the settings hash kept
beside a run's checkpoints so that a rerun never resumes from checkpoints of other settings); a
change of an execution setting (nodes, GPUs per node, loggers, checkpoint cadence and retention,
validation) must not (though verl resumes its FSDP shards only at their own world size: see
``lie.engines.verl.overrides.prepare_resume``). The reward knobs count only where the run uses
them: a LIE-off baseline ignores every length and redundancy knob, so editing ``reward.beta`` does
not retrain it.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from lie.config.settings import reward_settings, train_engine, written_settings

if TYPE_CHECKING:
    from lie.config.typed import Config

# How a run executes or what it reports, not what it learns.
EXECUTION_KEYS = frozenset(
    {
        "run",
        "nnodes",
        "n_gpus_per_node",
        "logger",
        "save_freq",
        "keep_checkpoints",
        "test_freq",
        "val_sets",
        "val_temperature",
        "eval_step",
        "walltime_min",
        "retries",
        "world_size_change",
    }
)
REFLEN_EXECUTION_KEYS = frozenset({"shard_size"})  # how often reflen saves its work, not what it computes
LENGTH_KEYS = ("eta", "extra_tokens", "tolerance", "variant", "delta_l")
REDUNDANCY_KEYS = ("theta", "theta_inclusive", "beta", "red_on_correct")


def effective_reward(config: Config, run: str) -> dict[str, Any]:
    """The reward knobs ``run`` actually uses: those of a term it has turned off are dropped."""
    knobs = reward_settings(config, run)
    drop: set[str] = set()
    if not knobs["length_term"]:
        drop.update(LENGTH_KEYS)
    if not knobs["redundancy_term"]:
        drop.update(REDUNDANCY_KEYS)
    return {k: v for k, v in knobs.items() if k not in drop}


def learning_settings(config: Config, run: str) -> dict[str, Any]:
    """A run's settings as written without the execution ones, plus its engine and effective reward."""
    settings = written_settings(config, run)
    kept = {k: v for k, v in settings.items() if k not in EXECUTION_KEYS}
    kept["engine"] = train_engine(config, run)
    kept["reward"] = effective_reward(config, run)
    return kept


def reflen_settings(config: Config) -> dict[str, Any]:
    """``reflen:`` without its execution settings: what the reference lengths depend on."""
    return {k: v for k, v in (config.as_written("reflen") or {}).items() if k not in REFLEN_EXECUTION_KEYS}


def written_part(config: Config, *path: str, only: tuple[str, ...] = (), leave: tuple[str, ...] = ()) -> Any:
    """The config at ``path`` as written (its keys ``only``, when given, less ``leave``; None if absent):
    what a job's Snakemake params hold, so that a change of it, and nothing else, reruns the job."""
    value = config.as_written(*path)
    if isinstance(value, dict) and (only or leave):
        value = {k: v for k, v in value.items() if (not only or k in only) and k not in leave}
    return value


def written_entry(config: Config, section: str, name: str) -> dict[str, Any]:
    """``models.<name>`` or a data set's entry as written: what a data or base-model job depends on
    (Snakemake's params; a change of it reruns the job)."""
    if section == "datasets":
        return config.as_written("datasets", config.dataset(name).group, name)
    return config.as_written(section, config.model(name).name)


def settings_hash(config: Config, run: str) -> str:
    """A digest of everything a run's checkpoints depend on: its learning settings, its base model,
    its data set and reference lengths, the prompt template, and its parent's digest."""
    spec = config.experiment(run)
    data = config.dataset(spec.data)
    identity = {
        "settings": learning_settings(config, run),
        "model": written_entry(config, "models", spec.model),
        "data": written_entry(config, "datasets", spec.data),
        "reflen": reflen_settings(config),
        "prompt": (config.as_written("prompt") or {}).get(data.kind),
        "parent": settings_hash(config, spec.parent) if spec.parent else None,
    }
    text = json.dumps(identity, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
