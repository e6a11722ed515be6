"""verl's real trainer on the CPU backend (lie.engines.verl.cpu): the sampler, the patches, and
``python -m verl.trainer.main_ppo`` end to end through ``lie train --engine verl``, ``lie merge``."""

from __future__ import annotations

import copy
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import torch
import yaml

pytest.importorskip("verl")

from small import arithmetic_rows, small_config, write_config, write_parquet  # noqa: E402
from smoke_run import CHILD, PARENT, SMOKE_GROUP, probe_env, smoke_run  # noqa: E402
from tripwires import run_probes  # noqa: E402

from lie.engines.sampling import TokenRequest, sample_batch  # noqa: E402
from lie.formats.runs import RunDir, read_metrics, read_rollouts  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def _answer_at_varied_lengths(model, tokenizer) -> None:
    """A few AdamW steps on answers after 0-8 filler words, closed by the end-of-turn token: rollouts
    then end at different lengths, with uneven per-token entropy (a token mean of the entropy and a
    mean of per-response means differ)."""
    from lie.formats.prompts import prompt_token_ids

    rng = random.Random(0)
    rows = arithmetic_rows(40)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    model.train()
    for _ in range(60):
        batch = []
        for row in rng.sample(rows, 8):
            prompt = prompt_token_ids(tokenizer, row["prompt"], enable_thinking=False)
            answer = (
                " so" * rng.randint(0, 8)
                + f" The answer is \\boxed{{{row['reward_model']['ground_truth']}}}."
            )
            batch.append(
                (prompt, tokenizer(answer, add_special_tokens=False).input_ids + [tokenizer.eos_token_id])
            )
        width = max(len(p) + len(r) for p, r in batch)
        ids = torch.full((len(batch), width), tokenizer.pad_token_id)
        labels = torch.full((len(batch), width), -100)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for i, (p, r) in enumerate(batch):
            ids[i, : len(p) + len(r)] = torch.tensor(p + r)
            labels[i, len(p) : len(p) + len(r)] = torch.tensor(r)
            mask[i, : len(p) + len(r)] = 1
        model(input_ids=ids, attention_mask=mask, labels=labels).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    model.eval()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, arith_tiny) -> Path:
    """The arithmetic tiny model (tests/conftest.py) after _answer_at_varied_lengths, in a folder of its own."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out = tmp_path_factory.mktemp("tiny") / "model"
    model = AutoModelForCausalLM.from_pretrained(arith_tiny, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(arith_tiny)
    _answer_at_varied_lengths(model, tokenizer)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def model(tiny):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(tiny, dtype=torch.float32, attn_implementation="sdpa").eval()


PROMPTS = [[5, 9, 31, 44, 7], [12, 3], [8, 8, 8, 60, 61, 62, 63, 2, 9]]


# ---- the batched sampler ------------------------------------------------------------------------


def _forward_log_probs(model, prompt: list[int], response: list[int]) -> list[float]:
    ids = torch.tensor([prompt + response])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0].float()
    log_probs = torch.log_softmax(logits, dim=-1)
    return [float(log_probs[len(prompt) - 1 + i, tok]) for i, tok in enumerate(response)]


def test_a_left_padded_batch_samples_what_each_prompt_alone_would(model):
    """Log-probs equal a teacher-forced forward of each row alone; greedy rows equal argmax decoding."""
    requests = [TokenRequest(p, max_tokens=12, temperature=1.0, seed=i) for i, p in enumerate(PROMPTS)]
    requests.append(TokenRequest(PROMPTS[0], max_tokens=12, temperature=0.0))
    samples = sample_batch(model, requests, eos_ids=[], pad_id=0)
    for request, sample in zip(requests, samples):
        assert len(sample.token_ids) == 12 and sample.finish_reason == "length"
        expected = _forward_log_probs(model, list(request.prompt_ids), sample.token_ids)
        assert sample.log_probs == pytest.approx(expected, abs=1e-4)
    greedy, ids = samples[-1].token_ids, list(PROMPTS[0])
    for token in greedy:
        with torch.no_grad():
            assert int(model(input_ids=torch.tensor([ids])).logits[0, -1].argmax()) == token
        ids.append(token)


def test_seeded_rows_do_not_depend_on_their_batch(model):
    alone = sample_batch(model, [TokenRequest(PROMPTS[1], max_tokens=10, seed=7)], eos_ids=[], pad_id=0)
    mixed = sample_batch(
        model,
        [TokenRequest(PROMPTS[2], max_tokens=4, seed=1), TokenRequest(PROMPTS[1], max_tokens=10, seed=7)],
        eos_ids=[],
        pad_id=0,
    )
    assert alone[0].token_ids == mixed[1].token_ids


def test_each_rollout_request_gets_a_seed_of_its_own_whatever_the_arrival_timing():
    """verl sends no seed: the server numbers a step's requests by prompt and settings, so the n
    samples of a prompt get n seeds that depend on the step and the prompt, never on timing."""
    from types import SimpleNamespace

    from lie.engines.verl.cpu.rollout import TransformersServer

    def server():
        return SimpleNamespace(
            config=SimpleNamespace(seed=42), global_steps=0, arrivals={}, arrivals_step=None
        )

    def seeds(srv, requests, step):
        srv.global_steps = step
        return [TransformersServer.request_seed(srv, r) for r in requests]

    a, b = TokenRequest([1, 2, 3], max_tokens=8), TokenRequest([4, 5], max_tokens=8)
    first = server()
    group = seeds(first, [a, a, a, a], 0)
    assert len(set(group)) == 4  # four samples of one prompt, four streams
    b_alone = seeds(server(), [b, b], 0)
    other = server()  # another run, another arrival order: b's requests first, interleaved
    assert seeds(other, [b, a, b, a, a, a], 0) == [b_alone[0], group[0], b_alone[1], *group[1:]]
    assert seeds(first, [a], 1)[0] not in group  # the next step starts again, on other seeds
    greedy = TokenRequest([1, 2, 3], max_tokens=8, temperature=0.0)
    assert seeds(server(), [greedy], 0)[0] != group[0]  # other settings, another key

    # tagged by our agent loop with (dataset index, session id): a sample's seed, whatever arrives first
    def tagged(srv, order):
        srv.global_steps = 0
        return {tag: TransformersServer.request_seed(srv, a, list(tag)) for tag in order}

    tags = [(7, 0), (7, 1), (7, 2), (7, 3)]
    assert (
        tagged(server(), tags)
        == tagged(server(), tags[::-1])
        == tagged(server(), [tags[2], *tags[:2], tags[3]])
    )
    assert len(set(tagged(server(), tags).values())) == 4


def test_top_k_one_and_a_tiny_top_p_are_greedy_and_temperature_matters(model):
    greedy = sample_batch(model, [TokenRequest(PROMPTS[0], 10, temperature=0.0)], [], 0)[0].token_ids
    for request in (TokenRequest(PROMPTS[0], 10, temperature=1.5, top_k=1, seed=3),
                    TokenRequest(PROMPTS[0], 10, temperature=1.5, top_p=1e-6, seed=3)):  # fmt: skip
        assert sample_batch(model, [request], [], 0)[0].token_ids == greedy
    hot = [
        sample_batch(model, [TokenRequest(PROMPTS[0], 10, temperature=5.0, seed=s)], [], 0)[0]
        for s in range(4)
    ]
    assert any(s.token_ids != greedy for s in hot)


def test_end_of_sequence_stops_a_row_unless_ignored(model):
    first = sample_batch(model, [TokenRequest(PROMPTS[2], 8, temperature=0.0)], [], 0)[0].token_ids[0]
    rows = sample_batch(
        model,
        [
            TokenRequest(PROMPTS[2], 8, temperature=0.0),
            TokenRequest(PROMPTS[2], 8, temperature=0.0, ignore_eos=True),
        ],
        eos_ids=[first],
        pad_id=0,
    )
    assert rows[0].token_ids == [first] and rows[0].finish_reason == "stop"  # the EOS is kept, as vLLM does
    assert len(rows[1].token_ids) == 8 and rows[1].finish_reason == "length"


# ---- the patches: each exists because a verl line still fails on a CPU ---------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def probes(tiny) -> dict:
    """The upstream lines our patches work around, each probed in a fresh interpreter of this environment
    (one process, a fork a probe: tests/tripwires.py), without verl settings of the calling process."""
    process_group = (  # If this changes, verl builds a valid CPU backend now: remove patches._init_process_group
        "import lie.engines.verl.cpu.platform\n"
        "import verl.utils.distributed as d\n"
        "try:\n    d.initialize_global_process_group_ray()\n    print('RAN')\n"
        "except Exception as e:\n    print('FAILED', e)\n"
    )
    distributed = {"VERL_PLATFORM": "cpu", "RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1",
                   "MASTER_PORT": str(_free_port())}  # fmt: skip
    value_head = (  # If this changes, verl (or TRL) fixed the import: remove patches._no_value_head_patch
        "from transformers import AutoModelForCausalLM\n"
        "from verl.models.transformers.monkey_patch import apply_monkey_patch\n"
        f"m = AutoModelForCausalLM.from_pretrained({str(tiny)!r})\n"
        "try:\n    apply_monkey_patch(m, use_remove_padding=True)\n    print('RAN')\n"
        "except ImportError as e:\n    print('FAILED', e)\n"
    )
    gpu_visible = (  # the plugin itself, imported where torch sees a GPU
        "import sys, torch\n"
        "torch.cuda.is_available = lambda: True\n"
        "try:\n    import lie.engines.verl.cpu.plugin\n"
        "except RuntimeError as e:\n    print('REFUSED', e)\n"
        "print(sorted(m for m in sys.modules if m.startswith('lie.engines.verl.cpu.')))"
    )
    clean = {k: v for k, v in os.environ.items() if not k.startswith("VERL_")}
    return run_probes(
        sys.executable,
        {
            "process_group": {"code": process_group, "env": distributed},
            "value_head": {"code": value_head},
            "gpu_visible": {"code": gpu_visible},
        },
        preload=("torch", "transformers"),
        env=clean,
    )


def test_verls_default_process_group_backend_still_fails_on_a_cpu(probes):
    """If this fails, verl builds a valid CPU backend now: remove patches._init_process_group."""
    out = probes["process_group"]
    assert "FAILED" in out.stdout and "Duplicate device type" in out.stdout, out.stdout + out.stderr


def test_verls_trl_value_head_import_still_fails(probes):
    """If this fails, verl (or TRL) fixed the import: remove patches._no_value_head_patch."""
    out = probes["value_head"]
    assert "FAILED" in out.stdout and "AutoModelForCausalLMWithValueHead" in out.stdout, (
        out.stdout + out.stderr
    )


def test_the_backend_is_refused_where_a_gpu_is_visible(probes):
    from lie.engines.verl import cpu as verl_cpu

    env = verl_cpu.environment({"CUDA_VISIBLE_DEVICES": "", "VERL_USE_EXTERNAL_MODULES": "other"})
    assert "CUDA_VISIBLE_DEVICES" not in env and env["VERL_PLATFORM"] == "cpu"
    assert env["VERL_USE_EXTERNAL_MODULES"] == f"other,{verl_cpu.PLUGIN}"
    # the plugin itself, imported where torch sees a GPU: refused before any of the backend loads
    out = probes["gpu_visible"]
    assert out.returncode == 0, out.stderr[-3000:]
    assert "REFUSED lie.engines.verl.cpu is verl's CPU backend" in out.stdout, out.stdout
    assert "unset VERL_USE_EXTERNAL_MODULES" in out.stdout
    assert out.stdout.strip().endswith("\n[]")  # no platform, engine or rollout module was loaded


# ---- verl's main_ppo, end to end on the CPU -----------------------------------------------------


def _setup(root: Path, tiny: Path, **training) -> Path:
    """A two-run config on the tiny model (thinking off), an arithmetic training set and a validation set."""
    settings = {
        "save_freq": 1,
        "max_steps": 2,
        "val_sets": ["arith-val"],
        "test_freq": 2,
        "keep_checkpoints": 3,
    }
    config = small_config(root / "out", tiny, **{**settings, **training})
    config["models"]["tiny"]["enable_thinking"] = False
    config["datasets"]["eval"]["arith-val"] = copy.deepcopy(config["datasets"]["eval"]["math500"])
    config["experiments"]["tiny_gspo_lie"]["extra_tokens"] = 8
    config["reward"]["tolerance"] = 8  # L_ref 40 - 8 > the 24-token limit: every wrong answer gets R_len
    write_parquet(root / "train.parquet", arithmetic_rows(8, ref_len=40))
    val = arithmetic_rows(4)
    for row in val:
        row["data_source"] = "arith-val"
        del row["reward_model"]["num_tokens"]
    write_parquet(root / "val.parquet", val)
    return write_config(root / "config.yaml", config)


def _lie(*args: str, **kwargs) -> subprocess.Popen | subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lie", *args], capture_output=True, text=True, **kwargs)


def _train_args(root: Path, tiny: Path, run: str = "tiny_gspo_lie") -> list[str]:
    return ["train", run, "--config", str(root / "config.yaml"), "--engine", "verl",
            "--train-file", str(root / "train.parquet"), "--val-file", str(root / "val.parquet"),
            "--model", str(tiny)]  # fmt: skip


# The tests below read the verl runs of the one smoke DAG run (tests/smoke_run.py): GSPO+LIE on the tiny
# model, 4 steps of 4 prompts x 4 samples, checkpoints at steps 2 and 4, validation at step 4 (accuracy
# only, 12 rows), then its continual child; verl's processes loaded tests/verl_probe.py.


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    return smoke_run(tmp_path_factory)


def _smoke_inputs(smoke) -> tuple[Path, Path, list[Path]]:
    """The smoke verl run's training file, initial model and validation files, as the DAG gave them."""
    from lie.config import RunSettings, load_config
    from lie.config.layout import Layout

    config = load_config(smoke.config_file)
    layout, settings = Layout(config), RunSettings.of(config, PARENT)
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


