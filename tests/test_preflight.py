"""`lie preflight` end to end on a CPU: every check that needs no GPU executes, the others say so."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from lie.config import Config

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.heavy
@pytest.mark.timeout(2400)
def test_the_preflight_runs_on_a_cpu_with_its_gpu_checks_skipped(tmp_path):
    """``make preflight``'s command as it is (no --device: auto, which finds no GPU here), on the smoke config
    at a 4-GPU node's shape (training.n_gpus_per_node 4, as config.yaml): the trial runs 4 CPU ranks, 8
    prompts a step over 32 rows, and logs its 4 steps (at 16 rows verl stopped after 2)."""
    import yaml

    config = yaml.safe_load((REPO / "workflow/configs/smoke.yaml").read_text())
    config["training"]["n_gpus_per_node"] = 4
    config_file = tmp_path / "smoke-4-gpus.yaml"
    config_file.write_text(yaml.safe_dump(config, sort_keys=False))
    work = tmp_path / "preflight"
    proc = subprocess.run(
        [sys.executable, "-m", "lie", "preflight", "--config", str(config_file), "--workdir", str(work)],
        cwd=REPO, capture_output=True, text=True, timeout=2300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = {line.split("  ")[0].strip(): line for line in proc.stdout.splitlines() if "  " in line}
    gpu_only = (
        "NVIDIA driver >= 580",
        "flash-attn against torch's attention",
        "image self-test: flash-attn, torch's CUDA build",
    )
    assert {name for name, line in rows.items() if "skipped: no GPU" in line} == set(gpu_only)  # only CUDA's
    executed = [name for name, line in rows.items() if "  pass" in line]
    # the checkout's .venv-vllm, by its absolute path since engines.vllm_cpu.venv is read as the checkout's
    assert f"image self-test but CUDA ({REPO / '.venv-vllm'}: vLLM's CPU build)" in executed
    assert any(name.startswith("all-reduce across 2 CPU processes") for name in executed)
    assert "actor's host memory in a step (CPU)" in executed
    assert any(name.startswith("4-step verl run (") and "4 GPU(s) as CPU ranks" in name for name in executed)
    assert any(name.startswith("throughput, projected to the runs") for name in executed)
    assert any(name.startswith("reward manager's share of a step") for name in executed)
    assert "save + resume + merge" in executed
    vllm = next(line for name, line in rows.items() if name.startswith("vLLM generation"))
    assert "  pass" in vllm  # .venv-vllm is part of the test environment (make venv-vllm)
    assert proc.stdout.strip().splitlines()[-1].startswith("preflight: ") and " 0 failed" in proc.stdout
    # the trial's run resumed from step 2's checkpoint and was merged into a Hugging Face model
    assert (work / "cpu" / "merged" / "config.json").exists()
    # its record lists every file its steps wrote (each step's globs), so that a rerun may empty it
    from lie.formats.outputs import check_output_folder

    check_output_folder(work / "cpu")
    assert len(list((work / "cpu" / "out" / "runs" / "preflight" / "metrics").glob("*.jsonl"))) == 2
    shards = work / "cpu" / "out" / "runs" / "preflight" / "checkpoints" / "global_step_4" / "actor"
    assert sorted(p.name for p in shards.glob("model_*.pt")) == [
        f"model_world_size_4_rank_{r}.pt" for r in range(4)
    ]
    # every command of the trial kept its whole output, named in its row
    logs = work / "cpu" / "logs"
    for name, log in [("4-step verl run", "train.log"), ("save + resume + merge", "resume.log"),
                      ("save + resume + merge", "merge.log"), ("vLLM generation", "generate.log")]:  # fmt: skip
        assert str(logs / log) in next(line for row, line in rows.items() if row.startswith(name))
        assert (logs / log).read_text().startswith("$ ") and (logs / log).stat().st_size > 200


def test_each_row_prints_as_its_check_ends_and_the_trial_keeps_its_whole_log(tmp_path):
    """Issue 34 item 7: `lie preflight` printed nothing until its last check had ended (minutes), and
    kept of a failed trial only its last line. A GPU preflight on this CPU: the GPU rows fail, the
    trial's `lie train` runs and fails; rows come while it runs, the row names the trial's log."""
    import time

    import yaml
    from small import paper_config

    run = "qwen3-4b-base_dapo_gspo_lie"
    config = paper_config()
    config["outdir"] = str(tmp_path / "out")
    model = tmp_path / "out" / "base" / "qwen3-4b-base"  # "fetched": the trial starts `lie train`
    model.mkdir(parents=True)
    (model / "config.json").write_text("{}")
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    work = tmp_path / "preflight"
    proc = subprocess.Popen(
        [sys.executable, "-m", "lie", "preflight", "--config", str(tmp_path / "c.yaml"), "--runs", run,
         "--workdir", str(work), "--device", "gpu"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=open(tmp_path / "stderr", "w"), text=True,
    )  # fmt: skip
    lines = [(time.monotonic(), line.rstrip("\n")) for line in proc.stdout]
    assert proc.wait(timeout=600) == 1
    rows = {line.split("  ")[0]: (t, line) for t, line in lines if "  " in line}
    image_at, _ = rows["image self-test"]
    trial_at, trial = next(row for name, row in rows.items() if name.startswith("4-step verl run"))
    # the image row came while the all-reduce, flash-attn and the trial's `lie train` ran (processes
    # of their own, seconds each), not with the rest at the end
    assert trial_at - image_at > 2, lines
    train_log = work / "shape-1" / "logs" / "train.log"
    assert "  fail" in trial and trial.endswith(f"(log: {train_log}))"), trial
    command, output = train_log.read_text().split("\n", 1)
    assert command.startswith("$ ") and " -m lie train preflight " in command
    message = trial.split("lie train failed: ", 1)[1].rsplit(" (log: ", 1)[0]
    assert message in output.splitlines()
    again = subprocess.run(
        shlex.split(command[2:]), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert output == again.stdout  # the command's whole output, not its last line


def test_a_trial_folder_the_user_made_is_refused_and_kept(tmp_path):
    """--workdir's trial folders are emptied only when an earlier preflight built them."""
    from lie.core.errors import LieError
    from lie.stages.preflight_trial import Trial

    mine = tmp_path / "cpu"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    with pytest.raises(LieError, match="lie did not make"):
        Trial(Config.of({}), None, mine, gpu=False)  # the check comes before anything reads the config
    assert (mine / "notes.txt").read_text() == "keep me"


