"""Bad input and a hostile environment answered in one line (issue 13, items 4-6).

Group-readable outputs under the user's umask; no network, broken JSON lines, an unwritable
``--out`` and Ctrl-C give one ``lie CMD: error:`` line, never a traceback; NaN and infinity are
refused wherever a number has a range, and never written as bare ``NaN`` in JSON.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

from lie.cli import main
from lie.config import Config

REPO = Path(__file__).resolve().parents[1]
SMOKE = REPO / "workflow" / "configs" / "smoke.yaml"
ROW = {"response": "short", "correct": False, "num_tokens": 1, "ref_len": 3000}


def lie(
    *args: str, env: dict[str, str | None] | None = None, cwd: Path = REPO, timeout: float = 300, **kwargs
) -> subprocess.CompletedProcess:
    """The installed console script in a fresh process, as a user runs it (``env`` value None: unset)."""
    command = [str(Path(sys.executable).parent / "lie"), *args]
    full_env = {k: v for k, v in {**os.environ, **(env or {})}.items() if v is not None}
    return subprocess.run(
        command, capture_output=True, text=True, timeout=timeout, env=full_env, cwd=cwd, **kwargs
    )


def one_error_line(stderr: str, command: str) -> str:
    """The error line of ``lie COMMAND``; fails on a traceback or on more than one error line."""
    assert "Traceback" not in stderr, stderr[-3000:]
    lines = [line for line in stderr.splitlines() if line.startswith(f"lie {command}: ")]
    assert len(lines) == 1, stderr[-3000:]
    return lines[0]


def write_rows(path: Path, lines: list[str | bytes]) -> Path:
    data = b"".join((line if isinstance(line, bytes) else line.encode()) + b"\n" for line in lines)
    path.write_bytes(data)
    return path


@pytest.fixture
def umask_002():
    old = os.umask(0o002)
    yield
    os.umask(old)


# 4. Outputs readable by the group ---------------------------------------------------------------


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_scores_and_data_follow_the_umask(tmp_path, umask_002):
    src = write_rows(tmp_path / "in.jsonl", [json.dumps(ROW)])
    assert main(["score", "--in", str(src), "--out", str(tmp_path / "scored.jsonl")]) == 0
    assert mode(tmp_path / "scored.jsonl") == 0o664
    out = tmp_path / "arith-test.parquet"
    assert main(["data", "arith-test", "--config", str(SMOKE), "--out", str(out), "--no-progress"]) == 0
    assert mode(out) == 0o664


def test_base_model_and_merged_model_files_follow_the_umask(tmp_path, umask_002):
    """safetensors writes weights at 0600: a tiny base model and a merged TRL run must not keep that."""
    config = yaml.safe_load(SMOKE.read_text(encoding="utf-8"))
    config["outdir"] = str(tmp_path / "results")
    config_file = tmp_path / "config.yaml"
    config_file.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    corpus = tmp_path / "arith-test.parquet"
    assert main(["data", "arith-test", "--config", str(config_file), "--out", str(corpus)]) == 0
    base = tmp_path / "base"
    assert (
        main(
            [
                "base-model",
                "--config",
                str(config_file),
                "tiny",
                "--out",
                str(base),
                "--corpus",
                str(corpus),
            ]
        )
        == 0
    )
    assert mode(base) == 0o775 and {mode(p) for p in base.iterdir()} == {0o664}

    run = next(iter(config["experiments"]))
    rundir = tmp_path / "results" / "runs" / run
    checkpoint = rundir / "checkpoints" / "checkpoint-4"
    checkpoint.mkdir(parents=True)
    for path in base.iterdir():
        (checkpoint / path.name).write_bytes(path.read_bytes())
        (checkpoint / path.name).chmod(0o600)  # as TRL's save leaves model.safetensors
    from lie.engines.trl.train import SEAL
    from lie.formats.outputs import seal

    (checkpoint / "trainer_state.json").write_text(json.dumps({"global_step": 4}))
    seal(checkpoint / SEAL, list(checkpoint.iterdir()))  # what lie train writes last
    (rundir / "final.json").write_text(
        json.dumps({"engine": "trl", "checkpoint": str(checkpoint), "step": 4})
    )
    merged = tmp_path / "merged"
    assert main(["merge", run, "--config", str(config_file), "--out", str(merged)]) == 0
    assert mode(merged) == 0o775 and {mode(p) for p in merged.iterdir()} == {0o664}


# 5. One line, not a traceback --------------------------------------------------------------------

NO_HUB = {"HF_ENDPOINT": "http://127.0.0.1:1", "HF_HUB_OFFLINE": None}  # nothing listens on port 1


def hub_config(tmp_path: Path) -> Path:
    """config.yaml with a data set and a model that only the hub serves."""
    config = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))
    config["outdir"] = str(tmp_path / "results")
    config["datasets"]["train"]["dapo"].update(
        hf_id="BytedTsinghua-SIA/DAPO-Math-17k", url=None, sha1=None, local=None
    )
    config["models"]["qwen3-4b"].update(hf_id="Qwen/Qwen3-4B", path=None, tiny=None)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "args, fetched",
    [
        (
            ["data", "dapo", "--out", "{tmp}/dapo.parquet"],
            "data set BytedTsinghua-SIA/DAPO-Math-17k",
        ),
        (["base-model", "qwen3-4b", "--out", "{tmp}/qwen3-4b"], "model Qwen/Qwen3-4B"),
    ],
)
def test_no_network_without_offline_mode_is_one_line(tmp_path, args, fetched):
    """Today's traceback is ~90 lines of httpx.ConnectError; the hub here is a port nothing listens on."""
    env = {**NO_HUB, "HF_HOME": str(tmp_path / "hf")}
    config = hub_config(tmp_path)
    proc = lie(args[0], "--config", str(config), *[a.format(tmp=tmp_path) for a in args[1:]], env=env)
    assert proc.returncode == 2
    line = one_error_line(proc.stderr, args[0])
    assert fetched in line and "HF_HUB_OFFLINE=1" in line, line


