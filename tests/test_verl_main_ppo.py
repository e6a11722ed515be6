"""``python -m verl.trainer.main_ppo`` end to end on the CPU backend (lie.engines.verl.cpu), through the
smoke DAG's train and merge jobs (``lie train --engine verl``, ``lie merge``; tests/smoke_run.py): our
reward manager loaded by verl, the logged entropy, the thinking flag, validation, the merged model, a rerun,
``eval_step: best_val``, and two clean runs that train identically."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import torch
import yaml

pytest.importorskip("verl")

from smoke_run import CHILD, INDUCTOR, PARENT, probe_env  # noqa: E402

from lie.config import Config
from lie.formats.runs import RunDir, read_metrics, read_rollouts  # noqa: E402
from lie.stages.preflight_trial import CPU_MEMORY_KEY, FULL_LENGTH, GPU_MEMORY_KEY, SAVE_TIMER  # noqa: E402

pytestmark = pytest.mark.slow  # the first test to ask for `smoke` builds the DAG (tests/conftest.py)


def _lie(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lie", *args], capture_output=True, text=True, **kwargs)


# The tests below read the verl runs of the one smoke DAG run (tests/smoke_run.py): GSPO+LIE on the tiny
# model, 4 steps of 4 prompts x 4 samples, checkpoints at steps 2 and 4, validation at step 4 (accuracy
# only, 12 rows), then its continual child; verl's processes loaded tests/verl_probe.py.


def _smoke_inputs(smoke) -> tuple[Path, Path, list[Path]]:
    """The smoke verl run's training file, initial model and validation files, as the DAG gave them."""
    from lie.config import RunSettings, load_config
    from lie.config.layout import Layout

    config = load_config(smoke.config_file)
    layout, settings = Layout(Config.of(config)), RunSettings.of(Config.of(config), PARENT)
    val = [layout.dataset_file(name) for name in settings.val_sets]
    return layout.reflen_file(settings.data, settings.model), layout.init_model(PARENT), val


def _smoke_train_args(smoke, config_file: Path | None = None) -> list[str]:
    """The train job's ``lie train`` arguments for the smoke's verl run, its inputs from the smoke's outdir."""
    train, model, val = _smoke_inputs(smoke)
    args = ["train", PARENT, "--config", str(config_file or smoke.config_file), "--engine", "verl",
            "--train-file", str(train), "--model", str(model)]  # fmt: skip
    for path in val:
        args += ["--val-file", str(path)]
    return args


def _smoke_copy(smoke, root: Path, **training) -> Path:
    """The smoke config with ``outdir`` under ``root`` (and ``training`` changed), written to root."""
    config = copy.deepcopy(smoke.config)
    config["outdir"] = str(root / "out")
    config["training"].update(training)
    path = root / "smoke.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def test_main_ppo_trains_with_our_manager_loaded_by_verl(smoke):
    import pyarrow.parquet as pq

    rundir = RunDir(smoke.out, PARENT)
    final = json.loads(rundir.final_json.read_text())
    assert final == {"engine": "verl", "checkpoint": str(rundir.checkpoints / "global_step_4"), "step": 4}
    assert (rundir.checkpoints / "latest_checkpointed_iteration.txt").read_text().strip() == "4"
    for step in (2, 4):  # save_freq 2, keep_checkpoints 2
        assert (rundir.checkpoints / f"global_step_{step}" / "actor").is_dir()
    composed = yaml.safe_load(rundir.verl_config.read_text())
    assert composed["reward"]["reward_manager"]["module"]["path"] == "pkg://lie.engines.verl.reward_manager"
    assert composed["actor_rollout_ref"]["rollout"]["name"] == "transformers"
    assert composed["trainer"]["device"] == "cpu"
    # our manager graded every training sample (4 prompts x 4 samples a step) and scored LIE's terms,
    # with each prompt's reference length from the reflen file
    rollouts = read_rollouts(rundir)
    assert sorted({r["step"] for r in rollouts}) == [1, 2, 3, 4]
    assert all(sum(r["step"] == s for r in rollouts) == 16 for s in (1, 2, 3, 4))
    reflen = pq.read_table(_smoke_inputs(smoke)[0]).to_pylist()
    ref_len = {row["extra_info"]["index"]: row["reward_model"]["num_tokens"] for row in reflen}
    assert all(r["ref_len"] == ref_len[r["prompt_index"]] for r in rollouts)
    assert all(r["grade_status"] in ("ok", "no_answer") for r in rollouts)
    tolerance = smoke.config["reward"]["tolerance"]
    short = [r for r in rollouts if r["acc"] == 0 and r["num_tokens"] < r["ref_len"] - tolerance]
    assert short and all(r["r_len"] < 0 for r in short)  # wrong and short of L_ref - tolerance
    assert all(r["r_len"] == 0 for r in rollouts if r not in short)
    for step in (1, 2, 3, 4):  # one id per sample, one group per prompt (verl's uid), 4 samples each
        samples = [r for r in rollouts if r["step"] == step]
        assert len({r["uid"] for r in samples}) == 16 and all(
            r["uid"].startswith(r["group"] + "_") for r in samples
        )
        assert sorted(Counter(r["group"] for r in samples).values()) == [4, 4, 4, 4]
    assert not (rundir.root / "verl_rollouts").exists()  # no second copy of the samples
    metrics = read_metrics(rundir)
    assert [m["step"] for m in metrics] == [1, 2, 3, 4]
    assert "actor/pg_loss" in metrics[0] and "critic/score/mean" in metrics[0]
    # the keys lie preflight's rows read: memory, the share of responses at the limit, a save's time
    # in the steps that save (save_freq 2) and in no other
    assert all(key in metrics[-1] for key in (GPU_MEMORY_KEY, CPU_MEMORY_KEY, FULL_LENGTH))
    assert [m["step"] for m in metrics if m.get(SAVE_TIMER)] == [2, 4]


