"""Where the study's own stages write, under the config's ``outdir`` (beside the pipeline's layout):
``probe/<model>/``, ``probe-forced/<model>/`` and ``responses/<key>.jsonl``; and what the study's rules
read and write (``workflow/rules/study.smk``: :func:`gate_inputs`, :func:`study_inputs`, :func:`study_paths`).
Light on purpose: the Snakefile imports it whenever it plans, whatever the config."""

from __future__ import annotations

from pathlib import Path

from lie.config.layout import Layout
from lie.config.typed import Config
from lie.study.spec import study_spec


class StudyPaths:
    def __init__(self, layout: Layout):
        self.layout = layout
        self.root = layout.root

    def responses(self, key: str) -> Path:
        """Per-response columns of ``key``'s evaluation (``lie study-responses``)."""
        return self.root / "responses" / f"{key}.jsonl"

    def probe_dir(self, model: str, forced: bool = False) -> Path:
        """The supervised model sampled as RL samples it (``lie study-probe``), scored, with columns;
        ``forced``: the third registration's forced-depth probe (``lie study-probe --forced``)."""
        return self.root / ("probe-forced" if forced else "probe") / model

    def probe_generations(self, model: str, forced: bool = False) -> Path:
        return self.probe_dir(model, forced) / "generations.jsonl"

    def probe_scores(self, model: str, forced: bool = False) -> Path:
        return self.probe_dir(model, forced) / "scores.jsonl"

    def probe_summary(self, model: str, forced: bool = False) -> Path:
        return self.probe_dir(model, forced) / "summary.json"

    def probe_responses(self, model: str, forced: bool = False) -> Path:
        return self.probe_dir(model, forced) / "responses.jsonl"

    @property
    def gates(self) -> list[Path]:
        """The gates' tables (``lie study-gates``): markdown, then CSV."""
        return [self.layout.tables / "study_gates.md", self.layout.tables / "study_gates.csv"]


def gate_inputs(config: Config, layout: Layout) -> list[str]:
    """The files the gates read (``lie.study.gates.measure_all``: the ``study_gates`` rule's inputs)."""
    paths, spec = StudyPaths(layout), study_spec(config)
    natural = [str(paths.probe_responses(m)) for m in spec.base_models]
    return natural + (
        [str(paths.probe_responses(m, forced=True)) for m in spec.base_models] if spec.third else []
    )


def study_paths(layout: Layout) -> list[Path]:
    """The study report's figures and tables (``lie.study.report.build_study`` writes them, in this order)."""
    figures, tables = layout.figures, layout.tables
    return [
        figures / "study_dynamics.png",
        figures / "study_budget.png",
        figures / "study.png",
        tables / "study_steps.csv",
        tables / "study_budget.csv",
        tables / "study_summary.csv",
        tables / "study_paired.csv",
        tables / "study_summary.md",
        tables / "study_tests.csv",
    ]


def study_inputs(config: Config, layout: Layout) -> dict[str, list[str]]:
    """Every file the study report reads (the ``study`` rule's inputs), by kind."""
    spec = study_spec(config)
    paths = StudyPaths(layout)
    keys = [*spec.runs, *spec.base_models]
    forced = (False, True) if spec.third else (False,)  # the third registration's forced-depth probes too
    return {
        "runs": [str(layout.run_dir(run).final_json) for run in spec.runs],
        "responses": [str(paths.responses(key)) for key in keys],
        "probes": [str(paths.probe_responses(m, forced=f)) for f in forced for m in spec.base_models],
        "gates": [str(p) for p in paths.gates],
    }
