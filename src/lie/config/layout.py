"""Where every stage reads and writes, under ``outdir`` (README's data flow, "What comes out").

One place for the paths so that the Snakemake rules and the ``lie`` commands' defaults agree.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from lie.formats.runs import RunDir

if TYPE_CHECKING:
    from lie.config.typed import Config


class Layout:
    def __init__(self, config: Config):
        self.config = config
        self.root = config.outdir

    # data
    def dataset_file(self, name: str) -> Path:
        return self.root / "data" / f"{name}.parquet"

    def reflen_file(self, data: str, model: str) -> Path:
        return self.root / "data" / f"{data}.{model}.reflen.parquet"

    # models
    def base_model(self, model: str) -> Path:
        """Local folder of a base model (fetched at its pinned revision, or built)."""
        entry = self.config.model(model)
        if entry.path:
            return Path(entry.path)
        return self.root / "base" / model

    def merged_model(self, run: str) -> Path:
        return self.root / "models" / run

    def init_model(self, run: str) -> Path:
        """The weights a run starts from: its parent's final model (continual stage), else its base."""
        spec = self.config.experiment(run)
        if spec.parent:
            return self.merged_model(spec.parent)
        return self.base_model(spec.model)

    def model_for(self, key: str) -> Path:
        """An evaluated model: a run's merged model, or a base model by its config name."""
        if key in self.config.experiments:
            return self.merged_model(key)
        return self.base_model(key)

    # runs
    def run_dir(self, run: str) -> RunDir:
        return RunDir(self.root, run)

    # evaluation
    def generations(self, key: str, bench: str) -> Path:
        return self.root / "generations" / key / f"{bench}.jsonl"

    def graded(self, key: str, bench: str) -> Path:
        """Graded lines (``lie evaluate --out-scores``; ``scores/`` keeps its name, so that an outdir of
        older code stays valid: a grade, not the LIE reward ``lie score`` computes)."""
        return self.root / "scores" / key / f"{bench}.jsonl"

    def summary(self, key: str) -> Path:
        return self.root / "scores" / key / "summary.json"

    # report
    @property
    def tables(self) -> Path:
        return self.root / "tables"

    @property
    def figures(self) -> Path:
        return self.root / "figures"

    @property
    def logs(self) -> Path:
        return self.root / "logs"


def bare_questions(config: Config, key: str) -> bool:
    """Whether ``key`` (a run or a base model) is evaluated on bare questions (evaluation.bare_questions)."""
    return config.model_of(key) in config.evaluation.bare_questions


def eval_data_file(config: Config, key: str, bench: str) -> Path:
    """The data file ``key`` is evaluated on for ``bench``: ``data/bare/<bench>.parquet`` or ``data/<bench>.parquet``."""
    plain = Layout(config).dataset_file(bench)
    return plain.parent / "bare" / plain.name if bare_questions(config, key) else plain
