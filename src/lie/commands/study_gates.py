"""``lie study-gates --config C``: the gates on the supervised models, before any RL run.

Reads the probe's per-response columns of every condition's supervised model (``lie.study.gates``)
and writes ``tables/study_gates.{md,csv}`` under the config's ``outdir``; exits with an error that
names each failed gate, so that ``make study`` stops before training (the logic: ``lie.stages.study``).
"""

from __future__ import annotations

import argparse

from lie.commands.argtypes import add_config_option, check_written, load_config_option


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_option(parser, "the study's config (with a study: section)")


def run(args: argparse.Namespace) -> int:
    from lie.stages.placed import placed_outputs
    from lie.stages.study import study_gates

    config = load_config_option(args)
    check_written(args, placed_outputs(config, "study-gates"))
    study_gates(config)
    return 0