@pytest.mark.parametrize(
    "line, says",
    [
        (b'{"response": "caf\xe9", "correct": false, "num_tokens": 1, "ref_len": 30}', "not valid UTF-8"),
        ('{"response": "\\ud800", "correct": false, "num_tokens": 1, "ref_len": 30}', "lone surrogate"),
        (
            '{"response": "x", "correct": false, "num_tokens": 1%s, "ref_len": 30}' % ("0" * 5000),
            "5001 digits",
        ),
        ('{"response": "x", "correct": false, "num_tokens": 1, "ref_len": 30, "w": 1e999}', "1e999"),
        ('{"response": "x", "correct": false, "num_tokens": 1, "ref_len": 30, "w": NaN}', "NaN"),
        ('{"response": "x", "correct": false, "num_tokens": 1, "ref_len": 30, "w": -Infinity}', "-Infinity"),
    ],
)
def test_a_broken_json_line_names_file_and_line(tmp_path, line, says):
    src = write_rows(tmp_path / "in.jsonl", [json.dumps(ROW), line, json.dumps(ROW)])
    proc = lie("score", "--in", str(src), "--out", str(tmp_path / "out.jsonl"))
    assert proc.returncode == 2
    error = one_error_line(proc.stderr, "score")
    assert f"{src} line 2:" in error and says in error, error
    assert not (tmp_path / "out.jsonl").exists()


def test_out_that_is_a_folder_or_under_a_file(tmp_path, capsys):
    src = write_rows(tmp_path / "in.jsonl", [json.dumps(ROW)])
    assert main(["score", "--in", str(src), "--out", str(tmp_path)]) == 2
    assert f"--out {tmp_path} holds the input --in {src}" in capsys.readouterr().err
    proc = lie("score", "--in", str(src), "--out", str(src / "out.jsonl"))
    assert proc.returncode == 2
    assert f"cannot write {src / 'out.jsonl'}" in one_error_line(proc.stderr, "score")
    assert sorted(tmp_path.iterdir()) == [src]  # no temporary file left behind


