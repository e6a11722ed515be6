"""The config checked whole before anything runs (issue 13, item 7), by ``lie`` and by Snakemake.

Each broken config goes through ``lie plan --config`` (every ``lie`` command loads its config the
same way) and the worst cases through ``snakemake -n``, whose first words must be ``lie``'s one
line, never Snakemake's dump of the whole schema.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from lie.cli import main
from lie.config import Config

REPO = Path(__file__).resolve().parents[1]
SMOKE = REPO / "workflow" / "configs" / "smoke.yaml"


def smoke(outdir: Path) -> dict[str, Any]:
    config = yaml.safe_load(SMOKE.read_text(encoding="utf-8"))
    config["outdir"] = str(outdir)
    return config


def write(path: Path, config: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def rename(table: dict[str, Any], old: str, new: str) -> None:
    table[new] = table.pop(old)


def _cycle(c: dict[str, Any]) -> None:
    c["experiments"]["smoke_gspo_lie"]["parent"] = "smoke_gspo_lie_long"


def _self_parent(c: dict[str, Any]) -> None:
    c["experiments"]["smoke_grpo"]["parent"] = "smoke_grpo"


def _model_name(c: dict[str, Any]) -> None:
    rename(c["models"], "tiny", "tiny;rm")
    for run in c["experiments"].values():
        run["model"] = "tiny;rm"
    c["evaluation"]["base_models"] = ["tiny;rm"]


def _dataset_name(c: dict[str, Any]) -> None:
    rename(c["datasets"]["eval"], "arith-test", "../arith-test")
    c["evaluation"]["benchmarks"] = ["../arith-test", "arith-choice"]
    c["evaluation"]["in_domain"] = ["../arith-test"]
    c["models"]["tiny"]["tiny"]["corpus"] = ["arith-train"]


def _run_name(c: dict[str, Any]) -> None:
    rename(c["experiments"], "smoke_grpo", "-rf")


BROKEN: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "parent cycle": (_cycle, "a cycle of parents: smoke_gspo_lie -> smoke_gspo_lie_long -> smoke_gspo_lie"),
    "own parent": (_self_parent, "a cycle of parents: smoke_grpo -> smoke_grpo"),
    "benchmark": (
        lambda c: c["evaluation"]["benchmarks"].append("aime24"),
        "evaluation.benchmarks names 'aime24', which is not in datasets.eval",
    ),
    "base model": (
        lambda c: c["evaluation"]["base_models"].append("qwen3-4b"),
        "evaluation.base_models names 'qwen3-4b', which is not in models",
    ),
    "in domain": (
        lambda c: c["evaluation"]["in_domain"].append("math500"),
        "evaluation.in_domain names 'math500', which is not in datasets.eval",
    ),
    "out of domain": (
        lambda c: c["evaluation"]["out_of_domain"].append("mmlu-pro"),
        "evaluation.out_of_domain names 'mmlu-pro', which is not in datasets.eval",
    ),
    "val set": (
        lambda c: c["training"].update(val_sets=["math500"]),
        "training.val_sets names 'math500', which is not in datasets",
    ),
    "mini-batch larger than the batch": (
        lambda c: c["training"].update(train_batch_size=4, ppo_mini_batch_size=8),
        "training.train_batch_size (4) must be a multiple of training.ppo_mini_batch_size (8)",
    ),
    "batch not a multiple of the mini-batch": (
        lambda c: c["training"].update(train_batch_size=6, ppo_mini_batch_size=4),
        "training.train_batch_size (6) must be a multiple of training.ppo_mini_batch_size (4)",
    ),
    "NaN time limit": (
        lambda c: c["evaluation"].update(grade_timeout_s=math.nan),
        "key 'evaluation.grade_timeout_s': nan is not a finite number",
    ),
    "infinite learning rate": (
        lambda c: c["training"].update(lr=math.inf),
        "key 'training.lr': inf is not a finite number",
    ),
    "tokenizer corpus": (
        lambda c: c["models"]["tiny"]["tiny"]["corpus"].append("dapo"),
        "models.tiny.tiny.corpus names 'dapo', which is not in datasets",
    ),
    "CPU rollout": (
        lambda c: c["experiments"]["smoke_gspo_lie"].update(cpu_rollout="sglang"),
        "experiments.smoke_gspo_lie.cpu_rollout",
    ),
    "model name": (_model_name, "the name 'tiny;rm' is not allowed"),
    "data set name": (_dataset_name, "the name '../arith-test' is not allowed"),
    "run name": (_run_name, "the name '-rf' is not allowed"),
    # issue 33 item 9: Python's re lets `$` match before a final newline; the name would split a shell command
    "run name ending in a newline": (
        lambda c: rename(c["experiments"], "smoke_grpo", "smoke_grpo\n"),
        "the name 'smoke_grpo\\n' is not allowed",
    ),
    # issue 33 item 3: counts and sizes bounded in the schema, one line before anything grows
    "samples a problem": (
        lambda c: c["datasets"]["eval"]["arith-test"].update(n=100000000000),
        "key 'datasets.eval.arith-test.n': 100000000000 is greater than the maximum of 4096",
    ),
    "tiny vocabulary": (
        lambda c: c["models"]["tiny"]["tiny"].update(vocab_size=99999999999),
        "key 'models.tiny.tiny.vocab_size': 99999999999 is greater than the maximum of 262144",
    ),
    # issue 33: a template that passes the schema but fails (or eats the memory) when filled
    "template attribute": (
        lambda c: c["prompt"].update(math="{question.nope} {question}"),
        "key 'prompt.math': '{question.nope}' is not a field the template can take",
    ),
    "template width": (
        lambda c: c["prompt"].update(math="{question} {question:99999999999}"),
        "key 'prompt.math': '{question:99999999999}' is not a field the template can take",
    ),
    "template field": (
        lambda c: c["prompt"].update(choice="{question} {choices} {answer}"),
        "key 'prompt.choice': '{answer}' is not a field the template can take",
    ),
    "partition ending in a newline": (
        lambda c: c["cluster"].update(gpu_partition="gpu\n"),
        "key 'cluster.gpu_partition': 'gpu\\n' does not match",
    ),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_lie_refuses_a_config_that_does_not_fit_together(tmp_path, capsys, case):
    change, message = BROKEN[case]
    config = smoke(tmp_path / "results")
    change(config)
    path = write(tmp_path / "config.yaml", config)
    assert main(["plan", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"lie plan: error: {path}: " in err and message in err, err
    assert len(err.strip().splitlines()) == 1, err


def test_a_key_written_twice_is_refused(tmp_path, capsys):
    text = SMOKE.read_text(encoding="utf-8").replace("\ntraining:\n", "\ntraining:\n  lr: 0.5\n", 1)
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    assert main(["plan", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert "key 'lr' appears twice" in err and f"{path} line " in err, err
    assert len(err.strip().splitlines()) == 1, err


def test_a_package_yaml_reader_refuses_a_key_written_twice(tmp_path, capsys):
    """The behaviour patterns (like the judge prompt and the paper's numbers) go through the same reader."""
    patterns = tmp_path / "patterns.yaml"
    patterns.write_text("behaviours:\n  verification: {patterns: [check]}\n  verification: {patterns: [x]}\n")
    gen = tmp_path / "gen.jsonl"
    gen.write_text('{"response": "let me check"}\n')
    assert main(["behaviours", "--gen", str(gen), "--patterns", str(patterns)]) == 2
    assert "key 'verification' appears twice (first on line 2)" in capsys.readouterr().err


def test_the_package_yaml_files_have_each_key_once():
    from lie.config.yamlio import load_yaml_mapping

    files = sorted((REPO / "src" / "lie").rglob("*.yaml"))
    assert len(files) >= 4
    for path in files:
        load_yaml_mapping(path)


# Snakemake ---------------------------------------------------------------------------------------


def snakemake(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    return subprocess.run(
        [sys.executable, "-m", "snakemake", *args],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def workdir(tmp_path):
    for name in ("Snakefile", "workflow"):
        os.symlink(REPO / name, tmp_path / name)
    return tmp_path


def lie_first(proc: subprocess.CompletedProcess, message: str) -> None:
    """Snakemake stopped, and its output is short and leads with lie's message, not the schema."""
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, output[-3000:]
    assert message in output, output[-3000:]
    assert "Failed validating" not in output and "$schema" not in output, output[:3000]
    assert len(output.strip().splitlines()) <= 6, output[:3000]


def test_snakemake_gives_lies_line_for_a_top_level_mistake(workdir):
    config = smoke(workdir / "results")
    config["bogus"] = 1
    write(workdir / "config.yaml", config)
    proc = snakemake(workdir, "-n")
    lie_first(proc, "key '(top level)': Additional properties are not allowed ('bogus' was unexpected)")


def test_snakemake_refuses_a_parent_cycle_and_a_key_written_twice(workdir):
    config = smoke(workdir / "results")
    _cycle(config)
    write(workdir / "config.yaml", config)
    lie_first(snakemake(workdir, "-n"), "a cycle of parents")
    text = SMOKE.read_text(encoding="utf-8").replace("\ntraining:\n", "\ntraining:\n  lr: 0.5\n", 1)
    (workdir / "twice.yaml").write_text(
        text.replace("results/smoke", str(workdir / "results")), encoding="utf-8"
    )
    lie_first(snakemake(workdir, "-n", "--configfile", "twice.yaml"), "key 'lr' appears twice")


def test_snakemake_refuses_nan(workdir):
    config = smoke(workdir / "results")
    config["reward"]["eta"] = math.nan
    write(workdir / "config.yaml", config)
    lie_first(snakemake(workdir, "-n"), "key 'reward.eta': nan is not a finite number")


# ---- a run's typed settings (lie.config.settings) ----------------------------------------------


def test_a_runs_settings_are_typed_frozen_and_replaced_not_edited():
    import dataclasses

    from lie.config import RunSettings, load_config

    config = load_config(SMOKE)
    s = RunSettings.of(config, "smoke_gspo_lie_long")
    assert (s.engine, s.parent, s.max_response_length, s.loss_mode) == ("verl", "smoke_gspo_lie", 64, "gspo")
    assert s.eval_step == "final" and s.val_sets == ("arith-test",) and s.reward.extra_tokens == 8
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.nnodes = 2
    wider = s.replace(nnodes=2)
    assert (wider.nnodes, wider.gpus, s.nnodes) == (2, 2, 1)
    assert config.run("smoke_gspo_lie_long").nnodes == 1  # the loaded config is never edited


@pytest.mark.parametrize(
    ("where", "key", "value", "named"),
    [
        ("training", "lr", "fast", "training.lr"),
        ("training", "eval_step", "last", "training.eval_step"),
        ("training", "use_dynamic_bsz", "yes", "training.use_dynamic_bsz"),
        ("run", "max_response_length", 6.5, "experiments.smoke_grpo.max_response_length"),
        ("run", "seed", "zero", "experiments.smoke_grpo.seed"),
        ("algorithm", "clip_ratio_low", None, "algorithms.grpo.clip_ratio_low"),
    ],
)
def test_a_bad_setting_names_its_key(where, key, value, named):
    """Read without the schema (a config lie did not validate): the typed view still names the key."""
    from lie.config import RunSettings
    from lie.core.errors import LieError

    config = yaml.safe_load(SMOKE.read_text(encoding="utf-8"))
    table = {"training": config["training"], "run": config["experiments"]["smoke_grpo"],
             "algorithm": config["algorithms"]["grpo"]}[where]  # fmt: skip
    table[key] = value
    with pytest.raises(LieError, match=f"key '{named}'"):
        RunSettings.of(Config.of(config), "smoke_grpo")


def test_a_missing_required_setting_is_named_not_defaulted():
    from lie.config import RunSettings
    from lie.core.errors import LieError

    config = yaml.safe_load(SMOKE.read_text(encoding="utf-8"))
    del config["training"]["eval_step"]
    with pytest.raises(LieError, match="key 'training.eval_step' is missing"):
        RunSettings.of(Config.of(config), "smoke_grpo")
    config = yaml.safe_load(SMOKE.read_text(encoding="utf-8"))
    del config["engines"]["train"]  # required: no engine is assumed
    with pytest.raises(LieError, match="key 'engines.train' is missing"):
        RunSettings.of(Config.of(config), "smoke_grpo")


def test_container_binds_refuse_what_apptainer_cannot_bind(workdir, tmp_path, capsys):
    """cluster.binds: absolute folders apptainer's --bind can name; an image run's outdir likewise."""
    config = smoke(tmp_path / "results")
    config["cluster"]["binds"] = ["models"]
    assert main(["plan", "--config", str(write(tmp_path / "relative.yaml", config))]) == 2
    assert "key 'cluster.binds.0'" in capsys.readouterr().err
    config = smoke(workdir / "out,1")
    config["image"] = "img.sif"
    write(workdir / "config.yaml", config)
    lie_first(snakemake(workdir, "-n"), "outdir: ")
    config["image"] = None  # no image, no container: nothing to bind
    write(workdir / "config.yaml", config)
    assert snakemake(workdir, "-n").returncode == 0


def test_lie_snakemake_exits_as_docs_recovery_says(workdir):
    """docs/recovery.md: `lie snakemake` refuses a file it cannot read before Snakemake starts (one line,
    exit 2); the whole-config checks run inside the workflow, where Snakemake stops with lie's one line
    and its own exit status, 1."""
    lie = [sys.executable, "-m", "lie", "snakemake"]
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    config = smoke(workdir / "results")
    config["trust_remote_code"] = "yes"
    write(workdir / "bad.yaml", config)
    (workdir / "twice.yaml").write_text("a: 1\na: 2\n", encoding="utf-8")
    for name, status, line in [
        ("bad.yaml", 1, f"lie: {workdir}/bad.yaml: key 'trust_remote_code': 'yes' is not of type 'boolean'"),
        ("twice.yaml", 2, "key 'a' appears twice"),
    ]:
        proc = subprocess.run([*lie, "--configfile", name, "-n"], cwd=workdir, env=env, capture_output=True,
                              text=True, timeout=300)  # fmt: skip
        assert proc.returncode == status, proc.stderr[-3000:]
        assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr[
            -3000:
        ]
        assert line in proc.stderr, proc.stderr


@pytest.mark.parametrize(
    ("path", "named"),
    [
        (("experiments", "smoke_grpo", "model"), "key 'experiments.smoke_grpo.model' is missing"),
        (("models", "tiny", "tiny", "seed"), "key 'models.tiny.tiny.seed' is missing"),
        (("cluster", "qos"), "key 'cluster.qos' is missing"),
        (("prompt", "math"), "key 'prompt.math' is missing"),
        (("evaluation", "budgets"), "evaluation.budgets is missing"),
    ],
)
def test_the_typed_config_of_a_mapping_without_a_key_names_the_key(path, named):
    """Issue 37: ``Config.of`` types a checked mapping; one built in code (a test, a trial config) that
    lacks a key the schema requires stops with one line naming it, never a KeyError."""
    from lie.config import Config, LieError, read_config

    written = read_config(SMOKE)
    section = written
    for key in path[:-1]:
        section = section[key]
    del section[path[-1]]
    with pytest.raises(LieError, match=named):
        Config.of(written)
    Config.of(read_config(SMOKE))  # the whole file types


def test_the_typed_config_refuses_a_key_a_section_does_not_have():
    from lie.config import Config, LieError, read_config

    written = read_config(SMOKE)
    written["reflen"]["samples"] = 2
    with pytest.raises(LieError, match=r"unknown key\(s\) reflen.samples; valid: cap, k, max_tokens"):
        Config.of(written)
    written = read_config(SMOKE)
    written["models"]["tiny"]["tiny"]["width"] = 3
    with pytest.raises(LieError, match=r"models.tiny.tiny: unknown key\(s\) width"):
        Config.of(written)
