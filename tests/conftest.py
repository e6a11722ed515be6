"""Shared fixtures: slices of the real data files (tests/data/shared) and, where present, the full files.

Every behaviour is tested on the slices, which travel with the repository (tests/data/README.md says
where each comes from); the full files of ../shared/data only add checks on their whole content.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from skipcheck import pytest_sessionfinish, pytest_terminal_summary  # noqa: F401 (the CI skip check)

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("LIE_SHARED_DATA", REPO.parent / "shared" / "data"))
SLICES = REPO / "tests" / "data" / "shared"


def data_file(relative: str) -> Path:
    """The committed slice of a file of ../shared/data (same path under tests/data/shared)."""
    path = SLICES / relative
    assert path.exists(), f"{path} is missing: tests/data/shared/make_slices.py rebuilds it"
    return path


def shared_file(relative: str) -> Path:
    """A file of ../shared/data, or a skip that says why the test cannot run here."""
    path = SHARED_DATA / relative
    if not path.exists():
        pytest.skip(
            f"{path} is absent: an extra check on the full file of ../shared/data (the same test runs on "
            "its slice in tests/data/shared; set LIE_SHARED_DATA to another copy of that folder)"
        )
    return path


DAPO = "lie-authors/dapo-math-17k_llama-add1k.parquet"
DEEPMATH = "lie-authors/deepmath-5k-octothinker_add1k.parquet"


@pytest.fixture
def authors_dapo() -> Path:
    return data_file(DAPO)


@pytest.fixture
def authors_deepmath() -> Path:
    return data_file(DEEPMATH)


@pytest.fixture
def full_authors_dapo() -> Path:
    return shared_file(DAPO)


@pytest.fixture
def full_authors_deepmath() -> Path:
    return shared_file(DEEPMATH)


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
