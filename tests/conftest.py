"""Shared fixtures: the real data files in ../shared/data (never copied into the repository)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("LIE_SHARED_DATA", REPO.parent / "shared" / "data"))


def shared_file(relative: str) -> Path:
    """A file of ../shared/data, or a skip that says why the test cannot run here."""
    path = SHARED_DATA / relative
    if not path.exists():
        pytest.skip(
            f"{path} is absent: these tests read the authors' and benchmark files from ../shared/data "
            "(set LIE_SHARED_DATA to another copy of that folder)"
        )
    return path


@pytest.fixture
def authors_dapo() -> Path:
    return shared_file("lie-authors/dapo-math-17k_llama-add1k.parquet")


@pytest.fixture
def authors_deepmath() -> Path:
    return shared_file("lie-authors/deepmath-5k-octothinker_add1k.parquet")


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """An empty hub cache, offline (huggingface_hub reads both settings at import: patch them)."""
    from huggingface_hub import constants

    cache = tmp_path / "hub"
    cache.mkdir()
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return cache
