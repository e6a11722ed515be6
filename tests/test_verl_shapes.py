"""verl's ``main_ppo`` on the CPU at the cluster's shapes, not a convenient one: 4 FSDP ranks on one node
(a 4-GPU node) and 2 Ray nodes of 2 ranks (two nodes, joined as the Slurm launcher joins them), with the
paper's batch arithmetic scaled only in sizes that leave verl's control flow as it is (a step's prompts
split into 4 mini-batches, dynamic batching, the actor strategy and offload the cluster composes). A line
that ran at 1 rank and batch 2 can still fail here (the preflight's trial did: 2 of its 4 steps at 4 GPUs)."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytest.importorskip("verl")

from small import arithmetic_rows, small_config, validation_rows, write_config, write_parquet  # noqa: E402

from lie.formats.runs import RunDir, read_metrics, read_rollouts  # noqa: E402
from lie.stages.plan import verl_steps  # noqa: E402

# minutes each on 2 cores (make test-all), more on a loaded machine: beyond pytest-timeout's 600 s default
pytestmark = [pytest.mark.heavy, pytest.mark.timeout(2400)]
RUN = "tiny_gspo_lie"
BATCH, MINI, SAMPLES = 8, 2, 4  # prompts a step (2 a rank), 4 mini-batches a step as the paper's 128/32


def _setup(root: Path, model: Path, nnodes: int, gpus: int, rows: int) -> Path:
    config = small_config(root / "out", model, nnodes=nnodes, n_gpus_per_node=gpus, train_batch_size=BATCH,
                          ppo_mini_batch_size=MINI, rollout_n=SAMPLES, max_steps=None, save_freq=2,
                          val_sets=["arith-val"], test_freq=2, keep_checkpoints=2)  # fmt: skip
    config["models"]["tiny"]["enable_thinking"] = False
    config["datasets"]["eval"]["arith-val"] = copy.deepcopy(config["datasets"]["eval"]["math500"])
    write_parquet(root / "train.parquet", arithmetic_rows(rows, ref_len=40))
    write_parquet(root / "val.parquet", validation_rows(4, "arith-val"))
    return write_config(root / "config.yaml", config)


def _train(root: Path, model: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    args = ["train", RUN, "--config", str(root / "config.yaml"), "--engine", "verl", "--device", "cpu",
            "--train-file", str(root / "train.parquet"), "--val-file", str(root / "val.parquet"),
            "--model", str(model)]  # fmt: skip
    return subprocess.run([sys.executable, "-m", "lie", *args], capture_output=True, text=True, timeout=1500,
                          env={**os.environ, **(env or {})})  # fmt: skip


def _check_run(root: Path, ranks: int, steps: int) -> dict:
    """verl ran ``steps`` steps at ``ranks`` FSDP ranks; the composed config as verl ran it."""
    rundir = RunDir(root / "out", RUN)
    assert [m["step"] for m in read_metrics(rundir)] == list(range(1, steps + 1))
    rollouts = read_rollouts(rundir)
    assert [sum(r["step"] == s for r in rollouts) for s in range(1, steps + 1)] == [BATCH * SAMPLES] * steps
    shards = sorted(
        p.name for p in (rundir.checkpoints / f"global_step_{steps}" / "actor").glob("model_*.pt")
    )
    assert shards == [f"model_world_size_{ranks}_rank_{r}.pt" for r in range(ranks)]
    assert json.loads(rundir.final_json.read_text())["step"] == steps
    return yaml.safe_load(rundir.verl_config.read_text())


def test_four_ranks_on_one_node_run_the_clusters_step_arithmetic_and_merge(tmp_path, arith_tiny):
    """A 4-GPU node's shape: 4 ranks, 8 prompts x 4 samples a step in 4 mini-batches, dynamic batching on,
    2 epochs of 16 rows: verl runs the steps lie plan counts (verl_steps), saves 4-rank shards, and lie
    merge joins them into one Hugging Face model."""
    rows, epochs = 16, 2
    config = _setup(tmp_path, arith_tiny, nnodes=1, gpus=4, rows=rows)
    data = yaml.safe_load(config.read_text())
    data["experiments"][RUN]["epochs"] = epochs
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    proc = _train(tmp_path, arith_tiny)
    assert proc.returncode == 0, proc.stderr[-4000:]
    steps = verl_steps(rows, BATCH, epochs, None)
    assert steps == 4
    composed = _check_run(tmp_path, ranks=4, steps=steps)
    actor = composed["actor_rollout_ref"]["actor"]
    assert (composed["trainer"]["nnodes"], composed["trainer"]["n_gpus_per_node"]) == (1, 4)
    assert actor["use_dynamic_bsz"] and actor["ppo_mini_batch_size"] == MINI
    # the cluster's strategy, FSDP1 (the written config keeps ref's interpolation of the actor's)
    assert actor["strategy"] == "fsdp"
    assert composed["actor_rollout_ref"]["ref"]["strategy"] in ("fsdp", "${actor_rollout_ref.actor.strategy}")
    assert actor["fsdp_config"]["param_offload"] and actor["fsdp_config"]["optimizer_offload"]
    merged = tmp_path / "merged"
    proc = subprocess.run([sys.executable, "-m", "lie", "merge", RUN, "--config", str(config), "--out", str(merged)],
                          capture_output=True, text=True, timeout=900)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (merged / "config.json").exists() and list(merged.glob("*.safetensors"))


def test_two_ray_nodes_of_two_ranks_run_one_job_as_the_slurm_launcher_joins_them(tmp_path, arith_tiny):
    """Two Ray nodes (two raylets on this machine, 2 fake GPUs each), joined before verl starts as
    ray_on_slurm.sh joins a job's nodes, RAY_ADDRESS exported: verl composes 2 node pools of 2 ranks and
    leaves Ray's resources to the running cluster (ray.init refuses them when it connects)."""
    from ray.cluster_utils import Cluster

    _setup(tmp_path, arith_tiny, nnodes=2, gpus=2, rows=BATCH * 2)
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 8, "num_gpus": 2})
    try:
        cluster.add_node(num_cpus=8, num_gpus=2)
        cluster.wait_for_nodes()
        proc = _train(tmp_path, arith_tiny, env={"RAY_ADDRESS": cluster.address})
        assert proc.returncode == 0, proc.stderr[-4000:]
    finally:
        cluster.shutdown()
    composed = _check_run(tmp_path, ranks=4, steps=2)
    assert (composed["trainer"]["nnodes"], composed["trainer"]["n_gpus_per_node"]) == (2, 2)
    assert "num_gpus" not in (composed.get("ray_kwargs", {}).get("ray_init") or {})
