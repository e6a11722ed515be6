"""The one rule of what a command may write against what it reads (docs/recovery.md, "Outputs apart from
inputs"), checked for every ``lie`` command before any work: by ``lie.cli`` on the command line's
``--out*`` (:func:`command_line_outputs`, :func:`input_paths`), and by ``lie.formats.outputs`` and the
stages on what they write where the config says. Apart from the rest of ``outputs`` so that ``lie.cli``
loads only this.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from lie.core.errors import LieError
from lie.formats.atomic import refuse_special


def same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def inside(path: str | os.PathLike[str], folder: str | os.PathLike[str]) -> bool:
    real, top = os.path.realpath(path), os.path.realpath(folder)
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)


Labelled = Mapping[str, "str | os.PathLike[str] | None"] | Iterable["str | os.PathLike[str] | None"]


def _labelled(paths: Labelled, label: str) -> list[tuple[str, str]]:
    """``paths`` as (label, path) pairs: a mapping gives each its own label (a flag), a list ``label``."""
    pairs = paths.items() if isinstance(paths, Mapping) else ((label, p) for p in paths)
    return [(name, os.fspath(p)) for name, p in pairs if p is not None and os.fspath(p) != "-"]


def refuse_overlap(outputs: Labelled, inputs: Labelled) -> None:
    """The one rule of what a command may write against what it reads (every ``lie`` command, before
    any work): an output is refused if it is, or lies inside, an input file or folder (a model, a
    tokenizer, data, the config), or if it holds an input (a folder it builds and swaps in would
    remove it). Paths are compared as the system resolves them (``realpath``: through symlinks and
    ``..``), so no other spelling of an input escapes.
    """
    for out_label, out in _labelled(outputs, "--out"):
        for in_label, source in _labelled(inputs, ""):
            named = f"{in_label} {source}".strip()
            if same_file(out, source):  # also two outputs of one name, neither written yet
                raise LieError(f"{out_label} {out} is the input {named}: write the output to another file")
            if not os.path.lexists(source):
                continue
            if os.path.isdir(source) and inside(out, source):
                raise LieError(
                    f"{out_label} {out} is inside the input folder {named}: write the output elsewhere"
                )
            if inside(source, out):
                raise LieError(
                    f"{out_label} {out} holds the input {named}: write the output to another folder"
                )


def input_paths(flags: Mapping[str, str], values: Mapping[str, Any]) -> dict[str, str]:
    """The existing paths a command line names as inputs: ``flags`` maps an option's dest to its flag
    (``--model``), ``values`` holds what was given; several values of one flag are ``--flag[i]``."""
    found: dict[str, str] = {}
    for dest, flag in flags.items():
        value = values.get(dest)
        given = [value] if isinstance(value, str) else value if isinstance(value, (list, tuple)) else []
        paths = [p for p in given if isinstance(p, str) and p != "-"]
        for i, path in enumerate(paths):
            if os.path.lexists(path):
                found[flag if len(paths) == 1 else f"{flag}[{i}]"] = path
    return found


def command_line_outputs(
    actions: Iterable[Any], values: Mapping[str, Any]
) -> tuple[dict[str, str], dict[str, str]]:
    """From a command line's options (argparse's actions) and their ``values``: the flags that may name
    an input (dest -> flag: options with a value that are no output and no choice, such as an engine's
    name) and the outputs given (flag -> path: every ``--out*`` and ``--workdir``), each output checked
    by :func:`refuse_special` (but ``--workdir``, a folder filled in place: a link to scratch is fine)."""

    def is_output(dest: str) -> bool:
        return dest.startswith("out") or dest == "workdir"

    inputs = {a.dest: a.option_strings[-1] for a in actions
              if a.option_strings and a.nargs != 0 and not a.choices and not is_output(a.dest)}  # fmt: skip
    flags = {a.dest: (a.option_strings or [a.dest])[-1] for a in actions}
    outputs = {flags.get(dest, dest): value for dest, value in values.items()
               if is_output(dest) and isinstance(value, str) and value != "-"}  # fmt: skip
    for flag, out in outputs.items():
        if flag != "--workdir":
            refuse_special(out)
    return inputs, outputs