def _gpu_trial(tmp_path):
    """A GPU trial's folder prepared as `lie preflight` prepares it, with a "fetched" model (no build,
    no command run): the config, the rows, lie's record. Returns a function that prepares it (again)."""
    from small import paper_config

    from lie.stages.preflight import shapes
    from lie.stages.preflight_trial import Trial

    config = paper_config()
    config["outdir"] = str(tmp_path / "out")
    model = tmp_path / "out" / "base" / "qwen3-4b-base"
    model.mkdir(parents=True)
    (model / "config.json").write_text("{}")
    shape = shapes(Config.of(config), ["qwen3-4b-base_dapo_gspo_lie"])[0]
    return lambda root: Trial(Config.of(config), shape, root, gpu=True)


def test_a_file_the_user_put_in_a_trial_folder_stops_the_rerun_and_is_kept(tmp_path):
    """Issue 33: the trial folder's record listed no files, so a rerun emptied the folder, a file of the
    user's with it. Now the record lists what the trial wrote, and a rerun that finds anything else stops
    with one line naming it (as a model folder's rebuild does), touching nothing; once it is moved out,
    the rerun prepares the folder afresh."""
    from lie.core.errors import LieError
    from lie.formats.outputs import OWNER, record_of

    prepare = _gpu_trial(tmp_path)
    root = tmp_path / "preflight" / "shape-1"
    prepare(root)
    record = record_of(root)
    assert record["command"] == "lie preflight"
    assert {"config.yaml", "train.parquet", "val.parquet"} <= set(record["files"]), record
    (root / "notes.txt").write_text("keep me")
    with pytest.raises(LieError) as refused:
        prepare(root)
    message = str(refused.value)
    assert "notes.txt" in message and "\n" not in message, message
    assert (root / "notes.txt").read_text() == "keep me"
    assert {"config.yaml", "train.parquet", "val.parquet", OWNER} <= {p.name for p in root.iterdir()}
    (root / "notes.txt").rename(tmp_path / "notes.txt")
    prepare(root)
    assert (root / "config.yaml").exists() and "notes.txt" not in record_of(root)["files"]


def test_a_trial_command_cut_short_leaves_its_files_listed_or_the_rerun_says_so(tmp_path):
    """A trial's command that fails or is interrupted (Ctrl-C) leaves its files in the record: the rerun
    removes them. One killed outright (SIGKILL, a time limit) leaves them unlisted, its record naming the
    command: the rerun stops with one line saying so, and removes nothing."""
    from lie.core.errors import LieError
    from lie.formats.outputs import record_of

    prepare = _gpu_trial(tmp_path)
    root = tmp_path / "preflight" / "shape-1"
    trial = prepare(root)
    with pytest.raises(KeyboardInterrupt), trial.writing("lie train", "out"):
        (root / "out" / "runs").mkdir(parents=True)
        (root / "out" / "runs" / "metrics.jsonl").write_text("{}\n")
        raise KeyboardInterrupt
    assert "out/runs/metrics.jsonl" in record_of(root)["files"] and "running" not in record_of(root)
    trial = prepare(root)
    assert not (root / "out" / "runs").exists()
    killed = trial.writing("lie merge", "merged")  # entered and never left: the process was killed
    killed.__enter__()
    (root / "merged").mkdir()
    (root / "merged" / "model.safetensors").write_bytes(b"x")
    with pytest.raises(LieError) as refused:
        prepare(root)
    message = str(refused.value)
    assert "merged/model.safetensors" in message and "stopped during lie merge" in message, message
    assert f"delete {root}" in message and "\n" not in message
    assert (root / "merged" / "model.safetensors").read_bytes() == b"x" and (root / "config.yaml").exists()