@pytest.mark.heavy
def test_the_continual_run_samples_with_verls_vllm_server_on_the_synced_weights(smoke_child):
    """Issue 32: the child (``cpu_rollout: vllm``) ran main_ppo in .venv-vllm with verl's own vLLM server
    (our replica and worker extension), verl's checkpoint layout and the actor's metrics. vLLM starts on
    dummy weights (``load_format: dummy``); at every step the server's log-probs of its own samples
    match the actor's on the same tokens, so every sync (the first and one after each update) reached
    the server: unsynced, a sample's probability would differ by up to 1. make test-all (the child is
    its DAG's, tests/smoke_run.py); make test keeps verl's sync into vLLM outside main_ppo
    (tests/test_vllm_verl.py)."""
    smoke = smoke_child
    rundir = RunDir(smoke.out, CHILD)
    record = json.loads(rundir.run_json.read_text())
    assert record["rollout"] == "vllm" and record["settings"]["cpu_rollout"] == "vllm"
    assert Path(record["command"][0]).parent.parent.name == ".venv-vllm"
    composed = yaml.safe_load(rundir.verl_config.read_text())
    rollout = composed["actor_rollout_ref"]["rollout"]
    assert rollout["name"] == "vllm" and rollout["load_format"] == "dummy" and rollout["calculate_log_probs"]
    assert rollout["enable_sleep_mode"] is False and rollout["enable_chunked_prefill"] is False
    final = json.loads(rundir.final_json.read_text())
    assert final["step"] == 4 and (rundir.checkpoints / "global_step_4" / "actor").is_dir()
    metrics = read_metrics(rundir)
    assert [m["step"] for m in metrics] == [1, 2, 3, 4]
    for m in metrics:
        assert m["training/rollout_probs_diff_valid"] == 1
        assert m["training/rollout_actor_probs_pearson_corr"] > 0.999, m
        assert m["training/rollout_probs_diff_mean"] < 0.01 and m["training/rollout_probs_diff_max"] < 0.1, m
        assert "actor/pg_loss" in m and m["response_length/max"] <= 64
    rollouts = read_rollouts(rundir)
    assert all(sum(r["step"] == s for r in rollouts) == 16 for s in (1, 2, 3, 4))
    assert "CPUvLLMHttpServer" in (smoke.out / "logs" / "train" / f"{CHILD}.log").read_text()


