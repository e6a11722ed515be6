"""``lie study-gates --config C``: the gates on the supervised models, before any RL run.

Reads the probe's per-response columns of every condition's supervised model (``lie.study.gates``)
and writes ``tables/study_gates.{md,csv}`` under the config's ``outdir``; exits with an error that
names each failed gate, so that ``make study`` stops before training.
"""

from __future__ import annotations

import argparse
import logging

from lie.commands.argtypes import add_config_option
from lie.core.errors import LieError

log = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_option(parser, "the study's config (with a study: section)")


def run(args: argparse.Namespace) -> int:
    from lie.config import load_config
    from lie.config.layout import Layout
    from lie.formats.jsonl import atomic_output
    from lie.report.render import csv_text
    from lie.study.gates import failures, gates_markdown, measure_all
    from lie.study.paths import StudyPaths
    from lie.study.spec import study_spec

    config = load_config(args.config)
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
        raise LieError(
            "a gate on the supervised models failed (change only the supervised stage): " + "; ".join(failed)
        )
    return 0