def test_ctrl_c_exits_130_without_a_traceback(tmp_path):
    """SIGINT while ``lie score`` waits on its input: one line, status 130, no output file."""
    out = tmp_path / "out.jsonl"
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "lie"), "score", "--in", "-", "--out", str(out), "--log-level", "DEBUG"],
        stdin=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        # a shell that started us in the background ignores SIGINT, and the child would inherit that:
        # give it the disposition a terminal's Ctrl-C meets
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    started = threading.Event()
    lines: list[str] = []

    def read() -> None:
        for line in proc.stderr:
            lines.append(line)
            if "lie score: started" in line:
                started.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert started.wait(120), "".join(lines)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) == 130
    finally:
        proc.kill()
        proc.stdin.close()
    reader.join(10)
    assert one_error_line("".join(lines), "score") == "lie score: interrupted"
    assert not out.exists()


# 6. NaN and infinity -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["grade", "--in", "x.jsonl", "--out", "y.jsonl", "--timeout", "nan"],
        ["grade", "--in", "x.jsonl", "--out", "y.jsonl", "--timeout", "inf"],
        [
            "evaluate",
            "--config",
            "config.yaml",
            "--gen",
            "g",
            "--out-scores",
            "s",
            "--out-summary",
            "t",
            "--timeout=-inf",
        ],
        ["plan", "--mfu", "nan"],
        [
            "generate",
            "--config",
            "config.yaml",
            "--model",
            "m",
            "b",
            "--data",
            "d",
            "--out",
            "o",
            "--engine-arg",
            "temperature=.nan",
        ],
    ],
)
def test_a_flag_that_is_not_a_finite_number_is_refused(args, capsys):
    with pytest.raises(SystemExit) as stop:
        main(args)
    assert stop.value.code == 2
    assert "not a finite number" in capsys.readouterr().err


@pytest.mark.parametrize("knob", ["eta=nan", "beta=inf", "eta=-inf", "beta=NaN"])
def test_a_reward_knob_that_is_not_finite_is_refused(tmp_path, capsys, knob):
    src = write_rows(tmp_path / "in.jsonl", [json.dumps(ROW)])
    assert main(["score", "--in", str(src), "--out", str(tmp_path / "out.jsonl"), "--set", knob]) == 2
    assert f"reward key '{knob.split('=')[0]}' must be a finite number" in capsys.readouterr().err
    yaml_file = tmp_path / "knobs.yaml"
    yaml_file.write_text(f"reward:\n  {knob.split('=')[0]}: .nan\n")
    assert (
        main(["score", "--in", str(src), "--out", str(tmp_path / "out.jsonl"), "--knobs", str(yaml_file)])
        == 2
    )
    assert "must be a finite number" in capsys.readouterr().err
    assert not (tmp_path / "out.jsonl").exists()


def test_a_reward_that_overflows_is_not_written_as_json(tmp_path):
    """eta = 1e308 is finite, but R_len would overflow to -inf: the knob is refused by the config's
    bounds before any line is scored (eta at most 0.1), never ``-Infinity`` in the file."""
    src = write_rows(tmp_path / "in.jsonl", [json.dumps(ROW)])
    proc = lie("score", "--in", str(src), "--out", str(tmp_path / "out.jsonl"), "--set", "eta=1e308")
    assert proc.returncode == 2
    error = one_error_line(proc.stderr, "score")
    assert "--set: reward key 'eta' must lie in 0..0.1 (the config's bounds), got 1e+308" in error, error
    assert not (tmp_path / "out.jsonl").exists()


def test_run_summaries_and_rollouts_are_strict_json(tmp_path):
    """A non-finite number in a run summary or a rollout is an error naming it, never a bare NaN."""
    from lie.core.errors import LieError
    from lie.formats.runs import append_rollouts, write_json

    with pytest.raises(LieError, match="field 'step'"):
        write_json(tmp_path / "final.json", {"checkpoint": "c", "step": float("nan")})
    assert not list(tmp_path.iterdir())  # nothing half-written
    with pytest.raises(LieError, match="field 'reward'"):
        append_rollouts(tmp_path / "rollouts", 1, "w", [{"reward": float("inf")}])