def test_verl_on_the_cpu_compiles_no_kernel(smoke):
    """verl's FSDP engine wraps its entropy in ``torch.compile`` (``fsdp_config.use_torch_compile``, true
    by default; the actor's own ``use_torch_compile`` is not read by the engine workers). On a CPU that
    is inductor's C++ compiler in every actor process (~15 s of CPU a cold process, ISA probes in
    subprocesses on a warm cache) for kernels the GPU never runs: the CPU backend turns it off, so the
    DAG's verl run puts no file in torch.compile's cache (TORCHINDUCTOR_CACHE_DIR; a process may make
    the empty folder)."""
    for run in (PARENT,):
        composed = yaml.safe_load(RunDir(smoke.out, run).verl_config.read_text())["actor_rollout_ref"]
        assert composed["actor"]["fsdp_config"]["use_torch_compile"] is False
        assert composed["ref"]["fsdp_config"]["use_torch_compile"] is False
    assert not [p for p in (smoke.workdir / INDUCTOR).rglob("*") if p.is_file()]


def test_the_logged_entropy_is_a_token_mean_in_a_gspo_run(smoke):
    """verl aggregates actor/entropy with the run's loss_agg_mode (GSPO: a mean of per-response
    means); lie.engines.verl.trainer logs the token mean of the same entropies, as the authors' logs."""
    calls = [json.loads(line) for line in smoke.entropy.read_text().splitlines()]
    metrics = read_metrics(RunDir(smoke.out, PARENT))
    assert len(calls) == len(metrics) == 4  # the run's 4 steps
    gaps = []
    for call, step in zip(calls, metrics):
        assert call["mode"] == "seq-mean-token-mean"  # what verl itself would have logged
        rows = call["rows"]
        token_mean = sum(map(sum, rows)) / sum(map(len, rows))
        gaps.append(abs(token_mean - sum(sum(r) / len(r) for r in rows) / len(rows)))
        assert step["actor/entropy"] == pytest.approx(token_mean, abs=1e-6)
    assert max(gaps) > 1e-4  # responses of different lengths: the two means differ here


def test_the_thinking_flag_reaches_verls_prompts(smoke):
    dump = smoke.out / "runs" / PARENT / "validation" / "4.jsonl"
    inputs = [json.loads(line)["input"] for line in dump.read_text().splitlines()]
    assert inputs and all(text.endswith("assistant\n<think>\n\n</think>\n\n") for text in inputs)


def test_validation_rows_are_scored_by_accuracy_only(smoke):
    rundir = RunDir(smoke.out, PARENT)
    rows = [json.loads(line) for line in (rundir.root / "validation" / "4.jsonl").read_text().splitlines()]
    assert len(rows) == 12  # arith-test
    assert all(r["r_len"] == 0 and r["r_red"] == 0 and r["score"] == r["acc"] for r in rows)
    assert all(r["num_tokens"] > 0 for r in rows)
    metrics = read_metrics(rundir)[-1]
    assert "val-core/arith-test/acc/mean@1" in metrics


