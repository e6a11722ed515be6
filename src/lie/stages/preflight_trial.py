"""One training trial of the preflight (lie.stages.preflight): a 4-step verl run of one shape.

The trial is a run of its own config (written beside it): the user's config with one model (the
largest of the shape's runs on a GPU; a tiny one built here on a CPU), synthetic arithmetic
rows with reference lengths, and a run whose every rollout runs to the response limit
(``training.rollout_ignore_eos``: short arithmetic answers would leave the micro-batches nearly
empty), that saves at steps 2 and 4 and stops after 4. What it yields, read at step 3 (warm, and
without a save inside its timer): the run's throughput and memory (verl's ``perf/*`` metrics),
projected to the shape's runs as ``lie plan`` does; the reward manager's time for one step's
samples against the step's time; then a resume from step 2's checkpoint, ``lie merge``, and one
short generation with vLLM.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lie import config as cfgmod
from lie.config import grading_limits
from lie.config.layout import Layout
from lie.config.typed import Config
from lie.core.errors import LieError
from lie.engines.rewarding import Rewarder, Rollout
from lie.engines.verl import checkpoints as verl_checkpoints
from lie.engines.verl.overrides import COMPLETED
from lie.formats.outputs import check_output_folder, files_under, record_of, record_problem, write_record
from lie.formats.rows import Item, make_row, row_schema, to_table, write_table
from lie.formats.runs import read_metrics, read_rollouts
from lie.stages import plan as planmod
from lie.stages.preflight_shapes import Check, Shape, trial_model
from lie.stages.tiny import build_tiny
from lie.tasks import arithmetic

log = logging.getLogger(__name__)

REWARD_SHARE_MAX = 0.25  # the reward manager above this share of a step holds the GPUs up
# A trial's steps: verl saves at steps 2 (the resume's start) and 4 (the last); step 3, past the first
# step's warm-up, saves nothing and is the step the throughput, memory and reward rows read.
TRIAL_STEPS = 4
TRIAL_SAVE_FREQ = 2
TIMED_STEP = 3
RUN = "preflight"
# vLLM's CPU engine as docs/evaluation.md runs it (config.yaml's engines.vllm_cpu, where present, wins):
# 1 GiB of KV cache, the engine in this process, one thread, no torch.compile, float32, eager.
VLLM_CPU: dict[str, Any] = {
    "venv": ".venv-vllm",
    "env": {"VLLM_CPU_KVCACHE_SPACE": 1, "VLLM_ENABLE_V1_MULTIPROCESSING": 0, "OMP_NUM_THREADS": 1,
            "TORCH_COMPILE_DISABLE": 1},
    "engine_args": {"dtype": "float32", "enforce_eager": "true"},
}  # fmt: skip
# On a CPU only the sizes that leave verl's control flow as it is shrink: the lengths, the model, the
# samples per prompt. The ranks (one per GPU of the shape's node), batches, epochs and steps stay.
CPU_SHAPE = {"max_prompt_length": 64, "max_response_length": 24, "rollout_n": 4}
PROMPTS_PER_GPU = 2  # a step's prompts per GPU: few, at the real lengths (memory depends on the lengths)


def trial_batch(gpus_per_node: int) -> int:
    """A trial step's prompts: PROMPTS_PER_GPU for each GPU (rank) of the node."""
    return PROMPTS_PER_GPU * gpus_per_node


def trial_rows(batch: int) -> int:
    """Training rows for TRIAL_STEPS steps of ``batch`` prompts in one epoch: verl's trainer drops an
    incomplete batch and stops at the end of its epochs even before ``total_training_steps``
    (lie.stages.plan.verl_steps), so fewer rows cut the trial short (16 rows gave 2 steps at 4 GPUs)."""
    return TRIAL_STEPS * batch


def _lie(
    args: list[str],
    log_file: Path,
    python: str = sys.executable,
    env: dict[str, str] | None = None,
    timeout: int = 1800,
) -> None:
    """A ``lie`` command as the pipeline runs it (its own process), its whole output (stdout and
    stderr, interleaved) kept in ``log_file``; a failure is one line that names the log."""
    full_env = {**os.environ, **(env or {})}
    cmd = [python, "-m", "lie", *args]
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with open(log_file, "w", encoding="utf-8") as out:
        out.write(f"$ {shlex.join(cmd)}\n")
        out.flush()
        try:
            proc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, timeout=timeout, env=full_env)
        except subprocess.TimeoutExpired:
            raise LieError(f"lie {args[0]} ran past {timeout} s (log: {log_file})") from None
    if proc.returncode != 0:
        text = log_file.read_text(encoding="utf-8", errors="replace")
        lines = [x for x in text.splitlines()[1:] if x.strip()] or [f"exit {proc.returncode}"]
        ours = [x for x in lines if x.startswith("lie ")]  # lie's own one-line error, when it wrote one
        raise LieError(f"lie {args[0]} failed: {(ours or lines)[-1]} (log: {log_file})")


