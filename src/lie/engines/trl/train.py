"""A run of config.yaml on TRL's GRPOTrainer: the CPU (smoke, study, tests) or one GPU.

The same settings as the verl path, mapped onto ``GRPOConfig`` (SPEC 2 and 6):
GSPO is ``importance_sampling_level="sequence"`` with ``loss_type="grpo"`` (verl's
``seq-mean-token-mean``), GRPO is token level with ``loss_type="dapo"`` (verl's ``token-mean``);
clip ratios are ``epsilon``/``epsilon_high``, ``clip_ratio_c`` is ``delta`` (dual clip), no KL
(``beta=0``), ``rollout_n`` is ``num_generations``. One verl step (``train_batch_size`` prompts,
updated in mini-batches of ``ppo_mini_batch_size``) is ``steps_per_generation`` optimizer steps.

The reward goes through the same core (``lie.core.reward.score``) with the completion token ids; metrics
and rollouts land in the layout of ``lie.formats.runs`` with verl's metric names, so that everything
downstream reads both engines alike. Checkpoints resume: a killed run continues from its last one.
"""

from __future__ import annotations

import json
import logging
import math
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lie.config import grading_limits
from lie.config.identity import settings_hash
from lie.config.layout import Layout
from lie.config.settings import FINAL, RunSettings
from lie.config.typed import Config
from lie.core.errors import LieError
from lie.core.reward import RewardConfig
from lie.engines.generation import check_finite, load_model, load_tokenizer
from lie.engines.rewarding import Rewarder, Rollout
from lie.formats.jsonl import share_tree
from lie.formats.model_folder import check_model_folder, failed_file, write_failure
from lie.formats.outputs import seal, seal_problem
from lie.formats.prompts import prompt_token_ids
from lie.formats.rows import answer_of, read_rows
from lie.formats.runs import (
    RunDir,
    append_metrics,
    append_rollouts,
    inputs_digest,
    rollout_record,
    write_final,
    write_json,
)

log = logging.getLogger(__name__)

# TRL's metric names -> verl's (the shared schema); the rest are kept under "trl/".
METRIC_NAMES = {
    "completions/mean_length": "response_length/mean",
    "completions/max_length": "response_length/max",
    "completions/min_length": "response_length/min",
    "completions/clipped_ratio": "response_length/clip_ratio",
    "reward": "critic/score/mean",
    "entropy": "actor/entropy",
    "grad_norm": "actor/grad_norm",
    "learning_rate": "actor/lr",
    "loss": "actor/pg_loss",
    "clip_ratio/region_mean": "actor/pg_clipfrac",
}


@dataclass(frozen=True)
class Schedule:
    """verl's step structure in TRL terms."""

    steps_per_generation: int  # optimizer updates per rollout batch (train / mini batch)
    iterations: int  # PPO epochs over one rollout batch
    rollout_steps: int  # verl's training steps

    @property
    def updates_per_step(self) -> int:
        return self.steps_per_generation * self.iterations

    @property
    def max_updates(self) -> int:
        return self.rollout_steps * self.updates_per_step

    def rollout_step(self, global_step: int) -> int:
        """The verl step that optimizer step ``global_step`` (completed updates) belongs to, from 1."""
        return global_step // self.updates_per_step + 1


