"""``lie base-model``: a pinned snapshot from a pre-filled hub cache (offline), and tiny models;
model folders written on a full disk (base-model, TRL's checkpoints): one line naming the file, and
nothing that looks complete. The cheap model-folder cases (a corrupt folder given to generate,
reflen, evaluate, train) are rows of tests/test_hostile_inputs.py.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from hubcache import add_dataset, pinned_revision, standin_hub_api
from small import REPO, arithmetic_rows, write_parquet

from lie.config import Config

pytestmark = pytest.mark.slow


def _run(args, env_extra, cwd):
    env = {**os.environ, **env_extra}
    return subprocess.run(
        [sys.executable, "-m", "lie", *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def tiny_files(tmp_path_factory):
    from lie.stages.tiny import build_tiny

    folder = build_tiny(tmp_path_factory.mktemp("tiny") / "m", ["What is 1 + 1?"], vocab_size=300)
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


def test_fetches_the_pinned_revision_offline_from_the_hub_cache(tmp_path, tiny_files):
    cache = tmp_path / "hub"
    commit = add_dataset(cache, "Qwen/Qwen3-4B-Base", tiny_files, repo_type="models")
    assert commit == pinned_revision("Qwen/Qwen3-4B-Base")  # the SHA config.yaml pins
    out = tmp_path / "base"
    env = {"HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
    proc = _run(
        ["base-model", "qwen3-4b-base", "--config", "config.yaml", "--out", str(out)],
        env,
        os.getcwd(),
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    source = json.loads((out / "lie_source.json").read_text())
    assert source == {"hf_id": "Qwen/Qwen3-4B-Base", "revision": commit, "commit": commit}
    from transformers import AutoModelForCausalLM

    AutoModelForCausalLM.from_pretrained(out)
    assert not (out / ".cache").exists() and not list(tmp_path.glob(".base.partial"))


def test_missing_model_says_what_to_do(tmp_path):
    env = {"HF_HUB_CACHE": str(tmp_path / "empty"), "HF_HUB_OFFLINE": "1"}
    out = tmp_path / "base"
    proc = _run(
        ["base-model", "qwen3-8b-base", "--config", "config.yaml", "--out", str(out)],
        env,
        os.getcwd(),
    )
    assert proc.returncode == 2
    assert (
        "models.qwen3-8b-base: Qwen/Qwen3-8B-Base@49e3418" in proc.stderr
        and "set models.qwen3-8b-base.path" in proc.stderr
    )
    assert not out.exists()


def test_builds_a_tiny_model_from_its_corpus(tmp_path):
    from small import paper_config, write_config

    config = paper_config()
    config["outdir"] = str(tmp_path / "out")
    config["models"]["toy"] = {
        "hf_id": None, "revision": None, "enable_thinking": None, "path": None,
        "tiny": {"seed": 3, "vocab_size": 320, "hidden": 32, "layers": 1, "corpus": ["arith"]},
    }  # fmt: skip
    config["datasets"]["train"]["arith"] = dict(
        config["datasets"]["train"]["dapo"]
    )  # the corpus is a data set
    cfg = write_config(tmp_path / "c.yaml", config)
    corpus = write_parquet(tmp_path / "arith.parquet", arithmetic_rows(10))
    proc = _run(["base-model", "toy", "--config", str(cfg), "--corpus", str(corpus)], {}, os.getcwd())
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = tmp_path / "out" / "base" / "toy"
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(out)
    assert model.config.hidden_size == 32 and model.config.num_hidden_layers == 1
    tok = AutoTokenizer.from_pretrained(out)
    text = "What is 3 + 4? Answer within \\boxed{}."
    assert tok.decode(tok(text)["input_ids"]) == text  # byte-level: any text round-trips
    assert len(tok(text)["input_ids"]) < len(text) / 2  # trained on the corpus: compact


def test_the_preflight_fetches_the_largest_model_of_each_shape_offline(tmp_path, tiny_files):
    """Issue 31 defect 7: on a fresh checkout every GPU trial stopped at "no downloaded model";
    ``lie preflight --fetch`` downloads them as the DAG's base_model rule does."""
    from small import paper_config, write_config

    cache = tmp_path / "hub"
    add_dataset(cache, "Qwen/Qwen3-8B-Base", tiny_files, repo_type="models")
    config = paper_config()
    config["outdir"] = str(tmp_path / "out")
    path = write_config(tmp_path / "c.yaml", config)
    env = {"HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
    runs = ["--runs", "qwen3-1.7b-base_dapo_gspo", "qwen3-8b-base_dapo_gspo_lie"]
    proc = _run(["preflight", "--fetch", "--config", str(path), *runs], env, os.getcwd())
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "preflight --fetch: qwen3-8b-base;" in proc.stdout
    assert (tmp_path / "out" / "base" / "qwen3-8b-base" / "config.json").exists()
    assert not (tmp_path / "out" / "base" / "qwen3-1.7b-base").exists()  # one shape: its largest model
    again = _run(["preflight", "--fetch", "--config", str(path), *runs], env, os.getcwd())
    assert again.returncode == 0 and "nothing to fetch" in again.stdout


@pytest.mark.parametrize(
    ("code", "message"),
    [
        (
            "RepoNotFound",
            r"Qwen/Qwen3-4B-Base@\w+ not found or not accessible \(RepositoryNotFoundError\); check the id",
        ),
        ("GatedRepo", r"not found or not accessible \(GatedRepoError\); check the id, or set HF_TOKEN"),
        ("RevisionNotFound", r"models\.qwen3-4b-base: Qwen/Qwen3-4B-Base@\w+: that revision does not exist"),
    ],
)
def test_what_the_hub_answers_for_a_model_is_one_line(tmp_path, monkeypatch, code, message):
    """`lie base-model` online, the hub's answers from a stand-in of its API (tests/hubcache.py)."""
    from huggingface_hub import constants
    from small import paper_config

    from lie.core.errors import LieError
    from lie.stages.base_model import make_base_model

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    config = paper_config()
    with standin_hub_api(monkeypatch) as answer:
        answer.update(status=403 if code == "GatedRepo" else 404, code=code)
        with pytest.raises(LieError, match=message) as info:
            make_base_model(Config.of(config), "qwen3-4b-base", tmp_path / "base")
    assert "\n" not in str(info.value) and "hf_standin" not in str(info.value)
    assert not (tmp_path / "base").exists()


SMOKE = Path(__file__).resolve().parents[1] / "workflow" / "configs" / "smoke.yaml"


def _file_limit(limit):
    """A child's setup where no file may grow past ``limit`` bytes (RLIMIT_FSIZE: writes fail with EFBIG,
    as on a full disk; SIGXFSZ ignored so the process sees the error instead of dying of the signal)."""

    def limited():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return limited


def _run_with_file_limit(args, limit, cwd):
    """``lie ARGS`` under :func:`_file_limit`."""
    return subprocess.run(
        [sys.executable, "-m", "lie", *args], cwd=cwd, capture_output=True, text=True, timeout=300,
        preexec_fn=_file_limit(limit),
    )  # fmt: skip


def _one_line(proc, command):
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    mine = [line for line in proc.stderr.splitlines() if line.startswith(f"lie {command}:")]
    assert len(mine) == 1, proc.stderr[-3000:]
    return mine[0]


@pytest.fixture(scope="module")
def smoke_data(tmp_path_factory):
    import yaml

    from lie.stages.data.build import build_dataset

    folder = tmp_path_factory.mktemp("smoke-data")
    config = yaml.safe_load(SMOKE.read_text(encoding="utf-8"))
    for name in ("arith-train", "arith-test"):
        build_dataset(Config.of(config), name, folder / f"{name}.parquet", progress=False)
    return folder


def test_a_full_disk_while_building_a_tiny_model_names_the_file(tmp_path, smoke_data):
    """Issue 33: safetensors' own error (no errno, no file name) was a traceback; the folder never appears."""
    out = tmp_path / "tiny"
    corpus = [
        a for name in ("arith-train", "arith-test") for a in ("--corpus", str(smoke_data / f"{name}.parquet"))
    ]
    proc = _run_with_file_limit(["base-model", "tiny", "--config", str(SMOKE), "--out", str(out), *corpus],
                                100_000, tmp_path)  # fmt: skip
    line = _one_line(proc, "base-model")
    assert line.startswith(f"lie base-model: error: cannot write {tmp_path}/.tiny.partial/model.safetensors "
                           "(File too large) while building"), line  # fmt: skip
    assert not out.exists()


@pytest.mark.parametrize(
    "limit, file",
    [(200_000, "model.safetensors"), pytest.param(600_000, "optimizer.pt", marks=pytest.mark.heavy)],
)  # torch's own save on a full disk: make test-all (the same wrapper as safetensors' error; ~12 s)
def test_a_full_disk_while_trl_saves_a_checkpoint_names_the_file(tmp_path, arith_tiny, limit, file):
    """Issue 33: TRL's checkpoint save on a full disk (safetensors' or torch's own error) was a
    traceback; the checkpoint stays unsealed, so neither a rerun nor ``lie merge`` takes it."""
    from small import small_config, write_config

    from lie.engines.trl.train import SEAL

    config = small_config(tmp_path / "out", arith_tiny, max_steps=1)
    path = write_config(tmp_path / "c.yaml", config)
    train = write_parquet(tmp_path / "train.parquet", arithmetic_rows(8, ref_len=600))
    args = ["train", "tiny_grpo", "--config", str(path), "--engine", "trl", "--train-file", str(train),
            "--model", str(arith_tiny), "--threads", "1"]  # fmt: skip
    line = _one_line(_run_with_file_limit(args, limit, tmp_path), "train")
    checkpoint = tmp_path / "out" / "runs" / "tiny_grpo" / "checkpoints" / "checkpoint-1"
    assert line.startswith(f"lie train: error: cannot write {checkpoint / file} ("), line
    assert (
        not (checkpoint / SEAL).exists()
        and not (tmp_path / "out" / "runs" / "tiny_grpo" / "final.json").exists()
    )


TORCH_SAVE_ON_A_FULL_DISK = """
import sys, torch
from pathlib import Path
from lie.engines.trl.train import save_failure
folder = Path(sys.argv[1])
(folder / "model.safetensors").write_bytes(b"0")
try:
    torch.save({"exp_avg": torch.zeros(100_000)}, folder / "optimizer.pt")
except Exception as exc:
    print(save_failure(exc, folder))
"""


def test_torchs_own_save_on_a_full_disk_is_named_by_its_file(tmp_path):
    """torch.save's error names no file (its C++ writer's message): the checkpoint's newest pickle is
    the one named. The same save inside TRL's trainer: the heavy case of the test above."""
    proc = subprocess.run(
        [sys.executable, "-c", TORCH_SAVE_ON_A_FULL_DISK, str(tmp_path)], capture_output=True, text=True,
        timeout=120, preexec_fn=_file_limit(100_000),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith(f"cannot write {tmp_path / 'optimizer.pt'} ("), proc.stdout


def test_a_full_disk_while_merging_a_trl_run_names_the_file_and_leaves_no_model(tmp_path, arith_tiny, caplog):
    """``lie merge`` of a TRL run copies the checkpoint's model files; a write that fails (a full disk)
    is one line naming the file, and no merged model appears (the partial folder is never renamed)."""
    from small import lie_in_process, small_config, write_config

    config = small_config(tmp_path / "out", arith_tiny, max_steps=1)
    path = write_config(tmp_path / "c.yaml", config)
    train = write_parquet(tmp_path / "train.parquet", arithmetic_rows(4, ref_len=600))
    lie_in_process(
        caplog, "train", "tiny_grpo", "--config", str(path), "--engine", "trl", "--train-file", str(train)
    )
    line = _one_line(
        _run_with_file_limit(["merge", "tiny_grpo", "--config", str(path)], 200_000, tmp_path), "merge"
    )
    assert (
        line.startswith("lie merge: error: cannot write ") and "model.safetensors: File too large" in line
    ), line
    assert line.endswith("free space and rerun"), line
    assert not (tmp_path / "out" / "models" / "tiny_grpo").exists()


def test_only_a_refused_write_becomes_the_builds_one_line(tmp_path):
    """While a model folder is written, a write the file system refused is one line naming the file;
    a LieError already saying what is wrong, and any other error (a bug), go on as they are."""
    import errno

    from lie.core.errors import LieError
    from lie.stages.base_model import _writing

    tmp, out = tmp_path / ".tiny.partial", tmp_path / "tiny"
    with pytest.raises(LieError, match=r"cannot write .*\(No space left on device\) while building .*tiny"):
        with _writing(tmp, out):
            raise OSError(errno.ENOSPC, "No space left on device", str(tmp / "model.safetensors"))
    with pytest.raises(LieError, match="^already one line$"):
        with _writing(tmp, out):
            raise LieError("already one line")
    with pytest.raises(KeyError, match="a bug"):
        with _writing(tmp, out):
            raise KeyError("a bug")


def test_a_model_name_resolves_to_its_path_else_the_folder_lie_built(tmp_path):
    """``--model NAME`` (lie generate, reflen, study-probe): ``models.NAME.path`` wins, else the folder
    ``lie base-model NAME`` built under the outdir; a tiny model not built yet, or a hub model without
    a pinned revision, is one line saying what to run or set."""
    from lie.config import read_config
    from lie.config.layout import Layout
    from lie.core.errors import LieError
    from lie.stages.base_model import resolve_model

    config = read_config(REPO / "workflow" / "configs" / "smoke.yaml")
    config["outdir"] = str(tmp_path / "out")
    with pytest.raises(
        LieError, match=r"models.tiny is a tiny model not built yet: run `lie base-model tiny`"
    ):
        resolve_model(Config.of(config), "tiny")
    built = Layout(Config.of(config)).base_model("tiny")
    built.mkdir(parents=True)
    assert resolve_model(Config.of(config), "tiny")[0] == str(built)
    config["models"] = {
        **config["models"],
        "tiny": {**config["models"]["tiny"], "path": str(tmp_path / "mine")},
    }
    assert resolve_model(Config.of(config), "tiny")[0] == str(tmp_path / "mine")
    config["models"]["hub"] = {"hf_id": "Qwen/Qwen3-4B-Base", "revision": None, "path": None}
    with pytest.raises(
        LieError, match=r"models.hub: set hf_id and revision \(a commit SHA, tag or branch\), or path"
    ):
        resolve_model(Config.of(config), "hub")


def test_lie_base_model_refuses_what_it_cannot_build_before_it_builds(tmp_path):
    """``lie base-model``: a tiny model with a key it does not know, a config without its math prompt
    (the typed config refuses it as it loads), and a model that is a local folder (nothing to fetch) are one line each, and
    no output folder is made."""
    import copy

    from lie.config import read_config
    from lie.core.errors import LieError
    from lie.stages.base_model import make_base_model

    smoke = read_config(REPO / "workflow" / "configs" / "smoke.yaml")
    smoke["outdir"] = str(tmp_path / "out")
    sft = {"task": "arithmetic", "seed": 0, "problems": 8, "min_depth": 1, "max_depth": 2, "stop_prob": 0.5,
           "pad_prob": 0.0, "pad_repeats": 0, "steps": 2, "full_steps": 1, "batch_size": 2, "lr": 1e-3,
           "warmup_steps": 0}  # fmt: skip
    cases = [
        (
            {"tiny": {**smoke["models"]["tiny"]["tiny"], "width": 3}},
            None,
            r"models.tiny.tiny: unknown key\(s\) width",
        ),
        ({"sft": sft}, {}, "key 'prompt.math' is missing"),
        (
            {"tiny": None, "path": str(tmp_path / "mine")},
            None,
            r"models.tiny points at a local folder .*nothing to fetch",
        ),
    ]
    for change, prompt, message in cases:
        config = copy.deepcopy(smoke)
        config["models"]["tiny"].update(change)
        if prompt is not None:
            config["prompt"] = prompt
        with pytest.raises(LieError, match=message):
            make_base_model(Config.of(config), "tiny", out=tmp_path / "built")
        assert not (tmp_path / "built").exists() and not list(tmp_path.glob(".built.*"))