def test_a_file_the_user_puts_in_the_folder_while_a_command_runs_stays_unlisted_and_is_kept(tmp_path):
    """Issue 33: the record listed every file in the folder after each command, so a file the user put
    there while the trial ran was listed as lie's, and the rerun removed it. The record lists only what
    each step writes."""
    from lie.core.errors import LieError
    from lie.formats.outputs import record_of

    prepare = _gpu_trial(tmp_path)
    root = tmp_path / "preflight" / "shape-1"
    trial = prepare(root)
    with trial.writing("lie train", "out"):
        (root / "out" / "runs").mkdir(parents=True)
        (root / "out" / "runs" / "metrics.jsonl").write_text("{}\n")
        (root / "notes.txt").write_text("keep me")  # the user's, meanwhile
    files = record_of(root)["files"]
    assert "out/runs/metrics.jsonl" in files and "notes.txt" not in files, files
    with pytest.raises(LieError, match="notes.txt"):
        prepare(root)
    assert (root / "notes.txt").read_text() == "keep me" and (
        root / "out" / "runs" / "metrics.jsonl"
    ).exists()


def test_a_file_the_user_drops_in_the_trials_outdir_while_it_trains_stays_unlisted_and_is_kept(
    tmp_path, monkeypatch
):
    """The train and merge steps listed every file under out/ after they ran: a file the user dropped in
    out/ meanwhile became lie's and the next preflight removed it. They list the run's folder only (the
    trial's own train step, its command stood in for by one that writes the run folder)."""
    from lie.core.errors import LieError
    from lie.formats.outputs import record_of
    from lie.stages import preflight_trial
    from lie.stages.preflight_trial import RUN_FOLDER

    prepare = _gpu_trial(tmp_path)
    root = tmp_path / "preflight" / "shape-1"
    trial = prepare(root)

    def train_command(args, log_file, **kwargs):
        log_file.parent.mkdir(parents=True, exist_ok=True)
        log_file.write_text("$ lie train\n")
        (root / RUN_FOLDER).mkdir(parents=True)
        (root / RUN_FOLDER / "final.json").write_text("{}\n")
        (root / "out" / "notes.txt").write_text("keep me")  # the user's, beside the run, meanwhile

    monkeypatch.setattr(preflight_trial, "_lie", train_command)
    trial.train()
    files = record_of(root)["files"]
    assert f"{RUN_FOLDER}/final.json" in files and "out/notes.txt" not in files, files
    with pytest.raises(LieError, match="notes.txt"):
        prepare(root)
    assert (root / "out" / "notes.txt").read_text() == "keep me"


def test_a_trial_folder_whose_older_record_lists_no_files_is_refused_and_kept(tmp_path):
    """A record of older code lists no files: lie's cannot be told from the user's, so nothing goes."""
    import json

    from lie.core.errors import LieError
    from lie.formats.outputs import OWNER

    prepare = _gpu_trial(tmp_path)
    root = tmp_path / "preflight" / "shape-1"
    prepare(root)
    (root / OWNER).write_text(json.dumps({"command": "lie preflight"}))
    (root / "notes.txt").write_text("keep me")
    with pytest.raises(LieError) as refused:
        prepare(root)
    message = str(refused.value)
    assert "built by an older lie" in message and f"delete {root}" in message and "\n" not in message
    assert (root / "notes.txt").read_text() == "keep me" and (root / "config.yaml").exists()


def test_the_all_reduce_row_runs_its_gpu_code_on_a_cpu_with_gloo():
    """The NCCL row's module across two spawned CPU processes (a worker of a ``python -c`` script
    could not be unpickled by spawned processes: the row failed on every node)."""
    from lie.stages.preflight import GLOO_ROW, Check, check_nccl

    assert check_nccl(gpu=False) == Check(GLOO_ROW, "pass", "2 processes")


