"""Small configurations and files for tests: config.yaml shrunk to a tiny model and a few prompts."""

from __future__ import annotations

import copy
import textwrap
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

REPO = Path(__file__).resolve().parents[1]


def site_file_of_the_docs() -> str:
    """The site file docs/cluster.md shows (its ```yaml block that starts with `# site.yaml`): what a first
    cluster user writes beside config.yaml."""
    text = (REPO / "docs/cluster.md").read_text()
    blocks = [textwrap.dedent(b.split("```")[0].rstrip(" ")) for b in text.split("```yaml\n")[1:]]
    return next(b for b in blocks if b.startswith("# site.yaml"))


def paper_config() -> dict[str, Any]:
    return yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))


def small_config(outdir: Path, model_path: Path, **training: Any) -> dict[str, Any]:
    """config.yaml with a tiny model, tiny batches and two runs on it (GSPO+LIE, GRPO)."""
    config = copy.deepcopy(paper_config())
    config["outdir"] = str(outdir)
    config["name"] = "test"
    config["models"]["tiny"] = {
        "path": str(model_path),
        "hf_id": None,
        "revision": None,
        "enable_thinking": None,
    }
    config["datasets"]["train"]["arith"] = copy.deepcopy(config["datasets"]["train"]["dapo"])
    config["training"].update(
        {
            "train_batch_size": 2,
            "ppo_mini_batch_size": 2,
            "rollout_n": 4,
            "max_prompt_length": 64,
            "max_response_length": 24,
            "save_freq": 1,
            "lr": 1e-3,
            "lr_warmup_steps": 0,
            "max_steps": 3,
            "logger": ["console", "file"],
            "n_gpus_per_node": 1,  # one CPU rank a node (verl's CPU backend runs nnodes x n_gpus_per_node ranks)
        }
    )
    config["training"].update(training)
    base = {
        "model": "tiny",
        "data": "arith",
        "extra_tokens": 0,
        "epochs": 1,
        "parent": None,
        "max_response_length": None,
    }
    config["experiments"] = {
        "tiny_gspo_lie": {**base, "algorithm": "gspo", "lie": "on", "extra_tokens": 500},
        "tiny_grpo": {**base, "algorithm": "grpo", "lie": "off"},
    }
    config["runs"] = []
    return config


def write_config(path: Path, config: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def arithmetic_rows(count: int, ref_len: int = 20) -> list[dict[str, Any]]:
    """Training rows in verl's format, with L_ref as `lie reflen` writes it."""
    rows = []
    for i in range(count):
        a, b = i % 7 + 1, i % 5 + 2
        rows.append(
            {
                "data_source": "arith",
                "prompt": [{"role": "user", "content": f"What is {a} + {b}? Answer within \\boxed{{}}."}],
                "ability": "math",
                "reward_model": {"ground_truth": str(a + b), "style": "rule", "num_tokens": ref_len},
                "extra_info": {"index": i, "split": "train", "kind": "math", "letters": [], "choices": []},
            }
        )
    return rows


def validation_rows(count: int, source: str) -> list[dict[str, Any]]:
    """Arithmetic rows of a validation set named ``source``: no L_ref (verl scores them by accuracy)."""
    rows = arithmetic_rows(count)
    for row in rows:
        row["data_source"] = source
        del row["reward_model"]["num_tokens"]
    return rows


def write_parquet(path: Path, rows: list[dict[str, Any]]) -> Path:
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def lie_in_process(caplog: Any, *argv: str) -> str:
    """``lie ARGV`` through the CLI's own ``main`` in this process; its log, which the caller's asserts read.

    The tests that only read what a command did and logged (not how its process ends) run it here: a
    process of its own would import torch, transformers and TRL again (~5 CPU-s a launch). A nonzero
    exit fails the test with the log.
    """
    import logging

    from lie.cli import main

    caplog.clear()
    with caplog.at_level(logging.INFO):
        code = main(list(argv))
    assert code == 0, f"lie {' '.join(argv)} exited {code}:\n{caplog.text[-3000:]}"
    return caplog.text


def verl_checkpoint(folder: Path, step: int, complete: bool = True) -> Path:
    """``global_step_<step>`` as verl lays it out: the actor's shard, then (``complete``) the loader's
    ``data.pt``, which verl writes last (a kill between them leaves a torn checkpoint)."""
    path = folder / f"global_step_{step}"
    (path / "actor").mkdir(parents=True)
    (path / "actor" / "model_world_size_1_rank_0.pt").write_bytes(b"weights")
    if complete:
        (path / "data.pt").write_bytes(b"loader")
    return path
