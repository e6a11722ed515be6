"""tests/device/memory_probe.py on the CPU: the code a borrowed GPU runs, at a tiny shape.

A CPU has no allocator statistics, so the memory figures read n/a here; what runs is everything else: the
Qwen3-shaped model from a local config, gradient checkpointing, SDPA, the packed micro-batch, log-probs,
the entropy, backward, and the extrapolation's arithmetic against the models' published sizes.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("memory_probe", REPO / "tests" / "device" / "memory_probe.py")
assert _spec and _spec.loader
probe = importlib.util.module_from_spec(_spec)
sys.modules["memory_probe"] = probe  # its dataclasses look their module up
_spec.loader.exec_module(probe)


def test_the_probe_runs_every_pass_at_a_tiny_shape_on_a_cpu(tmp_path, capsys):
    out = tmp_path / "probe.json"
    assert probe.main(["--device", "cpu", "--entropy", "eager", "--out", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    passes = [
        x for x in lines if re.match(r"tiny [24] layers (log-prob|update|update\+entropy): 3 x 32 tokens", x)
    ]
    assert len(passes) == 6, lines
    assert all("peak n/a" in x for x in passes)  # no allocator statistics on a CPU, and it says so
    assert lines[-1] == "memory probe: 6 passes, 0 estimates"
    record = json.loads(out.read_text())
    assert record["entropy"] == "eager (--entropy eager)" and record["device"] == "cpu"
    assert {(p["layers"], p["name"]) for p in record["passes"]} == {
        (n, name) for n in (2, 4) for name in probe.PASSES
    }
    assert all(p["tokens"] == 96 and abs(p["loss"]) < 1e3 for p in record["passes"])


def test_a_bad_argument_is_one_line(capsys):
    assert probe.main(["--device", "cpu", "--cases", "70b-32k"]) == 2
    assert "unknown case(s) ['70b-32k']" in capsys.readouterr().err
    assert probe.main(["--device", "cpu", "--layers", "4,2"]) == 2


def test_the_log_probs_and_their_gradient_equal_torch_log_softmax():
    torch.manual_seed(0)
    logits = torch.randn(37, 50, dtype=torch.float64, requires_grad=True)
    labels = torch.randint(50, (37,))
    weights = torch.randn(37, dtype=torch.float64)
    ours = probe.label_log_probs(logits, labels, chunk=8)  # chunks that do not divide the rows
    (ours.double() * weights).sum().backward()
    ours_grad = logits.grad.clone()
    logits.grad = None
    reference = torch.log_softmax(logits, -1).gather(-1, labels[:, None]).squeeze(-1)
    (reference * weights).sum().backward()
    assert torch.allclose(ours.double(), reference, atol=1e-6)
    assert torch.allclose(ours_grad, logits.grad, atol=1e-6)


def test_the_entropy_is_the_softmax_entropy():
    logits = torch.randn(5, 11)
    p = torch.softmax(logits, -1)
    assert torch.allclose(probe.entropy_of(logits), -(p * p.log()).sum(-1), atol=1e-5)


def test_the_shapes_give_the_published_sizes_and_one_layer_is_counted_exactly():
    # Qwen3-8B has 8.2B parameters, Qwen3-4B 4.0B (their model cards)
    assert 8.1e9 < probe.total_params(probe.SHAPES["qwen3-8b"]) < 8.3e9
    assert 3.95e9 < probe.total_params(probe.SHAPES["qwen3-4b"]) < 4.1e9
    model = probe.build_model(probe.SHAPES["tiny"], 2, "cpu")
    layer = sum(p.numel() for p in model.model.layers[0].parameters())
    assert layer == probe.layer_params(probe.SHAPES["tiny"])
    assert sum(p.numel() for p in model.parameters()) == probe.outer_params(probe.SHAPES["tiny"]) + 2 * layer


def test_the_estimate_extrapolates_the_measured_layers_and_adds_the_sharded_states():
    shape = probe.SHAPES["qwen3-8b"]
    gib = probe.GiB
    e = probe.estimate("8b-8k", "update", shape, (2, 20 * gib), (4, 21 * gib), world=4)
    assert e.per_layer_bytes == 0.5 * gib
    assert e.activation_bytes == 20 * gib + 34 * 0.5 * gib  # 36 layers
    params = probe.total_params(shape)
    assert e.optimizer_step_bytes == pytest.approx(16 * params / 4)  # fp32 weights, grads, two Adam moments
    assert e.total_bytes == max(e.activation_bytes + e.fsdp_bytes, e.optimizer_step_bytes)
    assert e.fsdp_bytes > 8 * params / 4  # sharded fp32 weights and grads, plus the gathered bf16 units


@pytest.mark.heavy
def test_the_compiled_entropy_runs_in_the_probe_on_a_cpu(tmp_path, capsys):
    """torch.compile (inductor's C++ backend on a CPU: tens of seconds) as the GPU runs it."""
    assert probe.main(["--device", "cpu", "--out", str(tmp_path / "p.json")]) == 0
    assert json.loads((tmp_path / "p.json").read_text())["entropy"] == "compiled"
    assert "torch.compile failed" not in capsys.readouterr().out
