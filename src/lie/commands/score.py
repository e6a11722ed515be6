"""``lie score --in FILE --out FILE``: the LIE reward of each JSON line (``-`` = stdin/stdout).

In: ``response`` (str), ``correct`` (bool), ``num_tokens`` (int, the response's length L in
tokens), ``ref_len`` (int, the prompt's L_ref), optional ``token_ids`` (list of int, needed with
``unit=token``) and ``extra_tokens`` (int, else the config's). Out: the same objects with
``reward``, ``acc`` (R_acc), ``r_len``, ``r_red``, ``max_ngram_count``, ``c_context``, ``r_context``
(the logic: ``lie.stages.score``).
Example: ``lie score --in rollouts.jsonl --out scored.jsonl --set variant=paper``.
"""

from __future__ import annotations

import argparse

from lie.commands.argtypes import key_value
from lie.stages.score import score_file


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--in", dest="inp", required=True, help="JSON-lines input file, or - for stdin")
    parser.add_argument("--out", required=True, help="JSON-lines output file, or - for stdout")
    parser.add_argument(
        "--knobs", help="YAML file of reward knobs (flat, or under a 'reward:' key, as config.yaml)"
    )
    parser.add_argument(
        "--set", type=key_value, action="append", default=[], metavar="KEY=VALUE",
        help="a reward knob, e.g. --set extra_tokens=500",
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    score_file(args.inp, args.out, args.knobs, dict(args.set))
    return 0