def _rows(config: Config, name: str, count: int, seed: int, ref_len: int | None) -> list[dict]:
    """Arithmetic problems in verl's row format, with ``L_ref`` when given (training rows)."""
    rows = []
    for i, problem in enumerate(arithmetic.generate(count, seed, 1, 3)):
        row = make_row(
            name, "math", "train", i, Item(problem.question(), str(problem.answer)), config.prompt.math
        )
        if ref_len is not None:
            row["reward_model"]["num_tokens"] = ref_len
        rows.append(row)
    return rows


def _write_rows(rows: list[dict], path: Path) -> str:
    """The trial's rows as ``lie data`` writes them: verl's row schema, atomically (formats.rows)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    reflen = any("num_tokens" in row["reward_model"] for row in rows)
    write_table(to_table(rows, {"command": "lie preflight"}, row_schema(reflen)), path)
    return str(path.resolve())


def _model(config: Config, shape: Shape, root: Path, gpu: bool) -> tuple[str, float, Any]:
    """The trial's model folder, its size in billions, its enable_thinking."""
    if not gpu:
        corpus = [r["prompt"][0]["content"] for r in _rows(config, "corpus", 40, 0, None)] + [
            "\\boxed{7}"
        ] * 5
        # head size 32 (hidden / 4): vLLM's CPU attention has no kernel for the default tiny's 16
        return str(build_tiny(root / "model", corpus, seed=0, vocab_size=300, hidden=128)), 0.001, False
    name = trial_model(config, shape)
    folder = Layout(config).base_model(name)
    if not (folder / "config.json").exists():
        raise LieError(
            f"{name} is not downloaded ({folder}): run `lie preflight --fetch` on a node with network first"
        )
    thinking = config.enable_thinking(name)
    return str(folder.resolve()), planmod.params_billions(config, name), thinking


def trial_config(
    config: Config, shape: Shape, root: Path, model: str, thinking: Any, gpu: bool, rollout: str | None = None
) -> Config:
    """The user's config narrowed to one trial run of ``shape`` under ``root`` (written for its child
    processes: built from the config as written, checked whole like any config); ``rollout`` replaces
    its ``training.gpu_rollout``."""
    trial = config.as_written()
    trial.update(name="preflight", outdir=str(root / "out"), runs=[RUN])
    if "generate_by" in trial["engines"]:  # it names the user's runs, which the trial has not
        trial["engines"]["generate_by"] = {}
    trial["models"] = {
        "preflight-model": {"path": model, "hf_id": None, "revision": None, "enable_thinking": thinking}
    }
    train_set = next(iter(trial["datasets"]["train"].values()))
    eval_set = next(iter(trial["datasets"]["eval"].values()))
    trial["datasets"] = {"train": {"preflight-train": train_set}, "eval": {"preflight-val": eval_set}}
    evaluation = trial["evaluation"]
    evaluation.update(
        benchmarks=["preflight-val"], base_models=[], in_domain=["preflight-val"], out_of_domain=[]
    )
    algorithm = config.run(shape.runs[0]).algorithm
    training = {"max_steps": TRIAL_STEPS, "save_freq": TRIAL_SAVE_FREQ, "test_freq": TRIAL_STEPS,
                "keep_checkpoints": TRIAL_STEPS + 1, "val_sets": ["preflight-val"], "nnodes": 1,
                "logger": ["console", "file"], "eval_step": "final", "rollout_ignore_eos": True}  # fmt: skip
    batch = trial_batch(shape.gpus_per_node)
    training.update(n_gpus_per_node=shape.gpus_per_node, train_batch_size=batch, ppo_mini_batch_size=batch)
    if rollout is not None:
        training["gpu_rollout"] = rollout
    if gpu:
        training.update(max_prompt_length=shape.prompt_len, max_response_length=shape.response_len)
    else:
        training.update(CPU_SHAPE, lr=1e-3)
    trial["training"].update(training)
    trial["experiments"] = {RUN: {"model": "preflight-model", "data": "preflight-train", "algorithm": algorithm,
                                  "lie": "on", "extra_tokens": 0, "epochs": 1, "parent": None,
                                  "max_response_length": None}}  # fmt: skip
    source = f"the preflight's trial config ({root / 'config.yaml'})"
    cfgmod.validate_config(trial, source=source)
    return cfgmod.Config.of(trial, source=source)


