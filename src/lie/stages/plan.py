"""A compute plan before anyone books a cluster: steps, rollout tokens and GPU-hours of each run.

The estimate is deliberately simple and every figure in it is printed:

- steps = epochs x floor(prompts / train_batch_size) (or ``max_steps``); prompts from the
  training file when it exists, else its ``expected_rows`` in config;
- rollout tokens a step = train_batch_size x rollout_n x mean response length, the mean taken
  from the reference lengths when ``lie reflen`` has run (``avg_response_len``, capped at the
  response limit), else ``RESPONSE_FRACTION`` of the limit;
- generation time = rollout tokens / (``GEN_TOKENS_PER_S_4B`` x 4 / params in billions) per GPU:
  vLLM decoding is memory-bound, so throughput falls about linearly with model size;
- update time = (prompt + response tokens) x ``TRAIN_FLOPS_PER_PARAM`` x params / (``MFU`` x
  ``PEAK_FLOPS``) per GPU: forward, backward, activation recomputation and the old-log-prob pass.

- validation = every ``training.test_freq`` steps and at the last, the prompts of ``training.val_sets``
  once each to the same mean length, at the generation rate: in the GPU-hours, and its own column;
- disk = kept checkpoints x ``CHECKPOINT_BYTES_PER_PARAM`` x params (verl's FSDP checkpoint: fp32
  weights and Adam's two moments), kept = min(``training.keep_checkpoints``, saves of the run) for
  ``eval_step: final``; for ``best_val`` or a fixed step every save (verl prunes none within a launch:
  the chosen checkpoint must survive, and with ``best_val`` every save step is also a validation step at
  the paper's 50 and 10), so the disk is that of every save;
- dumps = the samples the run writes as text: its rollouts (``runs/<run>/rollouts/``, every training
  sample) and verl's validation generations (``validation/``), ``DUMP_BYTES_PER_TOKEN`` a token plus
  ``DUMP_BYTES_PER_RECORD`` each;
- jobs = wall-clock hours / ``training.walltime_min``: the Slurm jobs a run needs, one after another,
  each resuming from the last checkpoint; more than ``training.retries`` + 1 is flagged.

The constants are for H100 SXM GPUs with bf16 (PEAK 989 TFLOP/s dense); override them on the
command line when your own measurements differ (``lie plan --gen-tps ... --mfu ...``).
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from typing import Any

from lie import config as cfgmod
from lie.config.layout import Layout
from lie.config.settings import RunSettings
from lie.config.typed import Config
from lie.core.errors import LieError
from lie.formats.rows import read_rows, row_count

GEN_TOKENS_PER_S_4B = 8000.0  # vLLM output tokens/s per H100 for a 4B model at high concurrency
PEAK_FLOPS = 989e12  # H100 SXM bf16 dense
MFU = 0.35  # model FLOP utilisation of FSDP training with gradient checkpointing and offload
TRAIN_FLOPS_PER_PARAM = 10.0  # 6 (fwd+bwd) + 2 (recompute) + 2 (old log-probs) per token
RESPONSE_FRACTION = 0.5  # mean response length / limit when no reference lengths exist yet
CHECKPOINT_BYTES_PER_PARAM = 12.0  # fp32 weights + Adam's two fp32 moments
DUMP_BYTES_PER_TOKEN = (
    4.0  # a response's text (Qwen3's tokenizer: ~4 characters a token of English and LaTeX)
)
DUMP_BYTES_PER_RECORD = 600.0  # a record's other fields (JSON keys, scores, ids; the prompt in verl's dump)


@dataclass(frozen=True)
class RunPlan:
    run: str
    params_b: float
    prompts: int  # 0: unknown until the data set is built
    steps: int
    mean_response: float
    rollout_tokens: float  # over the whole run
    gpus: int
    gpu_hours: float
    disk_gb: float = 0.0  # checkpoints kept on disk at the end of the run
    jobs: int = 1  # Slurm jobs of training.walltime_min needed, one after another
    attempts: int = 1  # training.retries + 1
    val_gpu_hours: float = 0.0  # in-training validation, part of gpu_hours
    dumps_gb: float = 0.0  # rollouts and validation generations as text
    kept: int = 0  # checkpoints on disk at the end
    saves: int = 0  # checkpoints the run writes


def params_billions(config: Config, model: str) -> float:
    """Model size from the hub id (``Qwen3-4B-Base`` -> 4.0); tiny models count as 0.001."""
    entry = config.model(model)
    if entry.tiny:
        return 0.001
    match = re.search(r"(\d+(?:\.\d+)?)B", entry.hf_id or entry.path or "")
    if not match:
        raise LieError(
            f"models.{model}: cannot read the model size from its id; pass --params {model}=<billions>"
        )
    return float(match.group(1))


def _prompts_and_length(config: Config, s: RunSettings, limit: int) -> tuple[int, float | None]:
    layout = Layout(config)
    reflen = layout.reflen_file(s.data, s.model)
    if reflen.exists():
        rows = [r["extra_info"] or {} for r in read_rows(reflen, ("extra_info",), only=True)]
        lengths = [min(float(r.get("avg_response_len") or 0), limit) for r in rows]
        return len(rows), sum(lengths) / max(len(lengths), 1)
    data = layout.dataset_file(s.data)
    if data.exists():
        return row_count(data), None
    spec = config.dataset(s.data)
    count = spec.expected_rows or spec.sample or (spec.synthetic or {}).get("count")
    if not count:
        return 0, None  # unknown until `lie data` has run
    return int(count), None


def verl_steps(prompts: int, batch: int, epochs: int, max_steps: int | None) -> int:
    """The steps verl 0.9.1's trainer runs (verl/trainer/ppo/v1/trainer_base.py: steps per epoch =
    prompts // train_batch_size, the last incomplete batch dropped; ``total_training_steps`` =
    ``max_steps`` or that x epochs; it stops at whichever of the two ends first)."""
    per_epoch = prompts // batch
    return min(max_steps, per_epoch * epochs) if max_steps is not None else per_epoch * epochs


def _rows_of(config: Config, name: str) -> int:
    """A data set's rows: its built file's, else the config's ``expected_rows`` (0: unknown)."""
    data = Layout(config).dataset_file(name)
    if data.exists():
        return row_count(data)
    spec = config.dataset(name)
    return int(spec.expected_rows or spec.sample or (spec.synthetic or {}).get("count") or 0)


