"""The CPU study's steps after sampling (``lie study-responses``, ``lie study-gates``, ``lie study-report``).

The per-response columns of generated samples (``lie.study.responses``), the gates on the supervised
models before any RL run (``lie.study.gates``: ``tables/study_gates.{md,csv}``), and the study's
figures and tables (``lie.study.report``). The probe that samples the supervised models is
``lie.study.stages.probe``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from lie.config.layout import Layout
from lie.config.typed import Config
from lie.core.errors import LieError
from lie.formats.jsonl import atomic_output
from lie.report.render import csv_text
from lie.stages.base_model import tokenizer_for
from lie.study.gates import failures, gates_markdown, gates_outcome, measure_all
from lie.study.paths import StudyPaths
from lie.study.report import build_study
from lie.study.responses import response_rows, write_responses
from lie.study.spec import study_spec

log = logging.getLogger(__name__)


def placed_outputs(config: Config, command: str) -> dict[str, Path]:
    """What ``lie COMMAND`` (``study-gates``, ``study-report``) writes under the config's ``outdir``, by
    label: the command checks these against its inputs before any work (as ``lie.stages.placed``'s do)."""
    layout = Layout(config)
    if command == "study-report":
        return {"the tables": layout.tables, "the figures": layout.figures}
    if command == "study-gates":
        return {"the tables": layout.tables}
    raise ValueError(f"not a study command that writes under outdir: {command!r}")


def study_responses(
    config: Config,
    gen: Sequence[str],
    scores: str,
    data: Sequence[str],
    tokenizer: str,
    out: str,
) -> None:
    """One JSON line per generated sample of ``gen`` with the study's columns, written to ``out``."""
    write_responses(out, response_rows(config, gen, scores, data, tokenizer_for(config, tokenizer)))


def study_gates(config: Config) -> list[Path]:
    """Measure the gates, write ``tables/study_gates.{md,csv}``; a failed gate is an error naming each."""
    results = measure_all(config)
    markdown = gates_markdown(study_spec(config), results)
    md_path, csv_path = StudyPaths(Layout(config)).gates
    md_path.parent.mkdir(parents=True, exist_ok=True)
    for path, text in ((md_path, markdown), (csv_path, csv_text([r.as_dict() for r in results]))):
        with atomic_output(path) as out:
            out.write(text)
    log.info("gates:\n%s", markdown)
    failed = failures(results)
    if failed:
        message = "a gate on the supervised models failed (change only the supervised stage): " + "; ".join(
            failed
        )
        if not study_spec(config).third:
            raise LieError(message)
        # preregistration-v3.md: a failed gate ends the study before RL, a registered outcome; the job
        # succeeds so that its tables stay (Snakemake removes a failed job's outputs), and make study reads
        # them (lie study-gates --outcome) before asking for any run
        log.warning("%s; the registration stops here, before any RL run, without a verdict", message)
    return [md_path, csv_path]


def study_gates_outcome(config: Config) -> tuple[bool, str]:
    """The gates' table as written, read back: whether every gate passed, and the outcome in one line."""
    passed, line = gates_outcome(StudyPaths(Layout(config)).gates[1])
    return passed, f"{config.name}: {line}"


def study_report(config: Config, pool_with: Sequence[str | Path] = ()) -> list[Path]:
    """The study's figures and tables under ``outdir``; returns their paths. ``pool_with``: other
    machines' study outdirs, whose pairs the registered tests also read (``study_tests_pooled.csv``)."""
    return build_study(config, pool_with=pool_with)
