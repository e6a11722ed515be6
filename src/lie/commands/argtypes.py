"""The argparse helpers the subcommands share: argument types (``type=`` callables), the shared options,
``--config`` read into a checked config, and the check of every ``--out*`` before a command runs."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from typing import Any

from lie.config import load_config
from lie.config.typed import Config
from lie.config.yamlio import load_value, number_within
from lie.core.errors import LieError
from lie.formats.overlap import command_line_outputs, input_paths, refuse_overlap


def flag(text: str) -> bool | None:
    """``true``/``false`` (yes/no, on/off, 1/0), or ``none`` for "the config's value"."""
    lowered = text.strip().lower()
    if lowered in ("true", "yes", "on", "1"):
        return True
    if lowered in ("false", "no", "off", "0"):
        return False
    if lowered in ("none", "null", "default"):
        return None
    raise argparse.ArgumentTypeError(f"expected true, false or none, got {text!r}")


def positive_int(text: str) -> int:
    """An integer >= 1 (a count of nodes, threads, steps): 0 or -2 is a usage error, not "the default"."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {value}")
    return value


def number_in(low: float, high: float) -> Any:
    """A ``type=`` for a finite float in [low, high] (``--mfu 1e-300`` made every estimate infinite)."""

    def parse(text: str) -> float:
        try:
            return number_within(text, low, high)
        except LieError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def key_value(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` with the value read as YAML (numbers, booleans, lists; a mapping's keys once each;
    ``1e-3`` unquoted a number, as YAML 1.2 reads it). NaN and infinity are refused by ``lie.cli``."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        return key.strip(), load_value(value, f"the value of {key.strip()}")
    except LieError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_engine_options(parser: argparse.ArgumentParser, unit: str) -> None:
    """The sampling options ``lie generate`` and ``lie reflen`` share (``unit``: what --limit counts)."""
    parser.add_argument(
        "--enable-thinking", type=flag, default=None, help="chat template flag (default: the model's entry)"
    )
    parser.add_argument(
        "--engine-arg",
        type=key_value,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="passed to the engine, e.g. tensor_parallel_size=4, batch_invariant=true (vllm) or "
        "max_model_len=N (both)",
    )
    parser.add_argument("--limit", type=int, default=None, help=f"only the first N {unit} (smoke runs)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def add_config_option(parser: argparse.ArgumentParser, what: str = "the pipeline's config") -> None:
    """``--config``, read relative to where the command runs; ``what`` says which part the command reads."""
    parser.add_argument("--config", default="config.yaml", help=f"{what} (default: config.yaml)")


def load_config_option(args: argparse.Namespace) -> Config:
    """The config ``--config`` names, loaded and checked (``lie.config.load_config``; one line if bad)."""
    return load_config(args.config)


def check_written(args: argparse.Namespace, outputs: Mapping[str, str | os.PathLike[str] | None]) -> None:
    """Outputs apart from every input path of the command line (``lie.formats.overlap.refuse_overlap``):
    its ``--out*`` (:func:`check_outputs`), and what a command writes where its config says."""
    refuse_overlap(outputs, input_paths(getattr(args, "input_flags", {}), vars(args)))


def check_outputs(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Every ``--out*`` (and ``--workdir``) of every command, before it runs: not a symlink, FIFO or
    device, and apart from every input of the command line (:func:`check_written`); the input flags
    are kept on ``args`` for the command's own checks."""
    args.input_flags, outputs = command_line_outputs(parser._actions, vars(args))
    check_written(args, outputs)
