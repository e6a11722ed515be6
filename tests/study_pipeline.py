"""A real, shrunken run of the CPU study for its tests: every stage through the code ``make study`` runs.

``workflow/configs/study.yaml`` (the second registration) with fewer supervised steps, problems,
training steps and samples: ``lie data`` (synthetic arithmetic chains), ``lie base-model`` (tiny model
+ supervised stage, two supervised seeds), ``lie study-probe`` + ``lie evaluate`` + ``lie
study-responses`` on each supervised model, ``lie reflen``, two TRL steps per run (strong: GRPO and
GRPO + LIE from both supervised models, two seeds from the first; mid and weak: one pair each), ``lie
merge``, ``lie generate``, ``lie evaluate`` and ``lie study-responses``. Built once per test process in a temporary folder removed
at exit; the study's tests read its files.
"""

from __future__ import annotations

import atexit
import copy
import functools
import shutil
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import yaml
from small import REPO, write_config

from lie.config import Config

STUDY = REPO / "workflow" / "configs" / "study.yaml"
STUDY_V1 = REPO / "workflow" / "configs" / "study-v1.yaml"
STUDY_V3 = REPO / "workflow" / "configs" / "study-v3.yaml"
ARMS = {
    "weak": {"grpo": ("v2_weak_grpo_m1_s0",), "grpo-lie": ("v2_weak_grpo-lie_m1_s0",)},
    "mid": {"grpo": ("v2_mid_grpo_m0_s0",), "grpo-lie": ("v2_mid_grpo-lie_m0_s0",)},
    "strong": {
        "grpo": ("v2_strong_grpo_m0_s0", "v2_strong_grpo_m0_s1", "v2_strong_grpo_m1_s0"),
        "grpo-lie": ("v2_strong_grpo-lie_m0_s0", "v2_strong_grpo-lie_m0_s1", "v2_strong_grpo-lie_m1_s0"),
    },
}
RUNS = tuple(run for arms in ARMS.values() for runs in arms.values() for run in runs)
BASES = ("tiny-m0", "tiny-m1")
TRAIN_SETS = (("chain-weak-train", 31, 4, 4), ("chain-mid-train", 32, 5, 5), ("chain-strong-train", 33, 6, 7))


def study_config(path: Path = STUDY) -> dict[str, Any]:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def small_study_config(outdir: Path, sft_steps: int = 300) -> dict[str, Any]:
    """The study's config, shrunk to run in seconds (same keys, same reward, same arms)."""
    config = copy.deepcopy(study_config())
    config["name"], config["outdir"] = "study-test", str(outdir)
    config["sft_cache"] = str(Path(outdir).parent / "sft-cache")  # never the checkout's results/
    for model in BASES:
        # stop_prob 0.2 (the study's 0.5): the probe's 48 samples then hold full-depth writes on any
        # machine (at 0.5 about 1.4 are expected, none in a quarter of builds), which the gate test needs
        config["models"][model]["sft"].update(
            problems=400,
            steps=sft_steps,
            full_steps=2 * sft_steps // 3,
            batch_size=16,
            warmup_steps=20,
            stop_prob=0.2,
        )
    for name, seed, low, high in TRAIN_SETS:
        config["datasets"]["train"][name].update(
            expected_rows=8,
            synthetic={"task": "chain", "count": 8, "seed": seed, "min_depth": low, "max_depth": high},
        )
    config["datasets"]["eval"]["chain-test"].update(
        expected_rows=12,
        n=2,
        synthetic={"task": "chain", "count": 12, "seed": 12, "min_depth": 4, "max_depth": 7},
    )
    config["reflen"].update(shard_size=8)
    config["training"].update(
        train_batch_size=2, ppo_mini_batch_size=2, rollout_n=4, max_steps=2, save_freq=2
    )
    config["experiments"] = {run: config["experiments"][run] for run in RUNS}
    config["evaluation"].update(budgets=[8, 24, 64], max_tokens=64, shard_size=10)
    config["study"]["probe"] = {"n": 4, "seed": 1}
    for name, arms in ARMS.items():
        condition = config["study"]["conditions"][name]
        condition["arms"] = {
            arm: {"label": condition["arms"][arm]["label"], "runs": list(runs)} for arm, runs in arms.items()
        }
    return config


def _evaluate(cfg: Path, layout: Any, key: str) -> None:
    from lie.cli import main
    from lie.study.paths import StudyPaths

    model, gen, data = (
        layout.model_for(key),
        layout.generations(key, "chain-test"),
        layout.dataset_file("chain-test"),
    )
    argv = [
        "generate",
        "--config",
        str(cfg),
        "--model",
        str(model),
        "chain-test",
        "--data",
        str(data),
    ]
    assert main([*argv, "--out", str(gen), "--no-progress"]) == 0
    scores = layout.graded(key, "scores")
    argv = ["evaluate", "--config", str(cfg), "--gen", str(gen), "--tokenizer", str(model)]
    argv += ["--out-scores", str(scores), "--out-summary", str(layout.summary(key))]
    assert main([*argv, "--no-progress"]) == 0
    argv = ["study-responses", "--config", str(cfg), "--gen", str(gen), "--scores", str(scores)]
    argv += ["--data", str(data), "--tokenizer", str(model), "--out", str(StudyPaths(layout).responses(key))]
    assert main(argv) == 0


