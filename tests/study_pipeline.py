"""A real, shrunken run of the CPU study for its tests: every stage through the code ``make study`` runs.

``workflow/configs/study.yaml`` with fewer supervised steps, problems, training steps and samples:
``lie data`` (synthetic arithmetic), ``lie base-model`` (tiny model + supervised stage),
``lie reflen``, one TRL step per run (arms GRPO with two seeds, GRPO + length term, GRPO + LIE),
``lie merge``, ``lie generate`` and ``lie evaluate``. Built once per test process in a temporary
folder removed at exit; the study report tests read its files.
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

STUDY = REPO / "workflow" / "configs" / "study.yaml"
RUNS = ("study_grpo_s0", "study_grpo_s1", "study_grpo-len_s0", "study_grpo-lie_s0")
ARMS = {
    "grpo": ("study_grpo_s0", "study_grpo_s1"),
    "grpo-len": ("study_grpo-len_s0",),
    "grpo-lie": ("study_grpo-lie_s0",),
}


def study_config() -> dict[str, Any]:
    return yaml.safe_load(STUDY.read_text(encoding="utf-8"))


def small_study_config(outdir: Path, sft_steps: int = 250) -> dict[str, Any]:
    """The study's config, shrunk to run in seconds (same keys, same reward, same arms)."""
    config = copy.deepcopy(study_config())
    config["name"], config["outdir"] = "study-test", str(outdir)
    config["models"]["tiny"]["sft"].update(problems=400, steps=sft_steps, batch_size=16, warmup_steps=20)
    config["datasets"]["train"]["arith-train"].update(
        expected_rows=8,
        synthetic={"task": "arithmetic", "count": 8, "seed": 11, "min_depth": 2, "max_depth": 5},
    )
    config["datasets"]["eval"]["arith-test"].update(
        expected_rows=4,
        n=2,
        synthetic={"task": "arithmetic", "count": 4, "seed": 12, "min_depth": 3, "max_depth": 5},
    )
    config["reflen"].update(shard_size=8)
    config["training"].update(
        train_batch_size=2, ppo_mini_batch_size=2, rollout_n=4, max_steps=2, save_freq=2
    )
    config["experiments"] = {run: config["experiments"][run] for run in RUNS}
    config["evaluation"].update(budgets=[8, 24, 48], max_tokens=48, shard_size=4)
    config["study"]["arms"] = {
        name: {"label": config["study"]["arms"][name]["label"], "runs": list(runs)}
        for name, runs in ARMS.items()
    }
    return config


def _build(root: Path) -> SimpleNamespace:
    from lie.cli import main
    from lie.config import load_config
    from lie.engines import trl_train
    from lie.layout import Layout

    cfg = write_config(root / "config.yaml", small_study_config(root / "out"))
    config = load_config(cfg)
    layout = Layout(config)
    for name in ("arith-train", "arith-test"):
        out = str(layout.dataset_file(name))
        assert main(["data", "--config", str(cfg), "--set-name", name, "--out", out, "--no-progress"]) == 0
    corpus = [f"--corpus={layout.dataset_file(n)}" for n in ("arith-train", "arith-test")]
    assert main(["base-model", "--config", str(cfg), "--name", "tiny", *corpus]) == 0
    base = layout.base_model("tiny")
    reflen = layout.reflen_file("arith-train", "tiny")
    argv = [
        "reflen",
        "--config",
        str(cfg),
        "--model",
        str(base),
        "--data",
        str(layout.dataset_file("arith-train")),
    ]
    assert main([*argv, "--out", str(reflen), "--no-progress"]) == 0
    for run in RUNS:
        trl_train.train(config, run, reflen, base, threads=1)
        assert main(["merge", run, "--config", str(cfg)]) == 0
    for key in [*RUNS, "tiny"]:
        model, gen = layout.model_for(key), layout.generations(key, "arith-test")
        argv = ["generate", "--config", str(cfg), "--model", str(model), "--bench", "arith-test"]
        argv += ["--data", str(layout.dataset_file("arith-test")), "--out", str(gen), "--no-progress"]
        assert main(argv) == 0
        argv = ["evaluate", "--config", str(cfg), "--gen", str(gen), "--tokenizer", str(model)]
        argv += ["--out-scores", str(layout.scores(key, "scores")), "--out-summary", str(layout.summary(key))]
        assert main([*argv, "--no-progress"]) == 0
    return SimpleNamespace(root=root, cfg=cfg, config=config, layout=layout, base=base, reflen=reflen)


@functools.cache
def pipeline() -> SimpleNamespace:
    """The finished shrunken study (built on first use, shared by the test modules of the process)."""
    root = Path(tempfile.mkdtemp(prefix="lie-study-test-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    return _build(root)