COMMAND = "lie preflight"  # the trial folder's record (lie_output.json) names it
# What lie train and lie merge write under the trial's outdir: the run's folder (Layout.run_dir), and no
# more, so that a file the user drops elsewhere under out/ while they run stays the user's (unlisted).
RUN_FOLDER = f"out/runs/{RUN}"


def _prepare(root: Path) -> None:
    """An empty trial folder at ``root``. An earlier trial's goes only when it holds nothing but the files
    its record lists (lie_output.json, rewritten as the trial writes: :meth:`Trial.writing`); a folder
    the user made, or a trial folder holding a file of the user's, is refused with one line, untouched."""
    try:
        check_output_folder(root)
    except LieError as exc:
        lies = root.is_dir() and not root.is_symlink() and record_problem(root) is None
        stopped = record_of(root).get("running") if lies else None
        if isinstance(stopped, str):  # the files a killed command wrote are not listed either
            raise LieError(
                f"{exc}; the preflight there was stopped during {stopped} (a kill, a time limit): "
                f"if those are its files, delete {root}"
            ) from None
        raise
    if root.exists():
        shutil.rmtree(root)  # a preflight measures afresh; every file in it is one the trial wrote
    root.mkdir(parents=True)


class Trial:
    """The files of one trial and the ``lie`` commands run on them."""

    def __init__(self, config: Config, shape: Shape, root: Path, gpu: bool, rollout: str | None = None):
        _prepare(root)  # before anything reads the config
        self.shape, self.root, self.gpu = shape, root, gpu
        self.listed: set[str] = set()  # the files the trial wrote, as its record lists them
        with self.writing("the trial's setup", "model", "config.yaml", "train.parquet", "val.parquet"):
            model, self.params_b, thinking = _model(config, shape, root, gpu)
            self.config = trial_config(config, shape, root, model, thinking, gpu, rollout)
            self.config_file = root / "config.yaml"
            cfgmod.write_effective_config(self.config, self.config_file)
            cfgmod.load_config(self.config_file)  # the trial's config is a valid one
            ref_len = self.config.run(RUN).max_response_length // 2
            rows = trial_rows(self.config.run(RUN).train_batch_size)
            self.train_rows = _rows(self.config, "preflight-train", rows, 1, ref_len)
            self.train_file = _write_rows(self.train_rows, root / "train.parquet")
            self.val_file = _write_rows(_rows(self.config, "preflight-val", 4, 2, None), root / "val.parquet")
        self.model = model
        self.rollout = self.config.run(RUN).gpu_rollout  # the server of its rollouts on a GPU
        self.rundir = _rundir(self.config)
        self.logs = root / "logs"  # every command's whole output, named in the trial's rows

    @contextlib.contextmanager
    def writing(self, what: str, *patterns: str) -> Iterator[None]:
        """While ``what`` writes what ``patterns`` name (globs relative to the trial's folder) the record
        names it (files a kill leaves are unlisted: a rerun says so); after it, however it ends, the record
        lists those files beside the ones it listed: the files a rerun may remove. Anything else in the
        folder, a file the user put there during the trial too, stays unlisted: a rerun refuses it."""
        write_record(self.root, {"command": COMMAND, "running": what}, self.listed)
        try:
            yield
        finally:
            self.listed.update(files_under(self.root, patterns))
            write_record(self.root, {"command": COMMAND}, self.listed)

    def run(self, args: list[str], log_name: str, writes: list[str], **kwargs: Any) -> Path:
        """A ``lie`` command of the trial (:func:`_lie`) that writes what the globs ``writes`` name, its
        output in ``logs/<log_name>``; that log."""
        log_file = self.logs / log_name
        with self.writing(f"lie {args[0]}", f"logs/{log_name}", *writes):
            _lie(args, log_file, **kwargs)
        return log_file

    def train(self, log_name: str = "train.log") -> Path:
        """``lie train`` of the trial's run (it writes under the trial's outdir); its log."""
        return self.run(["train", RUN, "--config", str(self.config_file), "--engine", "verl",
                         "--device", "gpu" if self.gpu else "cpu", "--train-file", self.train_file,
                         "--val-file", self.val_file, "--model", self.model], log_name,
                        writes=[RUN_FOLDER])  # fmt: skip


