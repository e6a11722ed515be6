"""tests/coverage/gpu_only.yaml, the lines of engines/ and stages/ that no test here can execute: each
still exists where it is listed, and each says why only a GPU, NVIDIA's driver or Slurm runs it."""

from __future__ import annotations

from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
LISTED = REPO / "tests" / "coverage" / "gpu_only.yaml"
REASONS = ("CUDA", "NVIDIA", "Slurm", "GPU")


def test_every_listed_line_exists_and_says_why_only_a_gpu_runs_it():
    entries = yaml.safe_load(LISTED.read_text(encoding="utf-8")) or []
    for entry in entries:
        assert set(entry) == {"file", "line", "why"}, entry
        assert entry["file"].startswith(("engines/", "stages/")), entry
        source = (REPO / "src" / "lie" / entry["file"]).read_text(encoding="utf-8").splitlines()
        assert entry["line"].strip() in {line.strip() for line in source}, (
            f"no longer in {entry['file']}: {entry}"
        )
        assert any(word in entry["why"] for word in REASONS), entry
    keys = [(e["file"], e["line"].strip()) for e in entries]
    assert len(keys) == len(set(keys)), "a line listed twice"