def _probe(cfg: Path, layout: Any, model: str, forced: bool = False) -> None:
    from lie.cli import main
    from lie.study.paths import StudyPaths

    paths, base, data = StudyPaths(layout), layout.base_model(model), layout.dataset_file("chain-test")
    gen, scores = paths.probe_generations(model, forced), paths.probe_scores(model, forced)
    argv = ["study-probe", "--config", str(cfg), "--model", str(base), "--data", str(data), "--out", str(gen)]
    assert main([*argv, "--no-progress", *(["--forced"] if forced else [])]) == 0
    argv = ["evaluate", "--config", str(cfg), "--gen", str(gen), "--tokenizer", str(base)]
    argv += [
        "--out-scores",
        str(scores),
        "--out-summary",
        str(paths.probe_summary(model, forced)),
        "--no-progress",
    ]
    assert main(argv) == 0
    argv = ["study-responses", "--config", str(cfg), "--gen", str(gen), "--scores", str(scores)]
    argv += [
        "--data",
        str(data),
        "--tokenizer",
        str(base),
        "--out",
        str(paths.probe_responses(model, forced)),
    ]
    assert main(argv) == 0


def _build(root: Path) -> SimpleNamespace:
    from lie.cli import main
    from lie.config import RunSettings, load_config, read_config
    from lie.config.layout import Layout
    from lie.engines.trl import train as trl_train

    cfg = write_config(root / "config.yaml", small_study_config(root / "out"))
    load_config(cfg)  # a valid config
    config = read_config(cfg)  # as written: the tests read and edit it
    layout = Layout(Config.of(config))
    datasets = (*(name for name, *_ in TRAIN_SETS), "chain-test")
    for name in datasets:
        out = str(layout.dataset_file(name))
        assert main(["data", name, "--config", str(cfg), "--out", out, "--no-progress"]) == 0
    corpus = [f"--corpus={layout.dataset_file(n)}" for n in datasets]
    for model in BASES:
        assert main(["base-model", model, "--config", str(cfg), *corpus]) == 0
        _probe(cfg, layout, model)
    for run in RUNS:
        spec = config["experiments"][run]
        reflen, base = layout.reflen_file(spec["data"], spec["model"]), layout.base_model(spec["model"])
        if not reflen.exists():
            argv = [
                "reflen",
                "--config",
                str(cfg),
                "--model",
                str(base),
                "--data",
                str(layout.dataset_file(spec["data"])),
            ]
            assert main([*argv, "--out", str(reflen), "--no-progress"]) == 0
        trl_train.train(Config.of(config), RunSettings.of(Config.of(config), run), reflen, base, threads=1)
        assert main(["merge", run, "--config", str(cfg)]) == 0
    for key in [*RUNS, *BASES]:
        _evaluate(cfg, layout, key)
    return SimpleNamespace(root=root, cfg=cfg, config=config, layout=layout)


@functools.cache
def pipeline() -> SimpleNamespace:
    """The finished shrunken study (built on first use, shared by the test modules of the process)."""
    root = Path(tempfile.mkdtemp(prefix="lie-study-test-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    return _build(root)


def v3_config(outdir: Path) -> dict[str, Any]:
    """The shrunken study's models and strong-level runs, read under the third registration's ``study:``
    section (workflow/configs/study-v3.yaml: its ``third`` numbers, one condition of depth 6-7)."""
    config = small_study_config(outdir)
    third = study_config(STUDY_V3)["study"]
    deep = third["conditions"]["deep"]
    config["study"] = {
        **{k: third[k] for k in ("baseline", "primary", "length_only")},
        "bench": "chain-test",
        "probe": config["study"]["probe"],
        "third": {**third["third"], "forced_probe": {"n": 2, "seed": 2}},
        "conditions": {"deep": {**deep, "base_models": list(BASES),
                                "arms": config["study"]["conditions"]["strong"]["arms"]}},
    }  # fmt: skip
    return config


@functools.cache
def v3_pipeline() -> SimpleNamespace:
    """The shrunken study's files (a copy) with the forced-depth probes of both supervised models, under
    a config of the third registration; its gates and report are for the tests to run."""
    from lie.config import load_config, read_config
    from lie.config.layout import Layout

    base = pipeline()
    root = Path(tempfile.mkdtemp(prefix="lie-study-v3-test-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    shutil.copytree(base.root / "out", root / "out", symlinks=True)
    cfg = write_config(root / "config.yaml", v3_config(root / "out"))
    load_config(cfg)  # a valid config
    config = read_config(cfg)  # as written: the tests read and edit it
    layout = Layout(Config.of(config))
    for model in BASES:
        _probe(cfg, layout, model, forced=True)
    return SimpleNamespace(root=root, cfg=cfg, config=config, layout=layout)