def _rundir(config: Config):
    return Layout(config).run_dir(RUN)


# ---- the checks of a trial ----------------------------------------------------------------------


def trial_checks(
    config: Config, shape: Shape, root: Path, gpu: bool, rollout: str | None = None
) -> Iterator[Check]:
    """The trial's rows, each as soon as it is known; its commands' logs under ``root/logs``; ``rollout``:
    its ``training.gpu_rollout`` (None: the config's)."""
    where = f"{shape.family}, {shape.prompt_len}+{shape.response_len} tokens, {shape.gpus_per_node} GPU(s)"
    cpu = CPU_SHAPE
    label = (
        where
        if gpu
        else f"{where} as CPU ranks at {cpu['max_prompt_length']}+{cpu['max_response_length']} tokens"
    )
    name = f"{TRIAL_STEPS}-step verl run ({label})"
    try:
        trial = Trial(config, shape, root, gpu, rollout)
        started = time.monotonic()
        train_log = trial.train()
        metrics = read_metrics(trial.rundir)
        check_steps(metrics, train_log)
    except LieError as exc:
        skipped = f"skipped: the {TRIAL_STEPS}-step run failed"
        yield Check(name, "fail", str(exc))
        for n in ("projection", "reward share", "save + resume + merge", "vLLM generation"):
            yield Check(n, skipped)
        return
    yield Check(name, "pass", f"{time.monotonic() - started:.0f} s, log: {train_log}")
    timed = metrics[TIMED_STEP - 1]
    yield projection(config, shape, trial, timed)
    yield memory(trial, timed)
    yield reward_share(trial, timed)
    yield from resume_and_merge(trial)


SAVE_TIMER = "timing_s/save_checkpoint"  # verl's timer of a save, inside its step timer
FULL_LENGTH = "response_length/clip_ratio"  # the share of responses at the limit


def _saved(metrics: dict) -> str | None:
    """A save inside the step's timer: its time is not the shape's step time."""
    if metrics.get(SAVE_TIMER):
        return f"step {metrics.get('step')}'s time includes a checkpoint save ({float(metrics[SAVE_TIMER]):.1f} s)"
    return None


def _short(metrics: dict) -> str | None:
    """Responses that stopped before the limit: the step did not carry the shape's load."""
    share = float(metrics.get(FULL_LENGTH, 0))
    if share < 1:
        return f"only {share:.0%} of step {metrics.get('step')}'s responses reached the response limit"
    return None


def check_steps(metrics: list[dict], train_log: Path) -> None:
    """The trial's run logged each of its steps once, in order; else one line naming what it logged."""
    steps = [m["step"] for m in metrics]
    if steps != list(range(1, TRIAL_STEPS + 1)):
        raise LieError(f"verl logged steps {steps}, not 1..{TRIAL_STEPS} (log: {train_log})")


GEN_TIMER = "timing_s/gen"  # verl's timer of the rollouts, inside its step timer