def schedule(s: RunSettings, num_prompts: int) -> Schedule:
    batch, mini = s.train_batch_size, s.ppo_mini_batch_size
    if batch % mini:
        raise LieError(
            f"training.train_batch_size ({batch}) must be a multiple of ppo_mini_batch_size ({mini})"
        )
    if num_prompts < batch:
        raise LieError(f"the training set has {num_prompts} prompts, fewer than train_batch_size {batch}")
    steps = s.max_steps or s.epochs * (num_prompts // batch)
    return Schedule(batch // mini, s.ppo_epochs, steps)


def load_rows(
    path: str | Path, max_prompt_tokens: int, tokenizer: Any, enable_thinking: bool | None
) -> list[dict]:
    """Training rows of a ``lie reflen`` parquet file (``lie.formats.rows.read_rows``), flattened for
    TRL: the prompt rendered and left-cut, the row's reward fields kept as JSON for :class:`LIEReward`
    (what ``lie.engines.rewarding.Rollout.of`` reads, as verl's manager does on the same row)."""
    rows = []
    for i, row in enumerate(read_rows(path, ("prompt", "reward_model"))):
        where = f"{path} row {i}"
        answer_of(row, where)  # a bad row stops the run before training starts
        ids = prompt_token_ids(tokenizer, row["prompt"], enable_thinking, max_prompt_tokens)
        extra = row.get("extra_info") or {}
        index = extra.get("index")
        rows.append(
            {
                "prompt": tokenizer.decode(ids, skip_special_tokens=False),
                "row": json.dumps({k: row.get(k) for k in REWARD_COLUMNS}),
                "where": where,
                "prompt_index": index if isinstance(index, int) and not isinstance(index, bool) else i,
            }
        )
    return rows


REWARD_COLUMNS = ("data_source", "ability", "reward_model", "extra_info")  # what a reward reads of a row


class LIEReward:
    """TRL reward function: grade each completion, then R = R_acc + R_len + R_red, by the one
    grade-then-score step of both engines (``lie.engines.rewarding.Rewarder``)."""

    __name__ = "lie"

    def __init__(
        self,
        reward_config: RewardConfig,
        tokenizer: Any,
        rundir: RunDir,
        schedule: Schedule,
        rewarder: Rewarder,
    ):
        self.config = reward_config
        self.tokenizer = tokenizer
        self.rundir = rundir
        self.schedule = schedule
        self.rewarder = rewarder

    def __call__(self, prompts, completions, completion_ids, row, where, prompt_index, **kw):
        state = kw.get("trainer_state")
        step = self.schedule.rollout_step(state.global_step) if state is not None else 0
        samples = [
            Rollout.of(
                json.loads(row[i]), self.tokenizer.decode(list(ids), skip_special_tokens=True), ids, where[i]
            )
            for i, ids in enumerate(completion_ids)
        ]
        records, rewards = [], []
        for i, (sample, rewarded) in enumerate(zip(samples, self.rewarder.reward_many(samples, self.config))):
            result = rewarded.breakdown
            rewards.append(result.reward)
            group = f"{step}-{prompt_index[i]}"
            records.append(
                rollout_record(
                    step,
                    group,
                    f"{group}-{i}",
                    prompt_index[i],
                    sample.text,
                    result,
                    len(sample.token_ids),
                    sample.answer.ref_len,
                    rewarded.status,
                )  # fmt: skip
            )
        append_rollouts(self.rundir.rollouts_dir, step, "trl", records)
        log_metric = kw.get("log_metric")
        if log_metric is not None and records:
            for key in ("acc", "r_len", "r_red", "c_context", "r_context"):
                log_metric(f"lie/{key}", sum(r[key] for r in records) / len(records))
        return rewards


def _metrics_callback(path: Path, sched: Schedule):
    from transformers import TrainerCallback

    class JsonlMetrics(TrainerCallback):
        """verl's file-logger format: one ``{"step": N, "data": {...}}`` line per log call."""

        def on_log(self, args, state, control, logs=None, **kwargs):
            if not state.is_world_process_zero or not logs or "loss" not in logs:
                return
            data = {
                METRIC_NAMES.get(k, k if k.startswith("lie/") else f"trl/{k}"): v for k, v in logs.items()
            }
            append_metrics(path, sched.rollout_step(max(state.global_step - 1, 0)), data)

    return JsonlMetrics()


def _stop_callback(stop_after: int, sched: Schedule):
    from transformers import TrainerCallback

    class StopAfter(TrainerCallback):
        """Stop (with a checkpoint) once ``stop_after`` verl steps are done; a rerun resumes."""

        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step >= stop_after * sched.updates_per_step:
                control.should_save = True
                control.should_training_stop = True

    return StopAfter()


def _trainer_class():
    from trl import GRPOTrainer

    from lie.engines.trl.sampler import EpochSampler

    class LIEGRPOTrainer(GRPOTrainer):
        """TRL's trainer with the prompt order of epoch e drawn again on resume (``sampler.py``)."""

        def _get_train_sampler(self, dataset=None):
            return EpochSampler(super()._get_train_sampler(dataset))

        def _save_checkpoint(self, model, trial):
            try:
                return super()._save_checkpoint(model, trial)
            except Exception as exc:  # torch and safetensors wrap a full disk in their own errors
                folder = Path(self.args.output_dir) / f"checkpoint-{self.state.global_step}"
                raise save_failure(exc, folder) from exc

    return LIEGRPOTrainer


def save_failure(exc: BaseException, checkpoint: Path) -> LieError:
    """A checkpoint that could not be written, as one line naming the file; it stays unsealed, so no
    rerun takes it for complete (:func:`seal_checkpoint`), and the run resumes from the one before."""
    reason = write_failure(exc)
    if reason is None:
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        reason = f"{type(exc).__name__}: {first}; is the disk full?"
    return LieError(
        f"cannot write {failed_file(exc, checkpoint)} ({reason}); free space (or choose another outdir) "
        "and rerun `lie train`: it resumes from the last complete checkpoint"
    )


SEAL = "lie_complete.json"  # in checkpoint-N: written last, every file's size and digest


def seal_checkpoint(path: Path) -> None:
    """The Trainer finished writing ``checkpoint-N``: give its files the umask's modes, then seal them."""
    share_tree(path)  # safetensors writes model.safetensors 0600
    seal(path / SEAL, [p for p in path.rglob("*") if p.is_file() and p.name != SEAL])


def checkpoint_problem(path: Path) -> str | None:
    """Why ``checkpoint-N`` cannot be resumed or exported (torn by a kill, truncated since), else None."""
    if not (path / "trainer_state.json").is_file():
        return "no trainer_state.json"
    return seal_problem(path / SEAL)


def _seal_callback():
    from transformers import TrainerCallback

    class SealCheckpoint(TrainerCallback):
        """After the Trainer saved (and rotated) a checkpoint: seal it (:func:`seal_checkpoint`)."""

        def on_save(self, args, state, control, **kwargs):
            path = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            if state.is_world_process_zero and path.is_dir():
                seal_checkpoint(path)

    return SealCheckpoint()


def latest_complete_checkpoint(rundir: RunDir) -> Path | None:
    """The newest ``checkpoint-N`` whose seal verifies (:func:`checkpoint_problem`); a newer one
    that does not (torn by a kill while saving, or truncated since) is set aside."""
    found = []
    for path in rundir.checkpoints.glob("checkpoint-*") if rundir.checkpoints.is_dir() else []:
        number = path.name.rsplit("-", 1)[1]
        if path.is_dir() and number.isdigit():
            found.append((int(number), path))
    complete = None
    for _, path in sorted(found, reverse=True):
        problem = checkpoint_problem(path) if complete is None else None
        if problem is None:
            complete = complete or path
        else:
            rundir.set_aside(path, problem)
    return complete


def grpo_config(s: RunSettings, sched: Schedule, output_dir: Path, use_cpu: bool) -> Any:
    """TRL's ``GRPOConfig`` of a run's settings (module docstring); an unset seed is 0."""
    from trl import GRPOConfig

    gspo = s.loss_mode == "gspo"
    agg = s.loss_agg_mode
    loss_type = {"token-mean": "dapo", "seq-mean-token-mean": "grpo"}.get(agg)
    if loss_type is None:
        raise LieError(
            f"loss_agg_mode {agg!r} has no TRL equivalent here; use token-mean or seq-mean-token-mean"
        )
    save = s.save_freq
    return GRPOConfig(
        output_dir=str(output_dir),
        use_cpu=use_cpu,
        bf16=False,
        fp16=False,
        gradient_checkpointing=False,
        report_to=[name for name in s.logger if name in ("wandb", "tensorboard")],
        logging_steps=1,
        disable_tqdm=False,
        seed=0 if s.seed is None else s.seed,
        learning_rate=s.lr,
        lr_scheduler_type="constant_with_warmup",
        warmup_steps=s.lr_warmup_steps * sched.updates_per_step,
        weight_decay=s.weight_decay,
        max_grad_norm=s.grad_clip,
        per_device_train_batch_size=s.ppo_mini_batch_size * s.rollout_n,
        gradient_accumulation_steps=1,
        steps_per_generation=sched.steps_per_generation,
        num_iterations=sched.iterations,
        num_generations=s.rollout_n,
        max_steps=sched.max_updates,
        max_completion_length=s.max_response_length,
        temperature=s.temperature,
        top_p=s.top_p,
        top_k=0,
        beta=0.0,
        epsilon=s.clip_ratio_low,
        epsilon_high=s.clip_ratio_high,
        delta=s.clip_ratio_c,
        importance_sampling_level="sequence" if gspo else "token",
        loss_type=loss_type,
        scale_rewards="group",
        save_strategy="steps" if save > 0 else "no",
        save_steps=max(save, 1) * sched.updates_per_step,
        # keep the last few; a fixed eval_step must survive, so then everything is kept
        save_total_limit=s.keep_checkpoints if s.final_eval else None,
        remove_unused_columns=False,
    )


def train(
    config: Config,
    s: RunSettings,
    train_file: str | Path,
    model_path: str | Path,
    stop_after: int | None = None,
    threads: int | None = None,
) -> Path:
    """Train the run of settings ``s`` with TRL; return the run folder. Resumes from the latest checkpoint."""
    import torch
    from datasets import Dataset

    if threads:
        torch.set_num_threads(threads)
    run = s.run
    rundir = Layout(config).run_dir(run)
    model_entry = config.model(s.model)
    trust = config.trust_remote_code
    check_model_folder(model_path)  # before the run folder is claimed: one line, nothing written
    tokenizer = load_tokenizer(str(model_path), trust_remote_code=trust, chat=True)
    rows = load_rows(train_file, s.max_prompt_length, tokenizer, model_entry.enable_thinking)
    sched = schedule(s, len(rows))

    rundir.claim(settings_hash(config, run))
    rundir.claim_inputs(inputs_digest(train_file, model_path))
    output_dir = rundir.checkpoints
    last = latest_complete_checkpoint(rundir)
    done = 0
    if last:
        done = json.loads((last / "trainer_state.json").read_text())["global_step"]
    if done >= sched.max_updates:
        log.info("%s: already trained (%d updates)", run, done)
    else:
        if last:
            log.info("%s: resuming from %s (step %d)", run, last, sched.rollout_step(done - 1))
        rundir.trim_rollouts_after(done // sched.updates_per_step)
        args = grpo_config(s, sched, output_dir, use_cpu=not torch.cuda.is_available())
        write_json(
            rundir.run_json,
            {"engine": "trl", "run": run, "settings": s.as_dict(), "grpo_config": args.to_dict()},
        )
        model = load_model(str(model_path), trust, dtype=torch.float32)
        check_finite(model, str(model_path), tokenizer.eos_token_id or 0)
        callbacks = [_metrics_callback(rundir.new_metrics_file(), sched), _seal_callback()]
        if stop_after:
            callbacks.append(_stop_callback(stop_after, sched))
        with Rewarder(*grading_limits(config)) as rewarder:
            trainer = _trainer_class()(
                model=model,
                reward_funcs=LIEReward(s.reward, tokenizer, rundir, sched, rewarder),
                args=args,
                train_dataset=Dataset.from_list(rows),
                processing_class=tokenizer,
                callbacks=callbacks,
            )
            trainer.train(resume_from_checkpoint=str(last) if last else None)
        done = trainer.state.global_step
        if not (output_dir / f"checkpoint-{done}").exists():
            trainer._save_checkpoint(trainer.model, trial=None)  # the final state, always kept
            seal_checkpoint(output_dir / f"checkpoint-{done}")
    if done >= sched.max_updates:
        _write_final(rundir, s.eval_step, sched, done)
    return rundir.root


def _write_final(rundir: RunDir, eval_step: str | int, sched: Schedule, done: int) -> None:
    updates = done if eval_step == FINAL else int(eval_step) * sched.updates_per_step
    checkpoint = rundir.checkpoints / f"checkpoint-{updates}"
    if not checkpoint.exists():
        raise LieError(
            f"{rundir.run}: no checkpoint for training.eval_step={eval_step} ({checkpoint}); "
            "choose a step that save_freq divides"
        )
    write_final(rundir, "trl", checkpoint, math.ceil(updates / sched.updates_per_step))


def export_model(checkpoint: Path, folder: Path) -> None:
    """A TRL checkpoint is already in Hugging Face format: copy its model and tokenizer files into
    ``folder``, once its seal verifies (a truncated ``model.safetensors`` is refused)."""
    problem = checkpoint_problem(checkpoint)
    if problem:
        raise LieError(f"{checkpoint} is incomplete ({problem}); rerun `lie train` to repair it")
    keep = (".json", ".safetensors", ".txt", ".model", ".jinja")
    skip = {"trainer_state.json", "training_args.bin", "rng_state.pth", "scheduler.pt", "optimizer.pt", SEAL}
    for path in checkpoint.iterdir():
        if path.is_file() and path.suffix in keep and path.name not in skip:
            try:
                shutil.copy2(path, folder / path.name)
            except OSError as exc:  # a full disk: the folder stays partial, never renamed into place
                reason = exc.strerror or str(exc)
                raise LieError(f"cannot write {folder / path.name}: {reason}; free space and rerun") from None