def test_a_broken_all_reduce_fails_its_row_with_the_error():
    from lie.stages.preflight import NCCL_ROW, all_reduce_row, check_nccl

    no_nccl = all_reduce_row(NCCL_ROW, "nccl", "cpu", 2)  # torch's CPU build has no NCCL
    assert no_nccl.status == "fail" and "NCCL" in no_nccl.detail, no_nccl
    no_gpu = check_nccl(gpu=True)  # the GPU row where torch sees no GPU
    assert no_gpu.status == "fail" and "no GPU visible" in no_gpu.detail, no_gpu


def test_an_all_reduce_with_a_wrong_sum_is_an_error_naming_both_sums(monkeypatch):
    """The worker's own check, in this process as one gloo rank: a collective that returns without
    error but with a wrong sum (a bad link that corrupts data) raises with what it got and expected."""
    import socket

    import torch.distributed as dist

    from lie.engines import allreduce

    def doubling(tensor, *args, **kwargs):
        tensor.mul_(2)

    monkeypatch.setattr(dist, "all_reduce", doubling)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(RuntimeError, match=r"all-reduce gave 2.0, expected 1.0"):
        allreduce._work(0, 1, port, "gloo", "cpu")
    assert not dist.is_initialized()  # the group is destroyed whatever the check found


def test_the_image_source_check_refuses_a_tree_without_the_package(tmp_path):
    """The job's tree has no src/lie (started from elsewhere): one line naming the folder and the fix."""
    from lie.core.errors import LieError
    from lie.engines.image_source import check_source

    with pytest.raises(
        LieError, match=f"{tmp_path}: no lie package here; run the job from the repository root"
    ):
        check_source(tmp_path, REPO / "src" / "lie")
    assert check_source(REPO / "src", REPO / "src" / "lie") == "the tree's own src/"


def test_the_memory_row_reads_the_actors_metric_and_fails_without_it():
    """verl logs the actor's memory under actor/perf/ (tests/test_verl_main_ppo.py checks the keys in a
    real run); the row read perf/max_memory_allocated_gb, absent, as 0 GiB and always passed."""
    from types import SimpleNamespace

    from lie.stages.preflight_trial import CPU_MEMORY_KEY, memory

    trial = SimpleNamespace(gpu=False, params_b=0.0001)
    assert memory(trial, _timed_step(**{CPU_MEMORY_KEY: 1.5})).status == "pass"
    missing = memory(trial, _timed_step(**{"perf/max_memory_allocated_gb": 0.0}))
    assert missing.status == "fail" and missing.detail == f"verl logged no {CPU_MEMORY_KEY}"
    assert memory(trial, _timed_step(**{CPU_MEMORY_KEY: 1e6})).status == "fail"  # more than the machine has
    short = memory(trial, _timed_step(**{CPU_MEMORY_KEY: 1.5, "response_length/clip_ratio": 0.5}))
    assert short.status == "fail" and "responses reached the response limit" in short.detail


def _timed_step(**metrics) -> dict:
    """A step's metrics as verl logs them: step 3 of the trial, every response at the limit."""
    return {"step": 3, "perf/throughput": 500.0, "timing_s/step": 2.0, "response_length/clip_ratio": 1.0,
            **metrics}  # fmt: skip


def test_the_throughput_row_fails_on_a_step_with_a_save_or_short_responses():
    """Issue 31 defect 4: every trial step used to include a checkpoint save (save_freq 1, inside
    verl's step timer) and answers far shorter than the shape's limit."""
    from types import SimpleNamespace

    from small import paper_config

    from lie.stages.preflight import shapes
    from lie.stages.preflight_trial import projection, trial_config

    config = paper_config()
    shape = shapes(Config.of(config), ["qwen3-4b-base_dapo_gspo_lie"])[0]
    trial = SimpleNamespace(gpu=True, params_b=8.0)
    trial.config = trial_config(Config.of(config), shape, Path("unused"), "m", None, gpu=True)
    assert projection(Config.of(config), shape, trial, _timed_step()).status == "pass"
    saved = projection(Config.of(config), shape, trial, _timed_step(**{"timing_s/save_checkpoint": 4.5}))
    assert saved.status == "fail" and "includes a checkpoint save (4.5 s)" in saved.detail
    short = projection(Config.of(config), shape, trial, _timed_step(**{"response_length/clip_ratio": 0.25}))
    assert short.status == "fail" and "only 25% of step 3's responses" in short.detail


