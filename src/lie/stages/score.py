"""The LIE reward of each JSON line of a file (``lie score``): the reward outside training.

In: ``response`` (str), ``correct`` (bool), ``num_tokens`` (int, the response's length L in
tokens), ``ref_len`` (int, the prompt's L_ref), optional ``token_ids`` (list of int, needed with
``unit=token``) and ``extra_tokens`` (int, else the config's). Out: the same objects with
``reward``, ``acc`` (R_acc), ``r_len``, ``r_red``, ``max_ngram_count``, ``c_context``, ``r_context``.
"""

from __future__ import annotations

from typing import Any

from lie.config.yamlio import reward_config
from lie.core.errors import LieError
from lie.core.reward import RewardBreakdown, RewardConfig, score
from lie.formats.jsonl import atomic_output, dumps, read_jsonl


def _field(obj: dict[str, Any], name: str, where: str, required: bool = True) -> Any:
    if name not in obj:
        if required:
            raise LieError(f"{where}: missing field '{name}'")
        return None
    return obj[name]


def score_line(obj: dict[str, Any], where: str, config: RewardConfig) -> RewardBreakdown:
    """The reward of one input object; every message starts with ``where`` once."""
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


def score_file(inp: str, out: str, knobs: str | None = None, overrides: dict[str, Any] | None = None) -> int:
    """Score every line of ``inp`` (``-``: stdin) into ``out`` (``-``: stdout), all or nothing; the
    knobs: the file ``knobs`` (flat, or under ``reward:``) with ``overrides`` on top. Returns the lines."""
    config = reward_config(knobs, dict(overrides or {}))
    name = "<stdin>" if inp == "-" else inp
    scored = []
    for lineno, obj in read_jsonl(inp):
        where = f"{name} line {lineno}"
        obj.update(score_line(obj, where, config).as_dict())
        scored.append((where, obj))
    with atomic_output(out) as stream:
        for where, obj in scored:
            try:
                stream.write(dumps(obj) + "\n")
            except LieError as exc:
                raise LieError(f"{where}: {exc}") from None
    return len(scored)