def projection(config: Config, shape: Shape, trial: Trial, last: dict) -> Check:
    """The measured rates in place of lie plan's assumptions: GPU-hours of each run of the shape, as a
    range. The trial's phases after generation (log-probs, update) are compute-bound and project by
    tokens; its generation ran only PROMPTS_PER_GPU x rollout_n sequences a GPU where a run decodes up to
    its whole batch at once (as many as the KV cache holds), and decoding is memory-bound, so the trial's
    generation rate understates a run's, typically 2-3x. The upper figure takes the trial's rates for
    both; the lower its update rate with lie plan's generation rate (``--gen-tps``)."""
    name = "throughput, projected to the runs" + ("" if trial.gpu else " (a CPU figure)")
    tps = float(last.get("perf/throughput") or 0)
    if tps <= 0:
        return Check(name, "fail", "verl logged no perf/throughput")
    if why := _saved(last) or _short(last):
        return Check(name, "fail", why)
    step_s = float(last.get("timing_s/step") or 0)
    gen_share = min(max(float(last.get(GEN_TIMER) or 0) / step_s, 0.0), 0.99) if step_s > 0 else 0.0
    concurrent = PROMPTS_PER_GPU * trial.config.run(RUN).rollout_n
    parts = [f"{tps:.0f} tokens/s/GPU at {trial.params_b:g}B over a step, {gen_share:.0%} of it generating "
             f"{concurrent} sequences a GPU"]  # fmt: skip
    for run in shape.runs:
        p = planmod.plan_run(config, run, {}, planmod.GEN_TOKENS_PER_S_4B, planmod.MFU)
        s = config.run(run)
        scale = trial.params_b / p.params_b  # per-GPU throughput ~ 1 / size
        per_step = s.train_batch_size * s.rollout_n * (p.mean_response + 0.5 * s.max_prompt_length)
        trial_rate = tps * scale  # tokens/s/GPU of the whole step at the run's size
        upper = p.steps * per_step / trial_rate / 3600
        update_h = upper * (1 - gen_share)  # the compute-bound phases at the trial's rate
        gen_h = p.rollout_tokens / (planmod.GEN_TOKENS_PER_S_4B * 4.0 / p.params_b) / 3600
        lower = min(update_h + gen_h, upper)
        low, high, plan_h = (planmod.hours_text(h) for h in (lower, upper, p.gpu_hours))
        parts.append(f"{run}: {low}-{high} GPU-h without validation (lie plan: {plan_h} with it; "
                     f"{s.train_batch_size * s.rollout_n // s.gpus} sequences a GPU)")  # fmt: skip
    return Check(name, "pass", "; ".join(parts))


# The actor's memory as verl 0.9.1 logs it: verl/workers/engine_workers.py:219 (``perf/...``), renamed
# under ``actor/`` by verl/trainer/ppo/v1/trainer_base.py:1861.
GPU_MEMORY_KEY = "actor/perf/max_memory_allocated_gb"
CPU_MEMORY_KEY = "actor/perf/cpu_memory_used_gb"


def memory(trial: Trial, last: dict) -> Check:
    """The actor's peak GPU memory in a step against the GPU's; on a CPU its host memory against the
    machine's. A metric verl did not log fails the row (it used to read as 0 GiB and pass)."""
    if trial.gpu:
        import torch

        name, key = "peak GPU memory of a step", GPU_MEMORY_KEY
        total = torch.cuda.get_device_properties(0).total_memory / 1024**3
    else:
        import psutil

        name, key = "actor's host memory in a step (CPU)", CPU_MEMORY_KEY
        total = psutil.virtual_memory().total / 1024**3
    if key not in last:
        return Check(name, "fail", f"verl logged no {key}")
    if why := _short(last):
        return Check(name, "fail", why)
    peak = float(last[key])
    status = "pass" if peak < 0.9 * total else "fail"
    return Check(name, status, f"{peak:.1f} of {total:.0f} GiB at {trial.params_b:g}B (grows with the model)")


def reward_share(trial: Trial, last: dict) -> Check:
    """The reward manager's time for one step's samples (graded and scored as verl's manager does,
    concurrently on the configured executor) against the step's time."""
    name = "reward manager's share of a step"
    step_s = float(last.get("timing_s/step") or 0)
    rollouts = [r for r in read_rollouts(trial.rundir) if r["step"] == TIMED_STEP]
    if step_s <= 0 or not rollouts:
        return Check(name, "fail", "no step time or no rollouts logged")
    rows = {row["extra_info"]["index"]: row for row in trial.train_rows}
    config = trial.config.run(RUN).reward
    samples = [
        Rollout.of(rows[int(r["prompt_index"])], r["response"], range(int(r["num_tokens"])), "preflight row")
        for r in rollouts
    ]

    async def grade_all() -> float:
        rewarder = Rewarder(*grading_limits(trial.config))
        await rewarder.reward(samples[0], config)  # started, as verl's long-lived manager's is
        started = time.monotonic()
        await asyncio.gather(*(rewarder.reward(s, config) for s in samples))
        rewarder.close()
        return time.monotonic() - started

    return share_check(name, asyncio.run(grade_all()), step_s, len(samples), trial.gpu)


def share_check(name: str, reward_s: float, step_s: float, samples: int, gpu: bool) -> Check:
    """The reward manager's share of a step, judged against REWARD_SHARE_MAX on a GPU; on a CPU only
    reported (a tiny model's CPU step says nothing of a GPU step's length)."""
    share = reward_s / step_s
    detail = f"{reward_s:.2f} s for {samples} samples of a {step_s:.1f} s step: {share:.0%}"
    if not gpu:
        return Check(name + " (a CPU figure)", "pass", detail)
    status = "pass" if share <= REWARD_SHARE_MAX else "fail"
    return Check(name, status, f"{detail} (at most {REWARD_SHARE_MAX:.0%})")