# 7. Inputs that reached a traceback or a hang (issue 21): one line, exit 2 -----------------------


def _config_with(tmp_path: Path, edit) -> Path:
    config = yaml.safe_load(SMOKE.read_text(encoding="utf-8"))
    config["outdir"] = str(tmp_path / "results")
    edit(config)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def _laughs(levels: int) -> str:
    lines = ['l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for k in range(1, levels + 1):
        lines.append(f"l{k}: &l{k} [" + ",".join([f"*l{k - 1}"] * 10) + "]")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    "text, says",
    [
        ("a: " + "[" * 2000 + "]" * 2000, "nested deeper than"),
        ("".join("  " * i + f"k{i}:\n" for i in range(2000)) + "  " * 2000 + "x: 1\n", "nested deeper than"),
        ("a: 1" + "0" * 5000, "an integer of more than"),
        (_laughs(10), "once its aliases are expanded"),
        ("a: &a [*a]", "recursive alias"),
        (
            yaml.safe_dump({**yaml.safe_load(SMOKE.read_text()), "prompt": {"math": "\ud800 {question}"}}),
            "surrogate",
        ),
    ],
    ids=["deep-list", "deep-map", "long-int", "billion-laughs", "recursive", "surrogate"],
)
def test_a_hostile_yaml_config_is_one_line(tmp_path, text, says):
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    proc = lie("plan", "--config", str(path))
    assert proc.returncode == 2
    error = one_error_line(proc.stderr, "plan")
    assert str(path) in error and says in error, error


HOSTILE = {
    "deep-list": ("a: " + "[" * 2000 + "]" * 2000 + "\n", "nested deeper than 64 levels"),
    "long-int": ("a: 1" + "0" * 5000 + "\n", "an integer of more than 100 digits"),
    "billion-laughs": (_laughs(10), "once its aliases are expanded"),
}


@pytest.fixture
def workflow_dir(tmp_path):
    """A working directory with the repository's Snakefile and workflow/ (Snakemake's .snakemake/ here)."""
    for name in ("Snakefile", "workflow"):
        os.symlink(REPO / name, tmp_path / name)
    return tmp_path


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_configfile_through_lie_snakemake_is_one_line(workflow_dir, name):
    """Snakemake itself tracebacks on these (it parses --configfile before our code): the door is
    ``lie snakemake``, which reads each file with the bounded reader first. The subprocess timeout
    (10 s) is the hang check; a hang fails the test with TimeoutExpired."""
    text, says = HOSTILE[name]
    assert name != "billion-laughs" or len(text) < 1300  # a kilobyte, billions of values expanded
    path = workflow_dir / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    proc = lie("snakemake", "--configfile", str(path), "-n", cwd=workflow_dir, timeout=10)
    assert proc.returncode == 2, proc.stderr[-3000:]
    error = one_error_line(proc.stderr, "snakemake")
    assert proc.stderr.strip().splitlines() == [error]  # the whole of what it says
    assert f"{path} line " in error and says in error, error
    assert not (workflow_dir / ".snakemake").exists()  # Snakemake never started


def test_lie_snakemake_checks_the_default_config_and_every_configfile(workflow_dir):
    (workflow_dir / "config.yaml").write_text(HOSTILE["long-int"][0], encoding="utf-8")
    proc = lie("snakemake", "-n", cwd=workflow_dir, timeout=10)  # no --configfile: config.yaml
    assert proc.returncode == 2 and "config.yaml line 1" in one_error_line(proc.stderr, "snakemake")
    (workflow_dir / "good").mkdir()
    good = _config_with(workflow_dir / "good", lambda c: None)
    bad = workflow_dir / "bad.yaml"
    bad.write_text(HOSTILE["deep-list"][0], encoding="utf-8")
    proc = lie("snakemake", "-n", "--configfiles", str(good), str(bad), cwd=workflow_dir, timeout=10)
    assert proc.returncode == 2 and str(bad) in one_error_line(proc.stderr, "snakemake")
    proc = lie("snakemake", "-n", f"--configfile={bad}", cwd=workflow_dir, timeout=10)
    assert proc.returncode == 2 and str(bad) in one_error_line(proc.stderr, "snakemake")