@SMOKE_GROUP
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


@SMOKE_GROUP
def test_the_logged_entropy_is_a_token_mean_in_a_gspo_run(smoke):
    """verl aggregates actor/entropy with the run's loss_agg_mode (GSPO: a mean of per-response
    means); lie.engines.verl.trainer logs the token mean of the same entropies, as the authors' logs."""
    calls = [json.loads(line) for line in smoke.entropy.read_text().splitlines()]
    metrics = [*read_metrics(RunDir(smoke.out, PARENT)), *read_metrics(RunDir(smoke.out, CHILD))]
    assert len(calls) == len(metrics) == 8  # the parent's 4 steps, then its child's
    gaps = []
    for call, step in zip(calls, metrics):
        assert call["mode"] == "seq-mean-token-mean"  # what verl itself would have logged
        rows = call["rows"]
        token_mean = sum(map(sum, rows)) / sum(map(len, rows))
        gaps.append(abs(token_mean - sum(sum(r) / len(r) for r in rows) / len(rows)))
        assert step["actor/entropy"] == pytest.approx(token_mean, abs=1e-6)
    assert max(gaps) > 1e-4  # responses of different lengths: the two means differ here


@SMOKE_GROUP
def test_the_thinking_flag_reaches_verls_prompts(smoke):
    dump = smoke.out / "runs" / PARENT / "validation" / "4.jsonl"
    inputs = [json.loads(line)["input"] for line in dump.read_text().splitlines()]
    assert inputs and all(text.endswith("assistant\n<think>\n\n</think>\n\n") for text in inputs)


