"""The preflight's 4-step verl trial with a tiny model built on the spot, on a GPU or a CPU, killed and resumed.

On a borrowed GPU machine (tests/device/README.md: no verl, Ray or vLLM in its image; the kit of ``make
device-kit`` installed with ``pip --target`` and put first on ``PYTHONPATH``) this runs what the
preflight's trial runs (lie.stages.preflight_trial): ``lie train --engine verl --device gpu`` of the
trial's run, FSDP as the cluster composes it (lie_trainer.yaml: FSDP1 with parameter and optimizer
offload, the compiled entropy), an NCCL process group of one rank, 4 steps saving at 2 and 4; but with
the trial's tiny model (built on the machine: no download) and the transformers rollout (``--rollout
transformers``: the run setting ``training.gpu_rollout``; vLLM's CUDA build does not fit a call). It kills the
whole launch (SIGKILL to its process group) once step 3 has started after step 2's checkpoint, launches
again (verl resumes from step 2 and runs 3 and 4), merges the last checkpoint with ``lie merge``, and
prints the preflight's rows read from that run: the step count, the throughput projection and the peak
memory (verl's ``perf/*`` metrics of step 3), the reward manager's share of a step.

On a CPU (``--device cpu``) the same runs on verl's CPU backend: tests/test_device_kit_run.py runs it in an
environment holding only the image's packages and the kit. Every command's output is under
``<workdir>/logs``; the rows are printed and written to ``--out`` as JSON. Exit status 1 when a row failed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RUN_OF_SHAPE = "qwen3-4b-base_dapo_gspo_lie"  # the run whose algorithm and reward the trial takes
KILL_AFTER_S = 1800  # a launch that has not reached step 3 by then has failed


def tiny_trial(config, root: Path, gpu: bool, rollout: str | None):
    """The preflight's Trial of one small shape on one device (``rollout``: its ``training.gpu_rollout``),
    its model the CPU trial's tiny one on either device (the GPU trial would train a downloaded model)."""
    from lie.stages import preflight_trial
    from lie.stages.preflight_shapes import Shape

    cpu_model = preflight_trial._model

    def tiny_model(config, shape, root, gpu):
        return cpu_model(config, shape, root, False)

    preflight_trial._model = tiny_model  # the trial's own tiny model builder, on the GPU too
    shape_of = preflight_trial.CPU_SHAPE
    shape = Shape("tiny", shape_of["max_prompt_length"], shape_of["max_response_length"], 1, (RUN_OF_SHAPE,))
    return preflight_trial.Trial(config, shape, root, gpu, rollout), shape


def attention_note(gpu: bool, rollout: str) -> str | None:
    """verl's actor loads its model with flash_attention_2 unless the run overrides it
    (verl/workers/config/model.py); a borrowed machine has no flash-attn. ``training.gpu_rollout:
    transformers`` sets SDPA (lie.engines.verl.cpu.gpu_rollout_overrides); a vLLM run would stop there."""
    import importlib.util

    if gpu and rollout == "vllm" and importlib.util.find_spec("flash_attn") is None:
        return ("flash-attn is not installed: verl's actor asks for flash_attention_2 (gpu_rollout vllm); "
                "--rollout transformers runs with torch's SDPA")  # fmt: skip
    return None


def train_command(trial) -> list[str]:
    """``lie train`` of the trial as Trial.train runs it."""
    return [sys.executable, "-m", "lie", "train", "preflight", "--config", str(trial.config_file), "--engine",
            "verl", "--device", "gpu" if trial.gpu else "cpu", "--train-file", trial.train_file, "--val-file",
            trial.val_file, "--model", trial.model]  # fmt: skip