def test_a_valid_configfile_passes_through_lie_snakemake_to_snakemake(workflow_dir):
    good = _config_with(workflow_dir, lambda c: None)
    env = {"PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    proc = lie("snakemake", "--configfile", str(good), "-n", "--quiet", "rules", cwd=workflow_dir, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout + proc.stderr
    assert "This was a dry-run" in out and "train" in out and "evaluate" in out, out[-3000:]
    assert not (workflow_dir / "results").exists()  # a dry run: Snakemake ran, wrote nothing


def test_the_makefile_runs_snakemake_only_through_lie():
    lines = [
        line
        for line in (REPO / "Makefile").read_text(encoding="utf-8").splitlines()
        if "/snakemake" in line or line.lstrip().startswith("snakemake")
    ]
    assert not lines, f"Makefile calls snakemake directly: {lines}"
    assert "$(BIN)/lie snakemake" in (REPO / "Makefile").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "edit, key",
    [
        (lambda c: c["reward"].update(beta=5), "reward.beta"),
        (lambda c: c["reward"].update(eta=1e300), "reward.eta"),
        (lambda c: c.update(runs=["smoke_grpo", "smoke_grpo"]), "runs"),
        (lambda c: c["training"].update(max_steps=10**30), "training.max_steps"),
    ],
    ids=["beta", "eta", "runs-twice", "max-steps"],
)
def test_an_absurd_config_value_is_refused(tmp_path, edit, key):
    proc = lie("plan", "--config", str(_config_with(tmp_path, edit)))
    assert proc.returncode == 2
    assert f"key '{key}'" in one_error_line(proc.stderr, "plan")


@pytest.mark.parametrize("flag", [["--nnodes", "-2"], ["--threads", "0"], ["--stop-after", "0"]])
def test_a_count_flag_below_one_is_a_usage_error(flag, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["train", "smoke_grpo", "--config", str(SMOKE), *flag])
    assert stop.value.code == 2
    assert f"argument {flag[0]}: expected an integer >= 1" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["score", "grade", "behaviours"])
def test_json_nested_100k_deep_is_one_line(tmp_path, command):
    src = write_rows(tmp_path / "in.jsonl", ['{"a": ' + "[" * 100_000 + "]" * 100_000 + "}"])
    args = (
        ["--gen", str(src)] if command == "behaviours" else ["--in", str(src), "--out", str(tmp_path / "o")]
    )
    proc = lie(command, *args)
    assert proc.returncode == 2
    error = one_error_line(proc.stderr, command)
    assert f"{src} line 1:" in error and "nested deeper than" in error, error


def test_a_full_disk_names_the_output(tmp_path):
    """The file-size limit (EFBIG) stands in for a full disk (ENOSPC): the same OSError without a file name."""
    import resource

    src = write_rows(tmp_path / "in.jsonl", [json.dumps(ROW)] * 200)
    out = tmp_path / "scored.jsonl"

    def limited() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    # make coverage's tracer cannot save its data under the limit either: this process goes unmeasured
    unmeasured = {"COVERAGE_PROCESS_START": None}
    proc = lie("score", "--in", str(src), "--out", str(out), env=unmeasured, preexec_fn=limited)
    assert proc.returncode == 2
    assert f"cannot write {out}: File too large" in one_error_line(proc.stderr, "score")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]  # no partial file left


def test_user_patterns_never_hang_behaviours(tmp_path):
    gen = tmp_path / "gen.jsonl"
    gen.write_text(json.dumps({"bench": "b", "index": 0, "sample": 0, "text": "a" * 60 + "!"}) + "\n")
    patterns = tmp_path / "patterns.yaml"
    patterns.write_text("behaviours:\n  loop: {description: x, patterns: ['^(a+)+$']}\n")
    assert lie("behaviours", "--gen", str(gen), "--patterns", str(patterns)).returncode == 0  # no hang
    patterns.write_text("behaviours:\n  loop: {description: x, patterns: ['(a|aa)+$']}\n")
    proc = lie("behaviours", "--gen", str(gen), "--patterns", str(patterns))
    assert proc.returncode == 2
    error = one_error_line(proc.stderr, "behaviours")
    assert "behaviours.loop.patterns[0] '(a|aa)+$' takes more than" in error, error