def resume_and_merge(trial: Trial) -> Iterator[Check]:
    """The last checkpoint removed (a kill after the one before): the rerun resumes from it, then merges."""
    name = "save + resume + merge"
    ckpts = trial.rundir.checkpoints
    try:
        shutil.rmtree(ckpts / f"global_step_{TRIAL_STEPS}")
        (ckpts / COMPLETED).unlink()
        trial.rundir.final_json.unlink()
        (ckpts / verl_checkpoints.TRACKER).write_text(str(TRIAL_STEPS - TRIAL_SAVE_FREQ))
        launches = len(list((trial.rundir.root / "metrics").glob("*.jsonl")))
        resume_log = trial.train("resume.log")
        steps = [m["step"] for m in read_metrics(trial.rundir)]
        relaunched = len(list((trial.rundir.root / "metrics").glob("*.jsonl"))) > launches
        if (
            not relaunched
            or not (ckpts / f"global_step_{TRIAL_STEPS}" / "actor").is_dir()
            or steps[-1:] != [TRIAL_STEPS]  # a rerun that logged no step is a failed row too
        ):
            raise LieError(
                f"the rerun did not resume at step {TRIAL_STEPS} (metrics steps {steps}; log: {resume_log})"
            )
        merged = trial.root / "merged"
        merge_log = trial.run(
            ["merge", RUN, "--config", str(trial.config_file), "--out", str(merged)],
            "merge.log",
            writes=[RUN_FOLDER, merged.name, f".{merged.name}.*"],  # and its temporaries beside it
        )
        if not (merged / "config.json").exists() or not list(merged.glob("*.safetensors")):
            raise LieError(f"lie merge wrote no Hugging Face model to {merged}")
    except (LieError, OSError) as exc:
        yield Check(name, "fail", str(exc))
        yield Check("vLLM generation", "skipped: no merged model")
        return
    yield Check(name, "pass", f"resumed from step {TRIAL_STEPS - TRIAL_SAVE_FREQ}, merged into {merged}; "
                f"logs: {resume_log}, {merge_log}")  # fmt: skip
    yield vllm_generation(trial, merged)


def vllm_generation(trial: Trial, merged: Path) -> Check:
    """A few samples of the merged model with vLLM: in the image on a GPU, the CPU engine elsewhere."""
    name = "vLLM generation" + ("" if trial.gpu else " (vLLM CPU engine)")
    if trial.gpu and trial.rollout != "vllm":
        return Check(name, "skipped: the trial samples without vLLM (training.gpu_rollout transformers)")
    python = sys.executable
    env: dict[str, str] = {}
    engine_args: dict[str, Any] = {}
    if not trial.gpu:
        cpu = trial.config.engines.vllm_cpu
        venv = cpu.venv if cpu else VLLM_CPU["venv"]
        candidate = Path(venv) / "bin" / "python"
        if not candidate.exists():
            return Check(name, f"skipped: no GPU and no {venv}/ here (make venv-vllm builds the CPU engine)")
        written_env = cpu.env if cpu and cpu.env is not None else VLLM_CPU["env"]
        python, env = str(candidate), {k: str(v) for k, v in written_env.items()}
        engine_args = dict(
            cpu.engine_args if cpu and cpu.engine_args is not None else VLLM_CPU["engine_args"]
        )
    out = trial.root / "generations.jsonl"
    log_file = trial.logs / "generate.log"
    extra = [
        f"--engine-arg={k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in engine_args.items()
    ]
    try:
        trial.run(["generate", "preflight-val", "--config", str(trial.config_file), "--model", str(merged),
                   "--data", trial.val_file, "--out", str(out), "--engine", "vllm", "--n", "1",
                   "--max-tokens", "16", "--no-progress", *extra], "generate.log",
                  writes=[f"{out.stem}*", f".{out.stem}*"], python=python, env=env)  # fmt: skip
    except LieError as exc:
        return Check(name, "fail", str(exc))
    rows = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    return Check(
        name, "pass" if len(rows) == 4 else "fail", f"{len(rows)} samples of 4 problems, log: {log_file}"
    )
