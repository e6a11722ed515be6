"""The ``lie`` command: one subcommand per pipeline stage (README's data flow); run ``lie --help``.

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
from lie.core.errors import LieError, Terminated, describe, raise_terminated

log = logging.getLogger("lie.cli")

# name -> (its module, one-line help: one line of `lie --help`, and the command's description); the module is
# under lie.commands, or the CPU study's under lie.study.commands (the study's own package, apart)
COMMANDS: dict[str, tuple[str, str]] = {
    "data": ("lie.commands.data", "fetch a data set, write it in verl's row format (parquet)"),
    "base-model": (
        "lie.commands.base_model",
        "fetch a base model (pinned revision), or build a tiny one",
    ),
    "reflen": ("lie.commands.reflen", "per-prompt reference lengths L_ref from the base model"),
    "train": ("lie.commands.train", "train one run of the config (verl or TRL)"),
    "merge": ("lie.commands.merge", "merge a run's final checkpoint into Hugging Face format"),
    "generate": ("lie.commands.generate", "sample n completions per benchmark problem"),
    "evaluate": ("lie.commands.evaluate", "grade generations at every budget: Avg@n, Pass@1, pass@k"),
    "report": ("lie.commands.report", "tables and figures beside the paper's numbers"),
    "study-probe": ("lie.study.commands.probe", "sample a supervised model as the rollouts do"),
    "study-gates": ("lie.study.commands.gates", "the gates on the supervised models, before any RL run"),
    "study-responses": ("lie.study.commands.responses", "per-response depth and n-gram columns"),
    "study-report": ("lie.study.commands.report", "figures and tables of the CPU study"),
    "snakemake": ("lie.commands.snakemake", "run Snakemake after checking every --configfile"),
    "plan": ("lie.commands.plan", "steps, rollout tokens and GPU-hours of the selected runs"),
    "preflight": ("lie.commands.preflight", "check a GPU node before booking: image, NCCL, short verl runs"),
    "score": ("lie.commands.score", "LIE reward of JSON-lines responses (R_acc + R_len + R_red)"),
    "grade": ("lie.commands.grade", "grade JSON-lines responses (math-verify, multiple choice)"),
    "behaviours": ("lie.commands.behaviours", "count reasoning behaviours in generations (patterns, judge)"),
}
# the headings of `lie --help`, each command under one
GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "pipeline steps (a Snakemake rule each, in the DAG's order)",
        ("data", "base-model", "reflen", "train", "merge", "generate", "evaluate", "report"),
    ),
    (
        "study (the CPU study of the Shallow Exploration Trap: make study)",
        ("study-probe", "study-gates", "study-responses", "study-report"),
    ),
    ("tools", ("snakemake", "plan", "preflight", "score", "grade", "behaviours")),
)
# commands that take their arguments as they come (passed on to another program)
RAW = {"snakemake"}


def _listing() -> str:
    """The commands under their headings, one a line: name, then its one-line help."""
    width = max(map(len, COMMANDS)) + 2
    return "\n\n".join(
        f"{heading}:\n" + "\n".join(f"  {name:<{width}}{COMMANDS[name][1]}" for name in names)
        for heading, names in GROUPS
    )


def _top_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lie",
        usage="lie [-h] [--version] COMMAND [ARGS...]",
        description=f"The LIE reproduction pipeline: its DAG's steps, the CPU study's, and tools.\n\n{_listing()}",
        epilog="Run 'lie COMMAND --help' for a command's options.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"lie {__version__}")
    parser.add_argument("command", metavar="COMMAND", choices=sorted(COMMANDS), help=argparse.SUPPRESS)
    return parser


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Each option's default after its help, where it says something: not where the help already names its
    default (a config key, a folder of the layout), nor an unset, off or empty one."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        default = action.default
        unset = default is None or default is False or default is argparse.SUPPRESS
        empty = isinstance(default, (str, list, tuple, dict)) and not default
        if action.help is None or unset or empty or "default" in action.help.lower():
            return action.help
        return super()._get_help_string(action)


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


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def _log_level(text: str) -> str:
    """A level name of :data:`LOG_LEVELS`, any case (``logging``'s other attributes are no level)."""
    if text.strip().upper() not in LOG_LEVELS:
        raise argparse.ArgumentTypeError(f"expected one of {', '.join(LOG_LEVELS)}, got {text!r}")
    return text.strip().upper()


def command_parser(name: str) -> argparse.ArgumentParser:
    """The parser of ``lie NAME`` (not for RAW commands): what a command line is checked against."""
    module = importlib.import_module(COMMANDS[name][0])
    parser = argparse.ArgumentParser(
        prog=f"lie {name}", description=COMMANDS[name][1], formatter_class=_HelpFormatter
    )
    parser.add_argument(
        "--log-level", type=_log_level, default="INFO", help="logging level: " + ", ".join(LOG_LEVELS)
    )
    module.add_arguments(parser)
    return parser


def _run(name: str, rest: list[str]) -> int:
    module = importlib.import_module(COMMANDS[name][0])
    if name in RAW:
        return int(module.run_raw(rest) or 0)
    parser = command_parser(name)
    args = parser.parse_args(rest)
    _non_finite_flag(parser, args)
    check_outputs(parser, args)
    logging.basicConfig(
        level=getattr(logging, args.log_level),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    log.debug("lie %s: started", name)
    return int(module.run(args) or 0)


def _fail(name: str, message: str, status: int = 2) -> int:
    print(f"lie {name}: {message}", file=sys.stderr)
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``lie COMMAND``; SIGTERM is handled as Ctrl-C while it runs (:class:`Terminated`)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():  # signals reach the main thread only
        return _main(argv)
    previous = signal.signal(signal.SIGTERM, raise_terminated)
    try:
        return _main(argv)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _main(argv: Sequence[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:  # a usage error: the whole help, on standard error, status 2 (argparse's)
        _top_parser().print_help(sys.stderr)
        return 2
    if argv[0] not in COMMANDS:
        _top_parser().parse_args(argv)  # --help, --version (status 0), else a usage error (status 2)
        return 2
    name = argv[0]
    try:
        return _run(name, argv[1:])
    except LieError as exc:
        return _fail(name, f"error: {exc}")
    except Terminated:
        return _fail(name, "terminated (SIGTERM); rerun to resume", 143)
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