def test_the_projection_is_a_range_whose_generation_part_says_it_ran_at_a_fraction_of_the_runs_concurrency(
    tmp_path,
):
    """The trial generates 2 prompts x rollout_n a GPU where a run decodes up to its batch (1,024 samples over
    4 GPUs): memory-bound decoding is faster per token at the run's concurrency, so the trial's generation rate
    projects an upper bound; the lower end takes its update rate with lie plan's generation rate."""
    import re

    from small import paper_config

    from lie.stages.plan import plan_run
    from lie.stages.preflight import shapes
    from lie.stages.preflight_trial import RUN, Trial, projection, trial_config

    config = Config.of(paper_config())
    shape = shapes(config, ["qwen3-4b-base_dapo_gspo_lie"])[0]
    trial = Trial.__new__(Trial)  # its config and size alone
    trial.gpu, trial.params_b = True, 4.0
    trial.config = trial_config(config, shape, tmp_path, "m", None, gpu=True)

    def hours(**metrics) -> tuple[float, float]:
        check = projection(config, shape, trial, _timed_step(**metrics))
        assert check.status == "pass", check.detail
        low, high = re.search(r"gspo_lie: ([\d,.]+)-([\d,.]+) GPU-h", check.detail).groups()
        return float(low.replace(",", "")), float(high.replace(",", ""))

    low, high = hours(**{"timing_s/gen": 1.2})  # 60% of a 2 s step generating
    assert low < high
    all_update = hours(**{"timing_s/gen": 0.0})
    assert all_update[0] == pytest.approx(all_update[1], rel=1e-2)  # nothing left to scale: one figure
    assert high == pytest.approx(all_update[1], rel=1e-2)  # the upper end: the trial's whole-step rate
    detail = projection(config, shape, trial, _timed_step(**{"timing_s/gen": 1.2})).detail
    assert (
        f"{2 * trial.config.run(RUN).rollout_n} sequences a GPU" in detail and "256 sequences a GPU" in detail
    )
    assert plan_run(config, "qwen3-4b-base_dapo_gspo_lie", {}, 8000, 0.35).gpu_hours > 0


def test_the_trial_loads_the_shape_with_the_largest_model_and_saves_outside_its_timed_step(tmp_path):
    """The trial's config: every rollout to the limit, saves at steps other than the timed one, and on
    a GPU the largest model the shape's runs train, fetched by `lie preflight --fetch`."""
    from small import paper_config

    from lie.config import RunSettings
    from lie.stages.preflight_shapes import shapes, trial_models
    from lie.stages.preflight_trial import RUN, TIMED_STEP, TRIAL_SAVE_FREQ, TRIAL_STEPS, trial_config

    config = paper_config()
    runs = ["qwen3-1.7b-base_dapo_gspo", "qwen3-4b-base_dapo_gspo_lie", "qwen3-8b-base_dapo_gspo_lie"]
    assert len(shapes(Config.of(config), runs)) == 1 and trial_models(Config.of(config), runs) == [
        "qwen3-8b-base"
    ]
    trial = trial_config(Config.of(config), shapes(Config.of(config), runs)[0], tmp_path, "m", None, gpu=True)
    s = RunSettings.of(Config.of(trial), RUN)
    assert s.rollout_ignore_eos and s.max_steps == TRIAL_STEPS and s.save_freq == TRIAL_SAVE_FREQ
    saves = [step for step in range(1, TRIAL_STEPS + 1) if step % s.save_freq == 0 or step == TRIAL_STEPS]
    assert TIMED_STEP not in saves and TIMED_STEP > 1 and saves[-2] < TRIAL_STEPS  # a save to resume from


def test_each_shape_trials_the_largest_model_its_own_runs_train():
    """The 8k Qwen3-Base shape holds 1.7B, 4B and 8B runs: 8B; the 12k continual stage is 4B only."""
    from small import paper_config

    from lie.stages.preflight_shapes import shapes, trial_model

    config = paper_config()
    models = {
        (s.family, s.response_len): trial_model(Config.of(config), s)
        for s in shapes(Config.of(config), list(config["experiments"]))
    }
    assert models[("Qwen/Qwen3-*-Base", 8192)] == "qwen3-8b-base"
    assert models[("Qwen/Qwen3-*-Base", 12288)] == "qwen3-4b-base"


def test_the_image_row_runs_all_but_its_cuda_lines_in_the_vllm_environment(tmp_path):
    """On a CPU the image's self-test runs in .venv-vllm (verl beside vLLM's CPU build, as in the image)
    with only flash-attn and torch's CUDA build skipped; a broken environment fails the row."""
    from lie.stages.preflight import IMAGE_CUDA_ROW, NO_GPU, check_image

    venv = Path(os.environ.get("LIE_VLLM_VENV", REPO / ".venv-vllm"))
    assert (venv / "bin" / "python").exists(), "build vLLM's CPU environment with `make venv-vllm`"
    ran, cuda = check_image(gpu=False, vllm_venv=venv)
    assert ran.status == "pass" and "vllm 0.24.0" in ran.detail and "verl 0.9.1" in ran.detail, ran
    assert cuda.name == IMAGE_CUDA_ROW and cuda.status == NO_GPU
    broken = tmp_path / "venv"
    (broken / "bin").mkdir(parents=True)
    (broken / "bin" / "python").write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')  # this one: no vLLM
    (broken / "bin" / "python").chmod(0o755)
    failed = check_image(gpu=False, vllm_venv=broken)[0]
    assert failed.status == "fail" and "cannot import vllm" in failed.detail, failed
    native, skipped, _ = check_image(gpu=False, vllm_venv=tmp_path / "absent")
    assert native.status == "pass" and skipped.status.startswith("skipped: no vLLM CPU build")


