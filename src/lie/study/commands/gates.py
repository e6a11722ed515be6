"""``lie study-gates --config C``: the gates on the supervised models, before any RL run.

Reads the probe's per-response columns of every condition's supervised model (``lie.study.gates``)
and writes ``tables/study_gates.{md,csv}`` under the config's ``outdir``. A failed gate of the first two
registrations is an error naming each; from the third on it is a registered outcome: the tables are
written, the job succeeds, and ``--outcome`` reads them back in one line (exit 3: ``make study`` stops there,
before any run, with exit 0). The logic: ``lie.study.stages.steps``, ``lie.study.gates``.
"""

from __future__ import annotations

import argparse

from lie.commands.argtypes import add_config_option, check_written, load_config_option
from lie.study.stages.steps import placed_outputs, study_gates, study_gates_outcome

GATE_STOP = 3  # --outcome: a gate failed, the registration's stop before RL (a result, not an error)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_option(parser, "the study's config (with a study: section)")
    parser.add_argument(
        "--outcome",
        action="store_true",
        help=f"read the gates' table already written and print the outcome in one line: exit 0 when every "
        f"gate passed, {GATE_STOP} when the registration stops at a gate (make study then ends there)",
    )


def run(args: argparse.Namespace) -> int:
    config = load_config_option(args)
    if args.outcome:
        passed, line = study_gates_outcome(config)
        print(line)
        return 0 if passed else GATE_STOP
    check_written(args, placed_outputs(config, "study-gates"))
    study_gates(config)
    return 0
