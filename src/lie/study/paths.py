"""Where the study's own stages write, under the config's ``outdir`` (beside the pipeline's layout):
``probe/<model>/``, ``probe-forced/<model>/`` and ``responses/<key>.jsonl``."""

from __future__ import annotations

from pathlib import Path

from lie.config.layout import Layout


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
