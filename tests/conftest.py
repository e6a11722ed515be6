"""Shared fixtures: slices of the real data files (tests/data/shared) and, where present, the full files.

Every behaviour is tested on the slices, which travel with the repository (tests/data/README.md says
where each comes from); the full files of ../shared/data only add checks on their whole content.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from once import built_once
from skipcheck import pytest_sessionfinish, pytest_terminal_summary  # noqa: F401 (the CI skip check)
from smoke_run import TEST_TIMEOUT, smoke_child_run, smoke_run

pytest_plugins = ["xdist_groups"]  # make test's two workers: groups and order (tests/xdist_groups.py)

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("LIE_SHARED_DATA", REPO.parent / "shared" / "data"))
SLICES = REPO / "tests" / "data" / "shared"


def data_file(relative: str) -> Path:
    """The committed slice of a file of ../shared/data (same path under tests/data/shared)."""
    path = SLICES / relative
    assert path.exists(), f"{path} is missing: tests/data/shared/make_slices.py rebuilds it"
    return path


def shared_file(relative: str) -> Path:
    """A file of ../shared/data; a test that calls it carries the `shared` mark (see below)."""
    path = SHARED_DATA / relative
    assert path.exists(), f"{path} is missing although {SHARED_DATA} is present: is that copy complete?"
    return path


# An extra check on a whole file outside the repository (../shared/data, ../shared/SPEC.md) is marked
# `shared(path)`. Where that path is absent (a fresh clone) the test is not collected, rather than
# skipped: the same behaviour runs on the committed slice, and a skip is kept for what cannot run here.
SHARED = pytest.mark.shared(SHARED_DATA)


def full(*values):
    """A parameter set that reads the full files of ../shared/data: `full("full", 83)`."""
    return pytest.param(*values, marks=SHARED)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "shared(path): an extra check on a whole file outside the repository; not collected where path is absent",
    )


def _absent_shared(item: pytest.Item) -> Path | None:
    for mark in item.iter_markers("shared"):
        path = Path(mark.args[0])
        if not path.exists():
            return path
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:  # any of them may be the first to ask, and so build the DAG in its setup
        if {"smoke", "smoke_child"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(
                pytest.mark.timeout(TEST_TIMEOUT * (2 if "smoke_child" in item.fixturenames else 1))
            )
    absent = {item: _absent_shared(item) for item in items}
    dropped = [item for item, path in absent.items() if path is not None]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if absent[item] is None]


def pytest_report_header(config: pytest.Config) -> str | None:
    if SHARED_DATA.exists():
        return f"extra checks on the full files of {SHARED_DATA}: on"
    return f"extra checks on the full files of {SHARED_DATA}: not collected (folder absent; slices still run)"


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
    return shared_file(DAPO)  # the tests that ask for it list it as full("full_authors_dapo")


@pytest.fixture
def full_authors_deepmath() -> Path:
    return shared_file(DEEPMATH)


@pytest.fixture(scope="session", autouse=True)
def _offline_hub():
    """No test in this process waits on the Hugging Face hub: huggingface_hub reads HF_HUB_OFFLINE once,
    at import, so setting the variable in a test does nothing (a test that did waited 70 s on the network
    before failing). The tests of the online path (a stand-in hub, a local file server) patch it back with
    monkeypatch, which restores this after them. Subprocesses keep the environment they are given."""
    from huggingface_hub import constants

    before = constants.HF_HUB_OFFLINE
    constants.HF_HUB_OFFLINE = True
    yield
    constants.HF_HUB_OFFLINE = before


@pytest.fixture(scope="session")
def smoke(tmp_path_factory):
    """The one smoke DAG run of this pytest run (tests/smoke_run.py), for every module that reads it."""
    return smoke_run(tmp_path_factory)


@pytest.fixture(scope="session")
def smoke_child(tmp_path_factory):
    """The smoke DAG with its continual child (tests/smoke_run.py), for the heavy tests that read the child."""
    return smoke_child_run(tmp_path_factory)


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


def _build_arith_tiny(folder: Path) -> None:
    from small import arithmetic_rows

    from lie.stages.tiny import build_tiny

    corpus = [r["prompt"][0]["content"] for r in arithmetic_rows(40)] + ["The answer is \\boxed{7}."] * 5
    build_tiny(folder / "model", corpus, seed=0, vocab_size=300)


@pytest.fixture(scope="session")
def arith_tiny(tmp_path_factory) -> Path:
    """The tiny model of the arithmetic tests (its tokenizer trained on their prompts), built once per
    pytest run for every worker (tests/once.py); read-only: a test that changes it works on a copy."""
    return built_once(tmp_path_factory, "arith-tiny", _build_arith_tiny) / "model"