def validations(steps: int, test_freq: int) -> int:
    """verl's in-training validations: at every ``test_freq``-th step and at the last."""
    if test_freq <= 0 or steps <= 0:
        return 0
    return steps // test_freq + (1 if steps % test_freq else 0)


def checkpoints(s: RunSettings, steps: int) -> tuple[int, int]:
    """The checkpoints a run saves (every ``save_freq``-th step and the last) and keeps at its end: the
    newest ``keep_checkpoints`` for ``eval_step: final``; every one otherwise (verl is told to prune none,
    so that the evaluated checkpoint survives: lie.engines.verl.overrides)."""
    if s.save_freq <= 0:
        return 1, 1
    saves = steps // s.save_freq + (1 if steps % s.save_freq else 0)
    return saves, min(saves, s.keep_checkpoints or saves) if s.final_eval else saves


def plan_run(config: Config, run: str, params: dict[str, float], gen_tps_4b: float, mfu: float) -> RunPlan:
    s = config.run(run)
    limit = s.max_response_length
    prompts, mean = _prompts_and_length(config, s, limit)
    mean = mean if mean is not None else RESPONSE_FRACTION * limit
    batch = s.train_batch_size
    steps = verl_steps(prompts, batch, s.epochs, s.max_steps)
    size = params.get(s.model) or params_billions(config, s.model)
    gpus = s.gpus
    gen_rate = gen_tps_4b * 4.0 / size * gpus  # tokens/s of the run's GPUs
    per_step_rollout = batch * s.rollout_n * mean
    gen_seconds = per_step_rollout / gen_rate
    trained = batch * s.rollout_n * (mean + 0.5 * s.max_prompt_length) * s.ppo_epochs
    train_seconds = trained * TRAIN_FLOPS_PER_PARAM * size * 1e9 / (mfu * PEAK_FLOPS * gpus)
    val_records = validations(steps, s.test_freq) * sum(_rows_of(config, name) for name in s.val_sets)
    val_hours = val_records * mean / gen_rate * gpus / 3600
    hours = steps * (gen_seconds + train_seconds) * gpus / 3600 + val_hours
    saves, kept = checkpoints(s, steps)
    disk = kept * CHECKPOINT_BYTES_PER_PARAM * size
    records = steps * batch * s.rollout_n + val_records
    dumps = records * (mean * DUMP_BYTES_PER_TOKEN + DUMP_BYTES_PER_RECORD) / 1e9
    jobs = max(1, math.ceil(hours / gpus * 60 / s.walltime_min))
    attempts = s.retries + 1
    return RunPlan(
        run, size, prompts, steps, mean, steps * per_step_rollout, gpus, hours, disk, jobs, attempts,
        val_hours, dumps, kept, saves,
    )  # fmt: skip


def plan(
    config: Config,
    params: dict[str, float] | None = None,
    gen_tps_4b: float = GEN_TOKENS_PER_S_4B,
    mfu: float = MFU,
) -> list[RunPlan]:
    return [plan_run(config, run, params or {}, gen_tps_4b, mfu) for run in cfgmod.selected_runs(config)]


