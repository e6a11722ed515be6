"""The ``lie`` command: one subcommand per pipeline stage (DESIGN.md); run ``lie --help``.

Subcommand modules are imported only when chosen, so that ``lie score`` starts without torch.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import math
import sys
from collections.abc import Sequence

from lie import __version__
from lie.commands.argtypes import check_outputs
from lie.core.errors import LieError, describe

log = logging.getLogger("lie.cli")

# name -> (module under lie.commands, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "score": ("lie.commands.score", "LIE reward of JSON-lines responses (R_acc + R_len + R_red)"),
    "data": ("lie.commands.data", "fetch a data set and write it in verl's row format (parquet)"),
    "reflen": ("lie.commands.reflen", "per-prompt reference lengths L_ref from the base model"),
    "grade": ("lie.commands.grade", "grade JSON-lines responses (math-verify, multiple choice)"),
    "generate": ("lie.commands.generate", "sample n completions per benchmark problem"),
    "evaluate": ("lie.commands.evaluate", "grade generations at every budget: Avg@n, Pass@1, pass@k"),
    "train": ("lie.commands.train", "train one run of config.yaml (verl or TRL)"),
    "merge": ("lie.commands.merge", "merge a run's final checkpoint into Hugging Face format"),
    "base-model": (
        "lie.commands.base_model",
        "fetch a base model at its pinned revision, or build a tiny one",
    ),
    "report": ("lie.commands.report", "tables and figures beside the paper's numbers"),
    "behaviours": (
        "lie.commands.behaviours",
        "count reasoning behaviours in generations (patterns or a judge)",
    ),
    "plan": ("lie.commands.plan", "steps, rollout tokens and GPU-hours of the selected runs"),
    "preflight": ("lie.commands.preflight", "check a GPU node (image, NCCL, a 2-step verl run, ...) first"),
    "study-probe": ("lie.commands.study_probe", "CPU study: sample a supervised model as the rollouts do"),
    "study-responses": ("lie.commands.study_responses", "CPU study: per-response depth and n-gram columns"),
    "study-gates": ("lie.commands.study_gates", "CPU study: the gates on the supervised models"),
    "study-report": ("lie.commands.study_report", "figures and tables of the CPU study (make study)"),
    "snakemake": (
        "lie.commands.snakemake",
        "run Snakemake (same arguments) after checking every --configfile with lie's bounded reader",
    ),
}
# commands that take their arguments as they come (passed on to another program)
RAW = {"snakemake"}


def _top_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lie",
        description="LIE reproduction pipeline. Run 'lie COMMAND --help' for a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"lie {__version__}")
    parser.add_argument(
        "command", choices=sorted(COMMANDS), help="; ".join(f"{k}: {v[1]}" for k, v in COMMANDS.items())
    )
    return parser


def _non_finite_flag(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """NaN or infinity in any flag is a usage error: every numeric flag has a range (a time limit, a rate)."""
    for action in parser._actions:
        value = getattr(args, action.dest, None)
        if _has_non_finite(value):
            flag = "/".join(action.option_strings) or action.dest
            parser.error(f"argument {flag}: {value!r} is not a finite number")


def _has_non_finite(value: object) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(_has_non_finite(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_has_non_finite(v) for v in value)
    return False


def _run(name: str, rest: list[str]) -> int:
    module = importlib.import_module(COMMANDS[name][0])
    if name in RAW:
        return int(module.run_raw(rest) or 0)
    parser = argparse.ArgumentParser(prog=f"lie {name}", description=COMMANDS[name][1])
    parser.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    module.add_arguments(parser)
    args = parser.parse_args(rest)
    _non_finite_flag(parser, args)
    check_outputs(parser, args)
    logging.basicConfig(
        level=getattr(logging, str(args.log_level).upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    log.debug("lie %s: started", name)
    return int(module.run(args) or 0)


def _fail(name: str, message: str, status: int = 2) -> int:
    print(f"lie {name}: {message}", file=sys.stderr)
    return status


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in COMMANDS:
        _top_parser().parse_args(argv)  # prints help or a usage error and exits
        return 2
    name = argv[0]
    try:
        return _run(name, argv[1:])
    except LieError as exc:
        return _fail(name, f"error: {exc}")
    except KeyboardInterrupt:
        return _fail(name, "interrupted", 130)
    except Exception as exc:
        message = describe(exc)
        if message is None:
            raise
        log.debug("the failure in full", exc_info=True)
        return _fail(name, f"error: {message}")


if __name__ == "__main__":
    sys.exit(main())