def test_the_gpu_rows_run_here_and_fail_with_what_a_node_without_cuda_lacks():
    """The GPU branches of the image, driver and flash-attn rows execute on a CPU too: each ends in a
    failed row naming what is missing, never in a traceback."""
    from lie.stages.preflight import IMAGE_ROW, check_driver, check_flash_attn, check_image

    (image,) = check_image(gpu=True)
    assert image.name == IMAGE_ROW and image.status == "fail" and "cannot import vllm" in image.detail
    driver = check_driver(gpu=True)
    assert driver.status == "fail" and "nvidia-smi is not on PATH" in driver.detail, driver
    flash = check_flash_attn(gpu=True)
    assert flash.status == "fail" and "flash_attn" in flash.detail, flash


def test_a_gpu_preflight_names_the_models_not_fetched_and_fails_their_trials(tmp_path, caplog):
    """Issue 31 defect 7: the GPU path logs each shape's model first; a missing one fails its trial's
    row with the command that fetches it, and the trial's other rows say why they did not run."""
    from small import paper_config

    from lie.stages.preflight import preflight

    config = paper_config()
    config["outdir"] = str(tmp_path / "out")
    runs = ["qwen3-4b-base_dapo_gspo_lie", "octothinker-3b_deepmath-5k_gspo_lie"]
    with caplog.at_level("INFO", logger="lie.stages.preflight"):
        checks = preflight(Config.of(config), runs, tmp_path / "work", gpu=True)
    assert "trials with qwen3-4b-base, octothinker-3b" in caplog.text
    assert "not downloaded: qwen3-4b-base, octothinker-3b; run `lie preflight --fetch`" in caplog.text
    trials = [c for c in checks if c.name.startswith("4-step verl run")]
    assert len(trials) == 2 and all(
        c.status == "fail" and "lie preflight --fetch" in c.detail for c in trials
    )
    assert sum(c.status == "skipped: the 4-step run failed" for c in checks) == 2 * 4


def test_a_check_that_raises_is_its_rows_one_line_and_no_run_is_no_preflight(tmp_path):
    """A library that breaks inside a check fails that row with its exception's first line (the other
    rows still run); on a CPU the driver row says it needs a GPU; a preflight of no run is one line."""
    from lie.config import load_config
    from lie.core.errors import LieError
    from lie.stages.preflight import NO_GPU, _guarded, check_driver, iter_preflight

    def broken():
        raise ImportError("libcuda.so.1: cannot open shared object file\nsecond line")

    row = _guarded("flash-attn", broken)
    assert (row.name, row.status, row.detail) == (
        "flash-attn",
        "fail",
        "ImportError: libcuda.so.1: cannot open shared object file",
    )
    assert check_driver(gpu=False).status == NO_GPU
    with pytest.raises(LieError, match=r"preflight: no runs selected \(config runs, or --runs\)"):
        next(iter_preflight(Config.of(load_config("config.yaml")), [], tmp_path, gpu=False))


class _StandInTrial:
    """The attributes and commands of preflight_trial.Trial the verdicts read, with each command's
    outcome chosen by the test: the verdicts are what is tested, not verl's run (the heavy test runs
    the real trial)."""

    def __init__(self, root: Path, gpu: bool = False, config: dict | None = None):
        from lie.config import read_config
        from lie.formats.runs import RunDir

        written = read_config(REPO / "workflow" / "configs" / "smoke.yaml")
        written["engines"].update((config or {}).get("engines") or {"vllm_cpu": None})
        self.root, self.gpu, self.config, self.rollout = root, gpu, Config.of(written), "vllm"
        self.rundir, self.logs = RunDir(root / "out", "preflight"), root / "logs"
        self.config_file, self.val_file = root / "config.yaml", str(root / "val.parquet")
        self.trained, self.commands = None, []

    def train(self, log_name: str = "train.log") -> Path:
        if self.trained:
            self.trained()
        return self.logs / log_name

    def run(self, args, log_name, writes, **kwargs) -> Path:
        from lie.core.errors import LieError

        self.commands.append(args[0])
        if args[0] == "generate":
            raise LieError(f"lie generate failed (log: {self.logs / log_name})")
        return self.logs / log_name


