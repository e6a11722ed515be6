"""``lie score --in FILE --out FILE``: the LIE reward of each JSON line (``-`` = stdin/stdout).

In: ``response`` (str), ``correct`` (bool), ``num_tokens`` (int, the response's length L in
tokens), ``ref_len`` (int, the prompt's L_ref), optional ``token_ids`` (list of int, needed with
``unit=token``) and ``extra_tokens`` (int, else the config's). Out: the same objects with
``reward``, ``acc`` (R_acc), ``r_len``, ``r_red``, ``max_ngram_count``, ``c_context``, ``r_context``.
Example: ``lie score --in rollouts.jsonl --out scored.jsonl --set variant=paper``.
"""

from __future__ import annotations

import argparse
from typing import Any

from lie.commands.argtypes import key_value
from lie.core.errors import LieError
from lie.formats.jsonl import atomic_output, dumps, read_jsonl


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


def _field(obj: dict[str, Any], name: str, where: str, required: bool = True) -> Any:
    if name not in obj:
        if required:
            raise LieError(f"{where}: missing field '{name}'")
        return None
    return obj[name]


def _score_row(obj: dict[str, Any], where: str, config: Any) -> Any:
    """The reward of one input object; every message starts with ``where`` once."""
    from lie.core.reward import score

    response = _field(obj, "response", where)
    if not isinstance(response, str):
        raise LieError(f"{where}: field 'response' must be a string, got {type(response).__name__}")
    token_ids = _field(obj, "token_ids", where, required=config.unit == "token")
    if token_ids is not None and (
        not isinstance(token_ids, list)
        or not all(isinstance(t, int) and not isinstance(t, bool) for t in token_ids)
    ):
        raise LieError(f"{where}: field 'token_ids' must be a list of integers")
    correct = _field(obj, "correct", where)
    num_tokens = _field(obj, "num_tokens", where)
    ref_len = _field(obj, "ref_len", where, required=config.length_term)
    try:
        return score(
            response,
            correct,
            num_tokens,
            ref_len,
            config,
            token_ids=token_ids,
            extra_tokens=obj.get("extra_tokens"),
        )
    except LieError as exc:
        raise LieError(f"{where}: field {exc}") from None


def run(args: argparse.Namespace) -> int:
    from lie.config.yamlio import reward_config

    config = reward_config(args.knobs, dict(args.set))
    name = "<stdin>" if args.inp == "-" else args.inp
    scored = []
    for lineno, obj in read_jsonl(args.inp):
        where = f"{name} line {lineno}"
        obj.update(_score_row(obj, where, config).as_dict())
        scored.append((where, obj))
    with atomic_output(args.out) as out:
        for where, obj in scored:
            try:
                out.write(dumps(obj) + "\n")
            except LieError as exc:
                raise LieError(f"{where}: {exc}") from None
    return 0