@SMOKE_GROUP
def test_validation_rows_are_scored_by_accuracy_only(smoke):
    rundir = RunDir(smoke.out, PARENT)
    rows = [json.loads(line) for line in (rundir.root / "validation" / "4.jsonl").read_text().splitlines()]
    assert len(rows) == 12  # arith-test
    assert all(r["r_len"] == 0 and r["r_red"] == 0 and r["score"] == r["acc"] for r in rows)
    assert all(r["num_tokens"] > 0 for r in rows)
    metrics = read_metrics(rundir)[-1]
    assert "val-core/arith-test/acc/mean@1" in metrics


@SMOKE_GROUP
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


@SMOKE_GROUP
def test_a_rerun_with_the_same_settings_does_not_train_again(smoke):
    run = smoke.out / "runs" / PARENT
    weights = run / "checkpoints/global_step_4/actor/model_world_size_1_rank_0.pt"
    files = lambda: sorted(str(p.relative_to(run)) for p in run.rglob("*"))  # noqa: E731
    before = (files(), weights.stat().st_mtime_ns)
    result = _lie(*_smoke_train_args(smoke), timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "running verl" not in result.stderr
    assert (files(), weights.stat().st_mtime_ns) == before  # no new file, the weights not rewritten
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


@SMOKE_GROUP
def test_two_clean_runs_train_identically(smoke, tmp_path):
    """The smoke's verl run again, alone, from the same inputs: the same rollouts (every sample's
    response and reward, under the same group and sample id, in the same order), the same metrics (but
    wall times and the diagnostics of the rollout server's log-probs), the same validation file (prompts
    named by step and row, not verl's uuid4), bit-identical weights at every saved step."""
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


@pytest.mark.heavy
def test_a_killed_run_resumes_from_its_last_complete_checkpoint(tmp_path, tiny):
    """SIGKILL of the whole process group after step 1's checkpoint; the rerun finishes step 2 once."""
    _setup(tmp_path, tiny, max_steps=3)
    rundir = RunDir(tmp_path / "out", "tiny_gspo_lie")
    tracker = rundir.checkpoints / "latest_checkpointed_iteration.txt"
    proc = subprocess.Popen(
        [sys.executable, "-m", "lie", *_train_args(tmp_path, tiny)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 600
    while not (tracker.exists() and tracker.read_text().strip() == "1"):
        assert proc.poll() is None and time.monotonic() < deadline, "verl stopped before its first checkpoint"
        time.sleep(0.5)
    time.sleep(1.0)  # into step 2
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not rundir.final_json.exists()
    result = _lie(*_train_args(tmp_path, tiny), timeout=900)
    assert result.returncode == 0, result.stderr[-4000:]
    # verl's trainer prints the folder it resumes from: step 1's checkpoint, not a fresh start
    assert re.search(r"Resuming from \S*global_step_1\b", result.stdout + result.stderr), result.stdout[
        -3000:
    ]
    rollouts = read_rollouts(rundir)
    assert [sum(r["step"] == s for r in rollouts) for s in (1, 2, 3)] == [8, 8, 8]  # nothing doubled
    assert json.loads(rundir.final_json.read_text())["step"] == 3
    assert [m["step"] for m in read_metrics(rundir)] == [1, 2, 3]


@SMOKE_GROUP
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


@pytest.mark.heavy
def test_a_resume_at_another_world_size_stops_with_one_line_or_restarts(tmp_path, tiny):
    """verl loads only FSDP shards of its own world size (model_world_size_{W}_rank_{r}.pt): a run
    saved by 2 CPU ranks (`--nnodes 2`, as the Slurm launcher passes it) and launched again with 1
    stops before verl starts, naming both sizes; with training.world_size_change: restart it trains
    afresh at the new size, the old outputs set aside."""
    from lie.engines.verl.overrides import COMPLETED

    config_file = _setup(tmp_path, tiny, max_steps=1)
    rundir = RunDir(tmp_path / "out", "tiny_gspo_lie")
    result = _lie(*_train_args(tmp_path, tiny), "--nnodes", "2", timeout=900)
    assert result.returncode == 0, result.stderr[-4000:]
    assert (rundir.checkpoints / "global_step_1/actor/model_world_size_2_rank_1.pt").is_file()
    # as after a kill between verl's last save and its exit: lie has not marked the run complete
    (rundir.checkpoints / COMPLETED).unlink()
    rundir.final_json.unlink()
    result = _lie(*_train_args(tmp_path, tiny), "--nnodes", "1", timeout=300)
    assert result.returncode != 0 and "running verl" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert "saved by 2 FSDP ranks and this launch has 1" in last and "world_size_change: restart" in last
    assert (rundir.checkpoints / "global_step_1/actor/model_world_size_2_rank_0.pt").is_file()  # untouched

    config = yaml.safe_load(config_file.read_text())
    config["training"]["world_size_change"] = "restart"
    config_file.write_text(yaml.safe_dump(config, sort_keys=False))
    result = _lie(*_train_args(tmp_path, tiny), "--nnodes", "1", timeout=900)
    assert result.returncode == 0, result.stderr[-4000:]
    assert (rundir.checkpoints / "global_step_1/actor/model_world_size_1_rank_0.pt").is_file()
    (moved,) = rundir.superseded.iterdir()
    assert (moved / "checkpoints/global_step_1/actor/model_world_size_2_rank_0.pt").is_file()
    assert len(read_rollouts(moved)) == 8 and len(read_rollouts(rundir)) == 8
    assert json.loads(rundir.final_json.read_text())["step"] == 1