def _finished_trial(trial) -> None:
    """What a finished trial leaves: its checkpoints, the completed marker, final.json, one metrics file."""
    from lie.engines.verl import checkpoints as verl_checkpoints
    from lie.engines.verl.overrides import COMPLETED
    from lie.stages.preflight_trial import TRIAL_SAVE_FREQ, TRIAL_STEPS

    for step in range(TRIAL_SAVE_FREQ, TRIAL_STEPS + 1, TRIAL_SAVE_FREQ):
        (trial.rundir.checkpoints / f"global_step_{step}" / "actor").mkdir(parents=True)
    (trial.rundir.checkpoints / COMPLETED).write_text("{}")
    (trial.rundir.checkpoints / verl_checkpoints.TRACKER).write_text(str(TRIAL_STEPS))
    trial.rundir.final_json.write_text("{}")
    trial.rundir.metrics_dir.mkdir()
    (trial.rundir.metrics_dir / "launch-1.jsonl").write_text('{"step": 1, "data": {}}\n')


def test_the_trials_resume_merge_and_generation_rows_fail_when_their_step_does(tmp_path):
    """A rerun that does not relaunch (or stops short of the last step) fails the resume row and skips
    generation; a merge that leaves no Hugging Face model fails it; generation without vLLM's CPU
    environment is skipped and says what builds it, and a generation that fails fails its row."""
    import json

    from lie.stages.preflight_trial import TRIAL_STEPS, resume_and_merge, vllm_generation

    trial = _StandInTrial(tmp_path / "a")
    _finished_trial(trial)
    rows = list(resume_and_merge(trial))  # the rerun writes nothing: it did not resume
    assert [(r.name, r.status) for r in rows] == [("save + resume + merge", "fail"),
                                                  ("vLLM generation", "skipped: no merged model")]  # fmt: skip
    assert f"the rerun did not resume at step {TRIAL_STEPS}" in rows[0].detail

    trial = _StandInTrial(tmp_path / "empty")
    _finished_trial(trial)

    def relaunched_without_a_step() -> None:  # an IndexError before the fix, not a failed row
        (trial.rundir.checkpoints / f"global_step_{TRIAL_STEPS}" / "actor").mkdir(parents=True)
        for launch in ("launch-1.jsonl", "launch-2.jsonl"):
            (trial.rundir.metrics_dir / launch).write_text("")

    trial.trained = relaunched_without_a_step
    rows = list(resume_and_merge(trial))
    assert rows[0].status == "fail" and "metrics steps []" in rows[0].detail

    trial = _StandInTrial(tmp_path / "b")
    _finished_trial(trial)

    def resumed() -> None:
        (trial.rundir.checkpoints / f"global_step_{TRIAL_STEPS}" / "actor").mkdir(parents=True)
        lines = "".join(json.dumps({"step": s, "data": {}}) + "\n" for s in range(1, TRIAL_STEPS + 1))
        (trial.rundir.metrics_dir / "launch-2.jsonl").write_text(lines)

    trial.trained = resumed
    rows = list(resume_and_merge(trial))  # resumed; the merge wrote nothing
    assert (
        rows[0].status == "fail"
        and f"lie merge wrote no Hugging Face model to {trial.root / 'merged'}" in rows[0].detail
    )
    assert trial.commands == ["merge"]

    cpu = _StandInTrial(tmp_path / "c", config={"engines": {"vllm_cpu": {"venv": str(tmp_path / "no-venv")}}})
    row = vllm_generation(cpu, tmp_path / "merged")
    assert (
        row.status
        == f"skipped: no GPU and no {tmp_path / 'no-venv'}/ here (make venv-vllm builds the CPU engine)"
    )
    gpu = _StandInTrial(tmp_path / "d", gpu=True)
    row = vllm_generation(gpu, tmp_path / "merged")
    assert (row.name, row.status) == ("vLLM generation", "fail") and "lie generate failed" in row.detail


def test_the_projection_and_reward_rows_fail_without_their_metrics_and_judge_the_share_on_a_gpu(tmp_path):
    """No throughput logged fails the projection row, no step time or rollouts the reward row; on a GPU
    the reward manager's share of a step is judged against REWARD_SHARE_MAX (a CPU figure only informs)."""
    from lie.stages.preflight_trial import REWARD_SHARE_MAX, projection, reward_share, share_check

    trial = _StandInTrial(tmp_path)
    row = projection(Config.of({}), None, trial, {})
    assert (row.status, row.detail) == ("fail", "verl logged no perf/throughput")
    row = reward_share(trial, {"timing_s/step": 0})
    assert (row.status, row.detail) == ("fail", "no step time or no rollouts logged")
    low, high = REWARD_SHARE_MAX / 2, REWARD_SHARE_MAX * 2
    assert share_check("share", low * 10, 10.0, 64, gpu=True).status == "pass"
    over = share_check("share", high * 10, 10.0, 64, gpu=True)
    assert over.status == "fail" and over.detail.endswith(f"(at most {REWARD_SHARE_MAX:.0%})")
    cpu = share_check("share", high * 10, 10.0, 64, gpu=False)
    assert (cpu.name, cpu.status) == ("share (a CPU figure)", "pass")