def launch_and_kill(trial, log_file: Path) -> str:
    """A launch killed (its whole process group) once step 2's checkpoint is complete and step 3's first
    rollouts are written; what it reached."""
    from lie.engines.verl.checkpoints import TRACKER

    tracker = trial.rundir.checkpoints / TRACKER
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with (
        open(log_file, "w", encoding="utf-8") as out,
        trial.writing("lie train (killed)", "out", f"logs/{log_file.name}"),
    ):
        out.write(f"$ {' '.join(train_command(trial))}\n")
        out.flush()
        proc = subprocess.Popen(
            train_command(trial), stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        deadline = time.monotonic() + KILL_AFTER_S
        while not (tracker.exists() and tracker.read_text().strip() == "2"
                   and list(trial.rundir.rollouts_dir.glob("step-000003.*"))):  # fmt: skip
            if proc.poll() is not None:
                return f"the launch ended (exit {proc.returncode}) before step 3 (log: {log_file})"
            if time.monotonic() > deadline:
                os.killpg(proc.pid, signal.SIGKILL)
                return f"no step 3 after {KILL_AFTER_S} s (log: {log_file})"
            time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    return "killed in step 3"


def rows(trial, shape, config, kill: bool) -> list:
    """The rows of the trial's run (``config``: the user's, whose runs the projection prices)."""
    from lie.core.errors import LieError
    from lie.formats.runs import read_metrics
    from lie.stages import preflight_trial as pt
    from lie.stages.preflight_shapes import Check
    from lie.stages.preflight_trial import TIMED_STEP, TRIAL_STEPS

    found = []
    started = time.monotonic()
    try:
        if kill:
            reached = launch_and_kill(trial, trial.logs / "killed.log")
            if reached != "killed in step 3":
                return [Check("kill in step 3", "fail", reached)]
            found.append(Check("kill in step 3", "pass", f"after {time.monotonic() - started:.0f} s"))
        log = trial.train("resume.log" if kill else "train.log")
        metrics = read_metrics(trial.rundir)
        pt.check_steps(metrics, log)
        if kill:
            text = log.read_text(encoding="utf-8", errors="replace")
            if not re.search(r"Resuming from \S*global_step_2\b", text):
                raise LieError(f"the relaunch did not say it resumed from global_step_2 (log: {log})")
    except LieError as exc:
        return [*found, Check(f"{TRIAL_STEPS}-step verl run", "fail", str(exc))]
    found.append(Check(f"{TRIAL_STEPS}-step verl run" + (", resumed from step 2" if kill else ""), "pass",
                       f"{time.monotonic() - started:.0f} s, log: {log}"))  # fmt: skip
    timed = metrics[TIMED_STEP - 1]
    found += [
        pt.projection(config, shape, trial, timed),
        pt.memory(trial, timed),
        pt.reward_share(trial, timed),
    ]
    merged = trial.root / "merged"
    try:
        trial.run(["merge", "preflight", "--config", str(trial.config_file), "--out", str(merged)], "merge.log",
                  writes=["out", merged.name, f".{merged.name}.*"])  # fmt: skip
        ok = (merged / "config.json").exists() and list(merged.glob("*.safetensors"))
        found.append(Check("lie merge", "pass" if ok else "fail", str(merged)))
    except LieError as exc:
        found.append(Check("lie merge", "fail", str(exc)))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("gpu", "cpu"), required=True)
    parser.add_argument("--workdir", type=Path, required=True, help="the trial's folder (emptied first)")
    parser.add_argument("--config", type=Path, default=REPO / "config.yaml")
    parser.add_argument(
        "--rollout", default=None, help="the run setting training.rollout (GPU: transformers)"
    )
    parser.add_argument("--no-kill", action="store_true", help="one launch of 4 steps, no kill and resume")
    parser.add_argument("--out", type=Path, default=None, help="the rows as JSON")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("OMP_NUM_THREADS", "1")

    from lie.config import load_config
    from lie.core.errors import LieError

    config = load_config(args.config)
    note = attention_note(args.device == "gpu", args.rollout)
    if note:
        print(f"note: {note}", flush=True)
    try:
        trial, shape = tiny_trial(config, args.workdir.resolve(), args.device == "gpu", args.rollout)
        found = rows(trial, shape, config, kill=not args.no_kill)
    except LieError as exc:
        print(f"verl run: {exc}", file=sys.stderr)
        return 1
    for check in found:
        print(f"{check.status:8} {check.name}: {check.detail}", flush=True)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps([asdict(c) for c in found], indent=1) + "\n")
    return 0 if all(c.status != "fail" for c in found) else 1


if __name__ == "__main__":
    sys.exit(main())