def test_the_merged_checkpoint_is_a_hugging_face_model_that_generates(smoke):
    """The DAG's merge job (``lie merge``) wrote the final checkpoint's weights as a Hugging Face model."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    merged = smoke.out / "models" / PARENT
    model = AutoModelForCausalLM.from_pretrained(merged)
    tokenizer = AutoTokenizer.from_pretrained(merged)
    ids = tokenizer("What is 2 + 3?", return_tensors="pt").input_ids
    out = model.generate(ids, min_new_tokens=4, max_new_tokens=4, do_sample=False)
    assert out.shape[1] == ids.shape[1] + 4
    # the weights are the trained ones, not the initial model's
    actor = smoke.out / "runs" / PARENT / "checkpoints/global_step_4/actor"
    state = torch.load(actor / "model_world_size_1_rank_0.pt", weights_only=False)
    initial = AutoModelForCausalLM.from_pretrained(smoke.out / "base" / "tiny").state_dict()
    name = "model.embed_tokens.weight"
    trained_weight = state[name].full_tensor() if hasattr(state[name], "full_tensor") else state[name]
    assert torch.allclose(model.state_dict()[name].float(), trained_weight.float(), atol=1e-2)
    assert not torch.equal(initial[name].float(), trained_weight.float())


def test_a_rerun_with_the_same_settings_does_not_train_again(smoke):
    run = smoke.out / "runs" / PARENT
    weights = run / "checkpoints/global_step_4/actor/model_world_size_1_rank_0.pt"
    files = lambda: sorted(str(p.relative_to(run)) for p in run.rglob("*"))  # noqa: E731
    before = (files(), weights.stat().st_mtime_ns, (run / "final.json").stat().st_mtime_ns)
    result = _lie(*_smoke_train_args(smoke), timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "running verl" not in result.stderr
    # no new file, the weights not rewritten, final.json untouched (else the merge after it looks outdated)
    assert (files(), weights.stat().st_mtime_ns, (run / "final.json").stat().st_mtime_ns) == before
    assert json.loads((run / "final.json").read_text())["step"] == 4


# What compares the rollout server's log-probs with the actor's: the server's come from a batch whose
# size follows arrival timing, and a row's last digits follow the batch size (docs/training.md).
SERVER_LOG_PROBS = ("training/rollout_probs_diff", "training/rollout_actor_probs", "rollout_corr/")


def _comparable_metrics(rundir: RunDir) -> list[dict]:
    """Every logged metric but wall times, throughputs and the server log-probs' diagnostics."""
    timing = ("timing", "perf/", "time", "throughput")
    return [
        {k: v for k, v in m.items() if not any(t in k for t in timing) and not k.startswith(SERVER_LOG_PROBS)}
        for m in read_metrics(rundir)
    ]


def test_every_prompt_is_named_by_its_step_and_row_not_by_a_random_uuid(smoke):
    """What lets two clean runs match sample for sample (make test-all trains the run twice, below): verl
    names each prompt by ``uuid.uuid4()``; the DAG's run names a training prompt by its step and row and a
    validation prompt by the step it validates and its row (lie.engines.verl.trainer), and every seed
    verl reads is set."""
    from lie.engines.verl.trainer import prompt_uid, val_prompt_uid

    rundir = RunDir(smoke.out, PARENT)
    rollouts = read_rollouts(rundir)
    for step in (1, 2, 3, 4):  # 4 prompts a step, 4 samples each, in the loader's order
        groups = [r["group"] for r in rollouts if r["step"] == step]
        assert groups == [prompt_uid(step, 0, row) for row in range(4) for _ in range(4)]
    dump = (rundir.root / "validation" / "4.jsonl").read_text(encoding="utf-8")
    uids = [json.loads(line)["uid"] for line in dump.splitlines()]
    assert uids == [f"{val_prompt_uid(4, row)}_0_0" for row in range(12)]  # the 12 rows of arith-test, n = 1
    composed = yaml.safe_load(rundir.verl_config.read_text())
    assert (
        composed["data"]["seed"] is not None and composed["actor_rollout_ref"]["rollout"]["seed"] is not None
    )


@pytest.mark.heavy
def test_two_clean_runs_train_identically(smoke, tmp_path):
    """The smoke's verl run again, alone, from the same inputs: the same rollouts (every sample's
    response and reward, under the same group and sample id, in the same order), the same metrics (but
    wall times and the diagnostics of the rollout server's log-probs), the same validation file (prompts
    named by step and row, not verl's uuid4), bit-identical weights at every saved step. make test-all
    (~2 min: verl's Ray and actors start once more); make test checks the names above."""
    args = _smoke_train_args(smoke, _smoke_copy(smoke, tmp_path))
    env = {
        **probe_env(tmp_path / "entropy.jsonl"),
        "OMP_NUM_THREADS": "1",
        "HF_HUB_OFFLINE": "1",
    }  # as the DAG's
    result = _lie(*args, timeout=900, env=env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]
    first, second = RunDir(smoke.out, PARENT), RunDir(tmp_path / "out", PARENT)
    assert read_rollouts(second) == read_rollouts(first)  # group ids included: named by step and row
    assert _comparable_metrics(second) == _comparable_metrics(first)
    dumps = [(run.root / "validation" / "4.jsonl").read_bytes() for run in (first, second)]
    assert dumps[1] == dumps[0]
    uids = [json.loads(line)["uid"] for line in dumps[0].splitlines()]
    assert uids == [f"v000004r{row:04d}_0_0" for row in range(12)]  # the 12 rows of arith-test, n = 1
    for step in (2, 4):
        name = f"global_step_{step}/actor/model_world_size_1_rank_0.pt"
        a, b = (torch.load(run.checkpoints / name, weights_only=False) for run in (first, second))
        assert a.keys() == b.keys()
        for key in a:
            x, y = (t.full_tensor() if hasattr(t, "full_tensor") else t for t in (a[key], b[key]))
            assert torch.equal(x, y), (step, key)