def test_a_trial_command_past_its_time_or_logging_other_steps_is_one_line(tmp_path):
    """A ``lie`` command of the trial that runs past its time is one line naming the log; a training
    run whose metrics hold other steps than 1..TRIAL_STEPS is one line naming what it logged."""
    from lie.core.errors import LieError
    from lie.stages.preflight_trial import TRIAL_STEPS, _lie, check_steps

    log = tmp_path / "logs" / "slow.log"
    with pytest.raises(LieError, match=rf"lie plan ran past 0.01 s \(log: {log}\)"):
        _lie(["plan", "--config", "config.yaml"], log, timeout=0.01)
    check_steps([{"step": s} for s in range(1, TRIAL_STEPS + 1)], tmp_path / "train.log")
    with pytest.raises(
        LieError, match=rf"verl logged steps \[1\], not 1..{TRIAL_STEPS} \(log: .*train.log\)"
    ):
        check_steps([{"step": 1}], tmp_path / "train.log")


@pytest.mark.parametrize("gpus", [1, 4, 8])
@pytest.mark.parametrize("gpu", [True, False], ids=["gpu", "cpu"])
def test_the_trial_at_the_nodes_gpu_count_runs_all_its_steps_by_verls_arithmetic(tmp_path, gpus, gpu):
    """The trial's batch grows with the node's GPUs (2 prompts each); its rows must hold TRIAL_STEPS such
    batches in its one epoch, or verl stops at the epoch's end (16 rows at 4 GPUs: 2 of 4 steps). Read from
    verl's own composition of the trial's run, checked by verl's validation; on a CPU the same ranks."""
    import dataclasses

    from small import paper_config

    from lie.engines.verl import overrides as verl_overrides
    from lie.stages.plan import verl_steps
    from lie.stages.preflight_shapes import shapes
    from lie.stages.preflight_trial import RUN, TRIAL_STEPS, trial_config, trial_rows

    config = Config.of(paper_config())
    shape = dataclasses.replace(shapes(config, ["qwen3-8b-base_dapo_gspo_lie"])[0], gpus_per_node=gpus)
    trial = trial_config(config, shape, tmp_path, "m", None, gpu=gpu)
    inputs = verl_overrides.VerlInputs("train.parquet", ("val.parquet",), "m")
    composed = verl_overrides.compose(
        verl_overrides.overrides(trial, trial.run(RUN), inputs, device="gpu" if gpu else "cpu")
    )
    verl_overrides.check_composed(composed)  # verl's own checks of batch and mini-batch against the ranks
    trainer, batch = composed.trainer, composed.data.train_batch_size
    assert trainer.nnodes * trainer.n_gpus_per_node == gpus and batch == 2 * gpus
    rows = trial_rows(batch)
    assert verl_steps(rows, batch, trainer.total_epochs, trainer.total_training_steps) == TRIAL_STEPS


def test_a_gpu_trial_can_sample_without_vllm_and_then_skips_its_vllm_row(tmp_path):
    """`lie preflight --rollout transformers`: the GPU trials' gpu_rollout, for a machine with torch and verl
    but no vLLM; the vLLM row says why it did not run. The CLI takes the option."""
    from small import paper_config

    from lie.cli import command_parser
    from lie.stages.preflight import shapes
    from lie.stages.preflight_trial import RUN, Trial, trial_config, vllm_generation

    config = Config.of(paper_config())
    shape = shapes(config, ["qwen3-4b-base_dapo_gspo_lie"])[0]
    trial = Trial.__new__(Trial)
    trial.gpu = True
    trial.config = trial_config(config, shape, tmp_path, "m", None, gpu=True, rollout="transformers")
    trial.rollout = trial.config.run(RUN).gpu_rollout  # as Trial.__init__ reads it
    assert trial.rollout == "transformers"
    check = vllm_generation(trial, tmp_path / "merged")
    assert check.status == "skipped: the trial samples without vLLM (training.gpu_rollout transformers)"
    assert trial_config(config, shape, tmp_path, "m", None, gpu=True).run(RUN).gpu_rollout == "vllm"
    args = command_parser("preflight").parse_args(["--rollout", "transformers", "--device", "gpu"])
    assert args.rollout == "transformers"
