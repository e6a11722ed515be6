"""A pytest plugin: how ``make test`` shares the tests out between its pytest-xdist workers.

``-n 2 --dist loadgroup`` (Makefile): a group is one unit of work, run whole by one worker in collection
order, so that a module's fixtures are built once. Every test module is a group of its own, but for the
modules that read one shared run (SHARED): the smoke DAG's readers, the report_pipeline's readers, the
study pipeline's readers. The
longest groups are collected first (LONGEST_FIRST), so that they start at once and neither worker is
left with a long group at the end.

The groups come from the test ids' module paths, through xdist's own hook for a scheduler
(``pytest_xdist_make_scheduler``), not from ``xdist_group`` marks: pytest-xdist 3.8 passes marks on by
rewriting a test's node id, which pytest 9.2 no longer lets it do (pytest-xdist issue 1386: the marks
are silently ignored). tests/conftest.py loads the hooks; tests/test_xdist_groups.py runs them.
"""

from __future__ import annotations

from pathlib import PurePosixPath

import pytest

# module -> group, for the modules that read one run made once per pytest run
SHARED = {
    **dict.fromkeys(
        ("test_smoke_e2e", "test_verl_main_ppo", "test_checkout_move", "test_make_report"), "smoke"
    ),  # tests/smoke_run.py
    **dict.fromkeys(("test_reward_authors", "test_smoke_golden"), "smoke"),  # the smoke run's numbers
    **dict.fromkeys(
        ("test_analysis_dynamics", "test_behaviours_cli", "test_report", "test_report_snakemake"), "report"
    ),  # tests/report_pipeline.py
    **dict.fromkeys(("test_study", "test_study_v3"), "study"),  # tests/study_pipeline.py
}
# the longest groups, longest first (seconds on the idle 2-core box, docs/benchmarks.md); the rest follow
LONGEST_FIRST = (
    "smoke",
    "test_vllm_cpu",
    "test_reruns",
    "study",
    "test_vllm_verl",
    "test_cluster",
    "test_train_trl",
    "test_train_verl",
    "report",
    "test_verl_cpu",
    "test_data_safety",
    "test_bad_input",
    "test_skipcheck",
    "test_grading",
    "test_slurm_jobstep",
    "test_slurm_launcher",
)


def group_of(nodeid: str) -> str:
    """The group of a test id: its module's shared group, else the module's name."""
    module = PurePosixPath(nodeid.split("::", 1)[0]).stem
    return SHARED.get(module, module)


def _rank(nodeid: str) -> int:
    group = group_of(nodeid)
    return LONGEST_FIRST.index(group) if group in LONGEST_FIRST else len(LONGEST_FIRST)


@pytest.hookimpl(trylast=True)  # after the deselections: only the order changes
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: _rank(item.nodeid))  # stable: collection order within a rank


def pytest_xdist_make_scheduler(config: pytest.Config, log):  # noqa: ANN201 (xdist's scheduler type)
    if config.getvalue("dist") != "loadgroup":
        return None  # xdist's own scheduler for every other mode
    from xdist.scheduler import LoadScopeScheduling

    config.option.loadscopereorder = False  # the collection's order (LONGEST_FIRST), not by test count

    class GroupScheduling(LoadScopeScheduling):
        """xdist's module-scope scheduling, with SHARED's modules in one scope each."""

        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid)

    return GroupScheduling(config, log)