def test_best_val_picks_the_validated_checkpoint_without_training_again(smoke, tmp_path):
    """training.eval_step best_val (the authors' choice): final.json names the best validated checkpoint.
    On a copy of the smoke's verl run, so that the DAG's own outputs stay as the DAG wrote them."""
    from lie.stages.checkpoint import validation_average

    shutil.copytree(smoke.out / "runs" / PARENT, tmp_path / "out" / "runs" / PARENT)
    rundir = RunDir(tmp_path / "out", PARENT)
    validated = [m["step"] for m in read_metrics(rundir) if validation_average(m) is not None]
    assert validated == [4]  # test_freq 4 of 4 steps; checkpoints at 2 and 4
    result = _lie(*_smoke_train_args(smoke, _smoke_copy(smoke, tmp_path, eval_step="best_val")), timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    final = json.loads(rundir.final_json.read_text(encoding="utf-8"))
    assert final["step"] == 4 and final["checkpoint"] == str(rundir.checkpoints / "global_step_4")
    assert "best validation average" in result.stderr and "running verl" not in result.stderr


NEAR_TIE = 0.01  # logits: vLLM's CPU kernels and transformers' differ by about this much (float32)


@pytest.mark.heavy
def test_vllm_rollout_runs_twice_alike_and_validates_greedily_from_the_synced_weights(smoke, tmp_path):
    """Issue 32, beyond make test: the smoke's verl run with ``cpu_rollout: vllm`` and greedy
    validation, twice from clean folders. Validation at step 4 runs on the server after the last sync:
    each token of its greedy continuations is the step-4 checkpoint's greedy choice in transformers, on
    the same prompt and prefix, or within NEAR_TIE logits of it (measured 2026-12-04: 11 of 12 rows
    token for token, one flip at a 0.004-logit tie); a server a step behind is off by 0.05-0.5. The two
    runs give the same rollouts and validation, and metrics equal to 1e-9 (a validation mean's
    summation order differs in the last bit)."""
    import pyarrow.parquet as pq
    from transformers import AutoModelForCausalLM, AutoTokenizer

    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    runs = []
    for name in ("first", "second"):
        (tmp_path / name).mkdir()
        config = _smoke_copy(smoke, tmp_path / name, cpu_rollout="vllm", val_temperature=0.0)
        result = _lie(*_smoke_train_args(smoke, config), timeout=1200, env=env)
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]
        runs.append((config, RunDir(tmp_path / name / "out", PARENT)))
    (config, first), (_, second) = runs
    assert json.loads(first.run_json.read_text())["rollout"] == "vllm"
    merged = _lie("merge", PARENT, "--config", str(config), timeout=600, env=env)
    assert merged.returncode == 0, merged.stderr[-3000:]
    model_dir = tmp_path / "first" / "out" / "models" / PARENT
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    rows = [json.loads(line) for line in (first.root / "validation" / "4.jsonl").read_text().splitlines()]
    problems = pq.read_table(_smoke_inputs(smoke)[2][0]).to_pylist()  # in the dump's order (uid by row)
    assert len(rows) == len(problems) == 12
    exact, gaps = 0, []
    for row, problem in zip(rows, problems):
        chat = tokenizer.apply_chat_template(
            problem["prompt"], add_generation_prompt=True, tokenize=False, enable_thinking=False
        )
        prompt = tokenizer(chat, add_special_tokens=False)["input_ids"]
        assert tokenizer.decode(prompt, skip_special_tokens=True) == row["input"]  # verl's prompt
        chosen = tokenizer(row["output"], add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            logits = model(torch.tensor([prompt + chosen])).logits[0, len(prompt) - 1 : -1]
        gap = (logits.max(dim=-1).values - logits[torch.arange(len(chosen)), torch.tensor(chosen)]).max()
        gaps.append(float(gap))
        exact += float(gap) == 0.0
    assert max(gaps) < NEAR_TIE, gaps
    assert exact >= 10, gaps
    assert read_rollouts(second) == read_rollouts(first)
    dumps = [(run.root / "validation" / "4.jsonl").read_bytes() for run in (first, second)]
    assert dumps[1] == dumps[0]
    for a, b in zip(_comparable_metrics(first), _comparable_metrics(second)):
        assert a.keys() == b.keys() and a == pytest.approx(b, rel=1e-9)


@pytest.mark.heavy
def test_a_vllm_rollout_run_killed_mid_step_resumes_with_a_new_server(smoke, tmp_path):
    """Issue 32: SIGKILL of the whole process group (trainer, Ray, the vLLM server and its engine)
    after step 2's checkpoint; the rerun starts a new server, resumes from step 2 and trains steps 3
    and 4 once, its server synced again (its log-probs match the actor's)."""
    import re
    import signal
    import time

    config = _smoke_copy(smoke, tmp_path, cpu_rollout="vllm")
    rundir = RunDir(tmp_path / "out", PARENT)
    tracker = rundir.checkpoints / "latest_checkpointed_iteration.txt"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "lie", *_smoke_train_args(smoke, config)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, env=env,
    )  # fmt: skip
    deadline = time.monotonic() + 900
    while not (tracker.exists() and tracker.read_text().strip() == "2"):
        assert proc.poll() is None and time.monotonic() < deadline, "verl stopped before step 2's checkpoint"
        time.sleep(0.5)
    while not list(rundir.rollouts_dir.glob(f"step-{3:06d}.*")):  # into step 3: its rollouts are rewarded
        assert proc.poll() is None and time.monotonic() < deadline, "verl stopped before step 3's rollouts"
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not rundir.final_json.exists()
    result = _lie(*_smoke_train_args(smoke, config), timeout=1200, env=env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]
    out = result.stdout + result.stderr
    assert re.search(r"Resuming from \S*global_step_2\b", out) and "CPUvLLMHttpServer" in out, out[-3000:]
    rollouts = read_rollouts(rundir)
    assert [sum(r["step"] == s for r in rollouts) for s in (1, 2, 3, 4)] == [16, 16, 16, 16]
    metrics = read_metrics(rundir)
    assert [m["step"] for m in metrics] == [1, 2, 3, 4]
    assert all(m["training/rollout_actor_probs_pearson_corr"] > 0.999 for m in metrics)