def render(plans: list[RunPlan], gen_tps_4b: float, mfu: float) -> str:
    header = (f"{'run':44} {'model':>6} {'prompts':>8} {'steps':>6} {'mean L':>7} {'rollout tokens':>15} "
              f"{'GPUs':>5} {'GPU-h':>8} {'of it val':>9} {'ckpts':>5} {'disk GB':>8} {'dumps GB':>8} {'jobs':>5}")  # fmt: skip
    lines = [header, "-" * len(header)]
    known = [p for p in plans if p.prompts]
    for p in plans:
        if not p.prompts:
            lines.append(
                f"{p.run:44} {p.params_b:>5g}B {'?':>8}   (prompt count unknown: run `lie data` or set expected_rows)"
            )
            continue
        lines.append(
            f"{p.run:44} {p.params_b:>5g}B {p.prompts:>8} {p.steps:>6} {p.mean_response:>7.0f} "
            f"{p.rollout_tokens:>15.3e} {p.gpus:>5} {hours_text(p.gpu_hours):>8} {hours_text(p.val_gpu_hours):>9} "
            f"{p.kept:>5} {p.disk_gb:>8.0f} {p.dumps_gb:>8.1f} {p.jobs:>4}"
            + ("!" if p.jobs > p.attempts else " ")
        )
    total = sum(p.gpu_hours for p in known)
    unknown = [p.run for p in plans if not p.prompts]
    every_save = sum(p.saves * CHECKPOINT_BYTES_PER_PARAM * p.params_b for p in known)
    lines.append("-" * len(header))
    lines.append(f"{'total':44} {'':>6} {'':>8} {sum(p.steps for p in plans):>6} {'':>7} "
                 f"{sum(p.rollout_tokens for p in plans):>15.3e} {'':>5} {hours_text(total):>8} "
                 f"{hours_text(sum(p.val_gpu_hours for p in known)):>9} {'':>5} "
                 f"{sum(p.disk_gb for p in known):>8.0f} {sum(p.dumps_gb for p in known):>8.1f}")  # fmt: skip
    lines.append(
        f"\nAssumes {gen_tps_4b:g} generated tokens/s per GPU for a 4B model (scaled by 4/size), "
        f"training at {mfu:.0%} MFU of {PEAK_FLOPS / 1e12:.0f} TFLOP/s, {TRAIN_FLOPS_PER_PARAM:g} FLOPs per "
        "parameter and token. GPU-h include in-training validation (training.val_sets at every test_freq-th "
        "step and the last, to the same mean length: 'of it val'); evaluation (generation to 32k tokens) is "
        f"not included. {_node_hours(total)}. Disk: the checkpoints a run keeps at its end ('ckpts', "
        f"{CHECKPOINT_BYTES_PER_PARAM:g} bytes per parameter each): the newest training.keep_checkpoints with "
        f"eval_step final; every save with best_val or a fixed step ({every_save:,.0f} GB for these runs with "
        f"every save kept). Dumps: rollouts and validation generations as text (~{DUMP_BYTES_PER_TOKEN:g} bytes "
        "a token). Jobs: Slurm jobs of training.walltime_min one after another"
        + (
            "; ! marks runs that need more than training.retries + 1 jobs: raise retries or walltime_min."
            if any(p.jobs > p.attempts for p in known)
            else "."
        )
        + (
            f"\nThe prompt count of {len(unknown)} run(s) is unknown; left out of the total: {', '.join(unknown)}."
            if unknown
            else ""
        )
    )
    return "\n".join(lines)


def hours_text(hours: float) -> str:
    """GPU-hours to read: whole hours from 10 on, two significant digits below (a CPU run's 0.004 is not 0)."""
    return f"{hours:,.0f}" if hours >= 10 else f"{hours:.2g}"


def _node_hours(gpu_hours: float) -> str:
    return (
        f"4xH100 nodes: {gpu_hours / 4:,.3g} node-hours"
        if gpu_hours < 40
        else (f"4xH100 nodes: {math.ceil(gpu_hours / 4):,} node-hours")
    )


def plan_selected(
    config: Config,
    source: str,
    runs: list[str] | None = None,
    groups: list[str] | None = None,
    params: list[tuple[str, Any]] | None = None,
    gen_tps_4b: float = GEN_TOKENS_PER_S_4B,
    mfu: float = MFU,
) -> str:
    """``lie plan``: the table of :func:`render` for ``runs`` and the experiments of ``groups`` (else the
    config's runs), with model sizes of ``params`` (``MODEL=BILLIONS``); ``source``: the config's file."""
    selected = list(runs or [])
    for group in groups or []:
        members = [n for n, e in config.experiments.items() if e.group == group]
        if not members:
            raise LieError(f"--group {group}: no experiment of {source} has group: {group}")
        selected += [n for n in members if n not in selected]
    if selected:
        for name in selected:
            if name not in config.experiments:
                raise LieError(
                    f"{source} with --runs/--group: runs names {name!r}, which is not in experiments"
                )
        config = dataclasses.replace(config, runs=tuple(selected))  # the loaded config is left as it is
    sizes = {}
    for name, value in params or []:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise LieError(f"--params {name}={value!r}: expected a model size in billions of parameters")
        sizes[name] = float(value)
    if not 0 < mfu <= 1 or gen_tps_4b <= 0:
        raise LieError("--mfu must be in (0, 1] and --gen-tps > 0")
    return render(plan(config, sizes, gen_tps_4b, mfu), gen_tps_4b, mfu)
