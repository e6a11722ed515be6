"""Kills at random points, a full disk, two Snakemakes on one outdir: then a rerun finishes, and what it
writes equals a run that was never disturbed.

* SIGKILL, SIGINT and SIGTERM at a random moment of ``lie generate`` (transformers, small shards),
  ``lie evaluate`` and ``lie train`` (TRL), then the same command again: the output is byte for byte
  (generate, evaluate) or value for value (TRL's weights) an undisturbed run's. verl's kills are
  tests/test_faults.py's; ``lie report``'s and the study figures' SIGTERM tests/test_sigterm.py's.
* A full disk (a tmpfs filled to the last byte, as root) under ``lie score``, ``lie grade``,
  ``lie data``, ``lie generate``, ``lie evaluate`` and ``lie merge``: one line naming the file, nothing
  under the output's name, and once space is freed the same command finishes.
* Two ``lie snakemake`` on one outdir from two working folders (Snakemake's own lock is per working
  folder): both finish, or the second stops with lie's one line naming the lock, and the models and
  data they built are whole.

Heavy (a few minutes in all on a 2-vCPU VM): ``make test-all``.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
SMOKE = REPO / "workflow" / "configs" / "smoke.yaml"
LIE = str(Path(sys.executable).parent / "lie")
pytestmark = pytest.mark.heavy
SIGNALS = [signal.SIGKILL, signal.SIGINT, signal.SIGTERM]


def _env() -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1",
            "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}  # fmt: skip


def _run(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([LIE, *args], capture_output=True, text=True, timeout=timeout, env=_env())


def _interrupted(args: list[str], sig: int, after: float, started: Callable[[], bool] | None = None) -> int:
    """``lie ARGS`` sent ``sig`` ``after`` seconds after ``started()`` holds (from its start without one), or
    finished before; its exit status."""
    proc = subprocess.Popen([LIE, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=_env(), start_new_session=True)  # fmt: skip
    deadline = time.monotonic() + 300
    while started is not None and not started() and proc.poll() is None:
        assert time.monotonic() < deadline, "the command never started its work"
        time.sleep(0.05)
    try:
        proc.wait(timeout=after)
    except subprocess.TimeoutExpired:
        proc.send_signal(sig)
    proc.communicate(timeout=300)
    return proc.returncode


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def inputs(tmp_path_factory, arith_tiny) -> Path:
    """The tiny model, the smoke config and its test set."""
    from lie.config import Config
    from lie.stages.data.build import build_dataset

    root = tmp_path_factory.mktemp("kill-inputs")
    config = yaml.safe_load(SMOKE.read_text(encoding="utf-8"))
    config["outdir"] = str(root / "results")
    (root / "c.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    for name in ("test", "train"):
        build_dataset(Config.of(config), f"arith-{name}", root / f"{name}.parquet", progress=False)
    shutil.copytree(arith_tiny, root / "m", ignore=shutil.ignore_patterns(".*", "lie_output.json"))
    return root


def _generate(inputs: Path, out: Path) -> list[str]:
    return ["generate", "arith-test", "--config", str(inputs / "c.yaml"), "--model", str(inputs / "m"),
            "--data", str(inputs / "test.parquet"), "--out", str(out), "--engine", "hf", "--n", "4",
            "--shard-size", "4", "--no-progress"]  # fmt: skip


def _evaluate(inputs: Path, gen: Path, out: Path) -> list[str]:
    return ["evaluate", "--config", str(inputs / "c.yaml"), "--gen", str(gen), "--tokenizer", str(inputs / "m"),
            "--out-scores", str(out / "scores.jsonl"), "--out-summary", str(out / "summary.json"),
            "--no-progress", "--workers", "1"]  # fmt: skip


@pytest.fixture(scope="module")
def clean(inputs, tmp_path_factory) -> Path:
    """Undisturbed runs of generate and evaluate, to compare against."""
    root = tmp_path_factory.mktemp("clean")
    assert _run(*_generate(inputs, root / "gen.jsonl")).returncode == 0
    assert _run(*_evaluate(inputs, root / "gen.jsonl", root)).returncode == 0
    return root


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_generate_killed_at_a_random_moment_resumes_to_the_same_file(inputs, clean, tmp_path, sig):
    out = tmp_path / "gen.jsonl"
    shards = tmp_path / "gen.jsonl.shards"
    after = random.Random(int(sig)).uniform(0, 1)  # inside the shards (seeded: repeatable)
    status = _interrupted(_generate(inputs, out), sig, after, lambda: any(shards.glob("shard-*.seal.json")))
    assert status in (0, -signal.SIGKILL, 130, 143), status
    if status != 0:
        assert not out.exists()  # nothing looks finished
    proc = _run(*_generate(inputs, out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _digest(out) == _digest(clean / "gen.jsonl")
    assert not (tmp_path / "gen.jsonl.shards").exists()


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_evaluate_killed_at_a_random_moment_reruns_to_the_same_scores(inputs, clean, tmp_path, sig):
    after = random.Random(10 + int(sig)).uniform(2, 8)
    status = _interrupted(_evaluate(inputs, clean / "gen.jsonl", tmp_path), sig, after)
    assert status in (0, -signal.SIGKILL, 130, 143), status
    if status != 0:
        assert not (tmp_path / "summary.json").exists()
    proc = _run(*_evaluate(inputs, clean / "gen.jsonl", tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    for name in ("scores.jsonl", "summary.json"):
        assert _digest(tmp_path / name) == _digest(clean / name), name
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scores.jsonl", "summary.json"]


def _trl(inputs: Path, config: Path) -> list[str]:
    return ["train", "smoke_grpo", "--config", str(config), "--engine", "trl", "--model", str(inputs / "m"),
            "--train-file", str(inputs / "train.parquet"), "--threads", "1"]  # fmt: skip


def _trl_config(inputs: Path, root: Path) -> Path:
    config = yaml.safe_load((inputs / "c.yaml").read_text(encoding="utf-8"))
    config["outdir"] = str(root / "results")
    path = root / "c.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def _final_weights(root: Path) -> dict[str, bytes]:
    from safetensors.numpy import load_file

    final = json.loads((root / "results" / "runs" / "smoke_grpo" / "final.json").read_text())
    weights = load_file(str(Path(final["checkpoint"]) / "model.safetensors"))
    return {k: v.tobytes() for k, v in weights.items()}


@pytest.fixture(scope="module")
def clean_trl(inputs, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("clean-trl")
    proc = _run(*_trl(inputs, _trl_config(inputs, root)))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return root


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_trl_training_killed_at_a_random_moment_resumes_to_the_same_weights(inputs, clean_trl, tmp_path, sig):
    config = _trl_config(inputs, tmp_path)
    after = random.Random(20 + int(sig)).uniform(10, 30)
    status = _interrupted(_trl(inputs, config), sig, after)
    assert status in (0, -signal.SIGKILL, 130, 143), status
    proc = _run(*_trl(inputs, config))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _final_weights(tmp_path) == _final_weights(clean_trl)


# a full disk --------------------------------------------------------------------------------------


@contextlib.contextmanager
def full_disk(where: Path, size_kb: int = 8192) -> Iterator[Path]:
    """A tmpfs at ``where`` filled to its last byte by ``filler``; removing the filler frees it."""
    where.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kb}k", "tmpfs", str(where)],
                          capture_output=True, text=True)  # fmt: skip
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs (root only): {proc.stderr.strip()}")
    try:
        fd = os.open(where / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            while os.write(fd, b"\0" * 4096):
                pass
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
        finally:
            os.close(fd)
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def _merge_setup(inputs: Path, root: Path) -> list[str]:
    """A finished TRL run of the smoke config (a sealed copy of the tiny model as its checkpoint)."""
    from lie.engines.trl.train import seal_checkpoint
    from lie.formats.runs import RunDir

    config = _trl_config(inputs, root)
    rundir = RunDir(root / "results", "smoke_grpo")
    checkpoint = rundir.checkpoints / "checkpoint-4"
    shutil.copytree(inputs / "m", checkpoint)
    (checkpoint / "trainer_state.json").write_text("{}")
    seal_checkpoint(checkpoint)
    rundir.final_json.write_text(json.dumps({"engine": "trl", "checkpoint": str(checkpoint), "step": 4}))
    return ["merge", "smoke_grpo", "--config", str(config)]


def _score_input(root: Path) -> Path:
    rows = root / "in.jsonl"
    row = {"response": "Wait, 1 + 1 = 2. " * 20, "correct": True, "num_tokens": 120, "ref_len": 100,
           "answer": "2", "gold": "2", "kind": "math"}  # fmt: skip
    rows.write_text("".join(json.dumps(row) + "\n" for _ in range(400)))
    return rows


WRITERS = {
    "score": lambda inputs, root, out: ["score", "--in", str(_score_input(root)), "--out", str(out / "o.jsonl")],
    "grade": lambda inputs, root, out: ["grade", "--in", str(_score_input(root)), "--out", str(out / "o.jsonl"),
                                        "--workers", "1", "--no-progress"],
    "data": lambda inputs, root, out: ["data", "arith-train", "--config", str(inputs / "c.yaml"),
                                       "--out", str(out / "o.parquet"), "--no-progress"],
    "generate": lambda inputs, root, out: _generate(inputs, out / "gen.jsonl"),
    "evaluate": lambda inputs, root, out: _evaluate(inputs, inputs / "clean-gen.jsonl", out),
    "merge": lambda inputs, root, out: [*_merge_setup(inputs, root), "--out", str(out / "merged")],
}  # fmt: skip


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_full_disk_under_a_writer_is_one_line_and_the_rerun_finishes(inputs, clean, tmp_path, writer):
    if not (inputs / "clean-gen.jsonl").exists():
        shutil.copy(clean / "gen.jsonl", inputs / "clean-gen.jsonl")
    with full_disk(tmp_path / "disk") as disk:
        args = WRITERS[writer](inputs, tmp_path, disk)
        proc = _run(*args)
        assert proc.returncode == 2, proc.stderr[-3000:]
        lines = [line for line in proc.stderr.splitlines() if line.startswith(f"lie {writer}:")]
        assert len(lines) == 1 and "No space left on device" in lines[0], proc.stderr[-3000:]
        assert "Traceback" not in proc.stderr
        left = sorted(p.name for p in disk.iterdir() if p.name != "filler" and not p.name.startswith("."))
        assert left in ([], ["gen.jsonl.shards"]), (
            left
        )  # nothing under an output's name (a shard folder resumes)
        (disk / "filler").unlink()
        proc = _run(*args)
        assert proc.returncode == 0, proc.stderr[-3000:]


# two Snakemakes on one outdir ---------------------------------------------------------------------


def test_two_lie_snakemakes_on_one_outdir_build_whole_outputs(tmp_path):
    outdir = tmp_path / "out"
    config = yaml.safe_load(SMOKE.read_text(encoding="utf-8"))
    config["outdir"] = str(outdir)
    procs = []
    for name in ("a", "b"):
        work = tmp_path / name
        work.mkdir()
        for link in ("Snakefile", "workflow"):
            (work / link).symlink_to(REPO / link)
        (work / "c.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
        targets = [f"{outdir}/base/tiny", f"{outdir}/data/arith-test.parquet"]
        procs.append(
            subprocess.Popen(
                [LIE, "snakemake", "--configfile", "c.yaml", "-c1", *targets],
                cwd=work,
                env=_env(),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
        )
        time.sleep(2)  # the second starts while the first runs its jobs
    results = [(p.wait(timeout=600), p.stdout.read() if p.stdout else "") for p in procs]
    assert results[0][0] == 0 or results[1][0] == 0, results
    if any(status != 0 for status, _ in results):  # the loser's job stopped on lie's lock, in its log
        logs = "".join(p.read_text(errors="replace") for p in (outdir / "logs").rglob("*.log"))
        assert "is being built by another command" in logs, [out[-2000:] for _, out in results]
    from lie.formats.model_folder import check_model_folder
    from lie.formats.outputs import record_problem

    check_model_folder(outdir / "base" / "tiny")
    assert record_problem(outdir / "base" / "tiny") is None
    assert not list((outdir / "base").glob(".tiny.*"))
    import pyarrow.parquet as pq

    assert (
        pq.read_table(outdir / "data" / "arith-test.parquet").num_rows
        == config["datasets"]["eval"]["arith-test"]["expected_rows"]
    )