def test_verls_own_merger_on_a_full_disk_names_the_file_and_leaves_what_a_rerun_replaces(smoke, tmp_path):
    """Issue 33: the real ``verl.model_merger`` (not a stand-in) writing the smoke parent's merged model
    where no file may pass 100 kB (RLIMIT_FSIZE: EFBIG, as ENOSPC on a full disk): one line naming the
    file it was writing, no output folder that looks complete, and what it left is a building folder the
    next ``lie merge`` takes as its own stale one (the DAG's merge job shows the merger writing a whole
    model; a rerun here took ~20 s more)."""
    import resource
    import signal

    from lie.formats.outputs import OWNER, _partial_problem, partial_folder

    def limited():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the process sees the error, as on a full disk
        resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))

    out = tmp_path / "merged"
    args = ("merge", PARENT, "--config", str(smoke.config_file), "--out", str(out))
    full = _lie(*args, timeout=600, preexec_fn=limited)
    assert full.returncode == 2 and "Traceback" not in full.stderr, full.stderr[-3000:]
    lines = [line for line in full.stderr.splitlines() if line.startswith("lie merge:")]
    assert (
        len(lines) == 1
        and f"cannot write {tmp_path}/.merged.partial/model.safetensors (File too large)" in lines[0]
    )
    assert not out.exists()
    left = tmp_path / ".merged.partial"
    assert left.is_dir() and _partial_problem(left, out) is None  # lie's own building folder, no lock held
    fresh = partial_folder(out)  # what the rerun's first step does: the stale folder replaced by an empty one
    assert fresh == left and sorted(p.name for p in fresh.iterdir()) == [OWNER]