@pytest.mark.parametrize(
    "final, says",
    [
        ('{"engine": "trl", "checkp', "not valid JSON"),
        ('{"engine": "trl"}', "'engine' and 'checkpoint'"),
        ('["trl", "x"]', "'engine' and 'checkpoint'"),
        ('{"engine": ' + "[" * 100_000 + "]" * 100_000 + "}", "not valid JSON"),
        ('{"engine": "trl", "checkpoint": "/etc", "step": 1}', "is not a checkpoint under"),
        (
            '{"engine": "verl", "checkpoint": "{rundir}/checkpoints/../../../../etc"}',
            "is not a checkpoint under",
        ),
    ],
    ids=["bad-json", "missing-key", "a-list", "deep", "etc", "dot-dot"],
)
def test_merge_with_a_corrupt_final_json_is_one_line(tmp_path, final, says):
    config = _config_with(tmp_path, lambda c: None)
    rundir = tmp_path / "results" / "runs" / "smoke_grpo"
    rundir.mkdir(parents=True)
    (rundir / "final.json").write_text(final.replace("{rundir}", str(rundir)))
    proc = lie("merge", "smoke_grpo", "--config", str(config), "--out", str(tmp_path / "merged"))
    assert proc.returncode == 2
    assert says in one_error_line(proc.stderr, "merge")
    assert not (tmp_path / "merged").exists()


def _verl_final(rundir: Path, complete: bool) -> None:
    """A verl run's final.json naming global_step_2, complete (actor state and data.pt) or not."""
    from small import verl_checkpoint

    step = verl_checkpoint(rundir / "checkpoints", 2, complete)
    (rundir / "final.json").write_text(json.dumps({"engine": "verl", "checkpoint": str(step), "step": 2}))


def test_merge_of_an_incomplete_verl_checkpoint_is_one_line_and_writes_nothing(tmp_path, capsys):
    config = _config_with(tmp_path, lambda c: None)
    rundir = tmp_path / "results" / "runs" / "smoke_grpo"
    _verl_final(rundir, complete=False)
    assert main(["merge", "smoke_grpo", "--config", str(config), "--out", str(tmp_path / "merged")]) == 2
    err = capsys.readouterr().err
    assert "global_step_2 is incomplete (no data.pt); rerun `lie train smoke_grpo` to repair it" in err
    assert not (tmp_path / "merged").exists()


def test_merge_hands_trust_remote_code_to_verls_merger_only_where_the_config_turns_it_on(
    tmp_path, monkeypatch
):
    """verl's merger loads the model's config class: with the config's trust_remote_code on, and only
    then, its command line carries ``--trust-remote-code`` (the merger itself stopped here, before it
    writes anything)."""
    import subprocess as sp

    from lie import config as cfgmod
    from lie.core.errors import LieError
    from lie.stages import merge as merge_stage

    commands = []

    def merger(cmd, **kwargs):
        commands.append(cmd)
        return sp.CompletedProcess(cmd, 1, stderr="stopped by the test\n")

    monkeypatch.setattr(merge_stage.subprocess, "run", merger)
    for trust in (False, True):
        config = _config_with(tmp_path, lambda c, t=trust: c.update(trust_remote_code=t))
        rundir = tmp_path / "results" / "runs" / "smoke_grpo"
        shutil.rmtree(rundir, ignore_errors=True)
        _verl_final(rundir, complete=True)
        with pytest.raises(LieError):
            merge_stage.merge(
                Config.of(cfgmod.load_config(config)), "smoke_grpo", tmp_path / f"merged-{trust}"
            )
    assert [("--trust-remote-code" in cmd) for cmd in commands] == [False, True]
    assert all(cmd[1:4] == ["-m", "verl.model_merger", "merge"] for cmd in commands)


def test_negative_token_ids_are_refused(tmp_path):
    from lie.formats.generations import generation_line

    gen = tmp_path / "gen.jsonl"
    gen.write_text(
        json.dumps(generation_line("arith-test", 0, 0, "4", "math", [], 5, 16, 0, [3, -1], "4", "stop"))
    )
    proc = lie("evaluate", "--config", str(SMOKE), "--gen", str(gen), "--out-scores", str(tmp_path / "s.jsonl"),
               "--out-summary", str(tmp_path / "s.json"), "--no-progress")  # fmt: skip
    assert proc.returncode == 2
    assert f"{gen} line 1: field 'token_ids' holds an id outside" in one_error_line(proc.stderr, "evaluate")


def test_a_lone_surrogate_from_snakemakes_config_is_refused_at_validation():
    """``snakemake --config`` values reach lie's check without its YAML reader (validate_workflow's door)."""
    from lie.config import validate_workflow
    from lie.core.errors import LieError

    config = yaml.safe_load(SMOKE.read_text(encoding="utf-8"))
    config["prompt"]["math"] = "Solve \ud800 {question}"
    with pytest.raises(LieError, match="key 'prompt.math': a lone surrogate"):
        validate_workflow(config, [SMOKE])


def test_the_workflow_reads_snakemakes_own_command_line_and_nothing_where_it_is_not_one(monkeypatch):
    """The Snakefile's planning notes read Snakemake's command line as Snakemake's parser does (its
    executor, -n); in a job's Snakemake, or a process whose arguments are not Snakemake's (Snakemake as
    a library), nothing: no note, no error."""
    from types import SimpleNamespace

    from snakemake_interface_executor_plugins.settings import ExecMode

    from lie.stages import snakemake as lie_snakemake

    workflow = SimpleNamespace(exec_mode=ExecMode.DEFAULT)
    monkeypatch.setattr(lie_snakemake.sys, "argv", ["snakemake", "-n", "--executor", "slurm", "--cores", "2"])
    args = lie_snakemake.invocation(workflow)
    assert (args.executor, args.dryrun) == ("slurm", True)
    assert lie_snakemake.invocation(SimpleNamespace(exec_mode=ExecMode.SUBPROCESS)) is None
    monkeypatch.setattr(lie_snakemake.sys, "argv", ["python", "--no-such-flag-of-snakemake"])
    assert lie_snakemake.invocation(workflow) is None


def test_lie_snakemake_reads_the_config_files_snakemake_would_read(tmp_path, monkeypatch):
    """``lie snakemake``'s check reads what Snakemake reads: each ``--configfile``/``--configfiles`` value
    (``=`` or spaced, several after one flag), else ``config.yaml`` of the working directory, which
    ``--directory``/``-d`` move; a flag without a file is one line; so is a Snakemake found nowhere."""
    from lie.core.errors import LieError
    from lie.stages import snakemake as lie_snakemake

    files = lie_snakemake.config_files
    assert files(["-n", "--configfiles", "a.yaml", "b.yaml", "--cores", "2"]) == [
        Path("a.yaml"),
        Path("b.yaml"),
    ]
    assert files(["--configfile=c.yaml", "-n"]) == [Path("c.yaml")]
    with pytest.raises(LieError, match="--configfile needs a file"):
        files(["--configfile", "--cores", "2"])
    (tmp_path / "config.yaml").write_text("name: x\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path.parent)
    for args in (["--directory", str(tmp_path)], ["-d", str(tmp_path)], [f"--directory={tmp_path}"]):
        assert files(["-n", *args]) == [tmp_path / "config.yaml"], args
    assert files(["-n", "--directory"]) == []  # Snakemake itself says what the flag lacks
    monkeypatch.setattr(lie_snakemake.sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(LieError, match="snakemake is not installed in this environment"):
        lie_snakemake.snakemake_program()
    on_path = tmp_path / "bin" / "snakemake"  # none beside this Python: the one on PATH
    on_path.parent.mkdir()
    on_path.write_text("#!/bin/sh\n", encoding="utf-8")
    on_path.chmod(0o755)
    monkeypatch.setenv("PATH", str(on_path.parent))
    assert lie_snakemake.snakemake_program() == str(on_path)
