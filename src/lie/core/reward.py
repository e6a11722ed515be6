"""The LIE reward: R = R_acc + R_len + R_red, and the state metrics C_context and R_context.

Defaults reproduce the authors' code (LINs-lab/LIE @ 1b3bb02,
``verl/workers/reward_manager/length_dapo.py`` with the flags of their ``lie_*.sh`` scripts);
``variant="paper"`` and the other knobs select the paper's text (SPEC section 1; README table).
Plain Python and NumPy: no torch, no verl, so that every engine and the CLI can call it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, cast

from lie.core.errors import LieError
from lie.core.ngrams import NgramStats, ngram_stats

__all__ = [
    "RewardConfig",
    "RewardBreakdown",
    "length_reward",
    "redundancy_penalty",
    "redundancy_fires",
    "c_context",
    "r_context",
    "score",
    "score_batch",
]

VARIANTS = ("code", "paper")
UNITS = ("word", "token")


@dataclass(frozen=True)
class RewardConfig:
    """Every knob of SPEC section 1. The defaults are the authors' code."""

    eta: float = 3.33e-5  # length slope; the scripts pass 3.33e-5, the paper says 0.3/9000
    extra_tokens: int = 0  # "e": scales eta by (1 + e / L_ref) in the code variant (0/500/1000)
    tolerance: int = 500  # code variant: no length reward from L_ref - tolerance on
    variant: str = "code"  # "code": the authors' R_len; "paper": -eta * max(0, L_ref + delta_l - L)
    delta_l: int = 0  # paper variant: L_target = L_ref + delta_l
    n: int = 10  # n-gram size of the state abstraction
    theta: int = 10  # redundancy threshold
    theta_inclusive: bool = True  # code: count >= theta; paper: count > theta
    beta: float = 0.6  # redundancy penalty
    unit: str = "word"  # "word": the authors' split; "token": token ids
    red_on_correct: bool = True  # the code penalises loops in correct answers too
    length_term: bool = True  # False: no R_len (baselines)
    redundancy_term: bool = True  # False: no R_red (baselines, the length-only ablation)

    def __post_init__(self) -> None:
        for f in fields(self):
            # ``from __future__ import annotations``: a field's type is its annotation's text
            _check_type(f.name, getattr(self, f.name), cast(str, f.type))
            if f.type == "float" and not math.isfinite(getattr(self, f.name)):
                raise LieError(f"reward key '{f.name}' must be a finite number, got {getattr(self, f.name)}")
        if self.variant not in VARIANTS:
            raise LieError(f"reward key 'variant' must be one of {VARIANTS}, got {self.variant!r}")
        if self.unit not in UNITS:
            raise LieError(f"reward key 'unit' must be one of {UNITS}, got {self.unit!r}")
        for name in ("n", "theta"):
            if getattr(self, name) < 1:
                raise LieError(f"reward key '{name}' must be >= 1, got {getattr(self, name)}")
        for name in ("eta", "beta", "extra_tokens", "tolerance"):
            if getattr(self, name) < 0:
                raise LieError(f"reward key '{name}' must be >= 0, got {getattr(self, name)}")

    @classmethod
    def keys(cls) -> list[str]:
        return [f.name for f in fields(cls)]

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, Any], source: str = "reward config") -> RewardConfig:
        """Build from a mapping (YAML, ``--set``); unknown keys and bad values name the key."""
        if not isinstance(mapping, Mapping):
            raise LieError(
                f"{source}: the reward knobs must be a mapping of key: value, got {type(mapping).__name__}"
            )
        for key in mapping:  # YAML keys may be numbers, null, booleans: name the key, never sort them
            if not isinstance(key, str):
                raise LieError(
                    f"{source}: reward key {key!r} ({type(key).__name__}) is not a knob name; "
                    f"valid keys: {', '.join(cls.keys())}"
                )
        unknown = sorted(set(mapping) - set(cls.keys()))
        if unknown:
            raise LieError(
                f"{source}: unknown reward key(s) {', '.join(unknown)}; valid keys: {', '.join(cls.keys())}"
            )
        types = {f.name: cast(str, f.type) for f in fields(cls)}
        values = {k: _coerce(k, v, types[k], source) for k, v in mapping.items()}
        try:
            return cls(**values)
        except LieError as exc:
            raise LieError(f"{source}: {exc}") from None

    def replace(self, **changes: Any) -> RewardConfig:
        return dataclasses.replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


_TYPE_NAMES = {"float": float, "int": int, "bool": bool, "str": str}


def _check_type(name: str, value: Any, type_name: str) -> None:
    expected = _TYPE_NAMES[type_name]
    ok = isinstance(value, expected) and not (expected is int and isinstance(value, bool))
    if expected is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not ok:
        raise LieError(f"reward key '{name}' must be {type_name}, got {value!r}")


def _coerce(name: str, value: Any, type_name: str, source: str) -> Any:
    """Turn a YAML or command-line value into the field's type, or say which key is wrong."""
    if not isinstance(value, str) or type_name == "str":
        if type_name == "float" and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        if type_name == "int" and isinstance(value, float) and value.is_integer():
            return int(value)
        return value
    text = value.strip()
    try:
        if type_name == "bool":  # booleans arrive parsed (YAML, --set): a string is a mistake
            raise ValueError
        if type_name == "int":
            return int(text)
        return float(text)
    except ValueError:
        raise LieError(f"{source}: reward key '{name}' must be {type_name}, got {value!r}") from None


@dataclass(frozen=True)
class RewardBreakdown:
    """The reward of one response and the state metrics beside it.

    One set of names everywhere a sample's breakdown is written (verl's ``reward_extra_info``, the
    rollouts of both engines, ``lie score``): :data:`BREAKDOWN_KEYS`; ``acc`` is R_acc (verl's own
    name for accuracy, as its validation metrics show it).
    """

    r_acc: float
    r_len: float
    r_red: float
    reward: float
    max_ngram_count: int
    c_context: int
    r_context: float
    num_ngrams: int = field(default=0, repr=False)

    def extra_info(self, num_tokens: int, ref_len: int | None) -> dict[str, Any]:
        """The per-sample fields both engines log (verl's ``reward_extra_info``, the rollouts)."""
        return {
            "acc": self.r_acc,
            "r_len": self.r_len,
            "r_red": self.r_red,
            "max_ngram_count": self.max_ngram_count,
            "c_context": self.c_context,
            "r_context": self.r_context,
            "num_tokens": num_tokens,
            "ref_len": ref_len or 0,
        }

    def as_dict(self) -> dict[str, Any]:
        """The reward and its terms under :data:`BREAKDOWN_KEYS` (``lie score``'s output)."""
        info = self.extra_info(0, None)
        return {"acc": info["acc"], "r_len": info["r_len"], "r_red": info["r_red"], "reward": self.reward,
                **{k: info[k] for k in SCORE_KEYS[3:]}}  # fmt: skip


# the per-sample fields of extra_info(), in order; lie score writes the first seven with the reward
BREAKDOWN_KEYS = (
    "acc",
    "r_len",
    "r_red",
    "max_ngram_count",
    "c_context",
    "r_context",
    "num_tokens",
    "ref_len",
)
SCORE_KEYS = BREAKDOWN_KEYS[:6]


def length_reward(
    correct: bool, num_tokens: int, ref_len: int, config: RewardConfig, extra_tokens: int | None = None
) -> float:
    """R_len: a penalty for wrong answers shorter than the target, zero otherwise (SPEC 1)."""
    if correct or not config.length_term:
        return 0.0
    if config.variant == "paper":
        deficit = ref_len + config.delta_l - num_tokens
        return -(config.eta * deficit) if deficit > 0 else 0.0
    # The authors' get_delta_linear_remove_upper_refined_additive, same operations, same order.
    e = config.extra_tokens if extra_tokens is None else extra_tokens
    alpha = config.eta * (1 + e / ref_len)
    z_min = ref_len - config.tolerance
    if num_tokens < z_min:
        return -((z_min - num_tokens) * alpha)
    return 0.0


def redundancy_penalty(stats: NgramStats, correct: bool, config: RewardConfig) -> float:
    """R_red: -beta when some n-gram state repeats theta times (or more than theta)."""
    if not config.redundancy_term or (correct and not config.red_on_correct):
        return 0.0
    if stats.num_units <= config.n:  # the authors never penalise n units or fewer
        return 0.0
    hit = stats.max_count >= config.theta if config.theta_inclusive else stats.max_count > config.theta
    return -config.beta if hit else 0.0


def redundancy_fires(max_count: int, num_units: int | None, correct: bool, config: RewardConfig) -> bool:
    """Would R_red fire on a response whose most repeated n-gram occurs ``max_count`` times? The
    state test alone, whatever the run's ``redundancy_term`` (the analyses ask it of baselines too).
    ``num_units`` None: unknown, and a count of 1 or more already means the response had n units."""
    units = num_units if num_units is not None else config.n + max(0, max_count)
    stats = NgramStats(
        num_units=units, num_ngrams=max(0, units - config.n + 1), distinct=0, max_count=max_count
    )
    return redundancy_penalty(stats, correct, config.replace(redundancy_term=True)) < 0


def c_context(stats: NgramStats, config: RewardConfig) -> int:
    """C_context: distinct n-gram states in one response.

    The authors' ``calculate_distinct_ngram`` returns 1 for a response of fewer than n words
    (empty included); the code variant keeps that, the paper variant counts 0 windows as 0.
    """
    if config.variant == "code" and stats.num_units < config.n:
        return 1
    return stats.distinct


def r_context(stats: NgramStats) -> float:
    """R_context: distinct over total n-gram states; 1.0 when there is no window (as the authors)."""
    if stats.num_ngrams == 0:
        return 1.0
    return stats.distinct / stats.num_ngrams


MAX_COUNT = 2**31 - 1  # a count of tokens: far beyond any context, and safe in float arithmetic


def _check_inputs(correct: Any, num_tokens: Any, ref_len: Any, config: RewardConfig, extra: Any) -> None:
    if not isinstance(correct, bool):
        raise LieError(f"'correct' must be true or false, got {correct!r}")
    if not _is_int(num_tokens) or not 0 <= num_tokens <= MAX_COUNT:
        raise LieError(
            f"'num_tokens' must be an integer >= 0 (at most {MAX_COUNT}), got {_shown(num_tokens)}"
        )
    if config.length_term and (not _is_int(ref_len) or not 1 <= ref_len <= MAX_COUNT):
        raise LieError(f"'ref_len' must be an integer >= 1 (at most {MAX_COUNT}), got {_shown(ref_len)}")
    if extra is not None and (not _is_int(extra) or not 0 <= extra <= MAX_COUNT):
        raise LieError(f"'extra_tokens' must be an integer >= 0 (at most {MAX_COUNT}), got {_shown(extra)}")


def _shown(value: Any) -> str:
    """A value for an error line: a huge integer by its digits, never its 400 of them."""
    if _is_int(value) and abs(value) > 10**30:
        return f"an integer of {len(str(abs(value)))} digits"
    return repr(value)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def score(
    response: str | None,
    correct: bool,
    num_tokens: int,
    ref_len: int | None,
    config: RewardConfig = RewardConfig(),
    token_ids: Sequence[int] | None = None,
    extra_tokens: int | None = None,
) -> RewardBreakdown:
    """The LIE reward of one response with its breakdown (SPEC 1: R = R_acc + R_len + R_red)."""
    _check_inputs(correct, num_tokens, ref_len, config, extra_tokens)
    if config.unit == "word" and not isinstance(response, str):
        raise LieError(f"'response' must be a string, got {type(response).__name__}")
    if config.unit == "token" and token_ids is None:
        raise LieError("unit 'token' needs 'token_ids' for every response")
    stats = ngram_stats(response, token_ids, n=config.n, unit=config.unit)
    r_acc = 1.0 if correct else 0.0
    r_len = length_reward(correct, num_tokens, ref_len, config, extra_tokens)  # type: ignore[arg-type]
    r_red = redundancy_penalty(stats, correct, config)
    return RewardBreakdown(
        r_acc=r_acc,
        r_len=r_len,
        r_red=r_red,
        reward=r_acc + r_len + r_red,
        max_ngram_count=stats.max_count,
        c_context=c_context(stats, config),
        r_context=r_context(stats),
        num_ngrams=stats.num_ngrams,
    )


def score_batch(
    responses: Sequence[str | None],
    correct: Sequence[bool],
    num_tokens: Sequence[int],
    ref_len: Sequence[int | None],
    config: RewardConfig = RewardConfig(),
    token_ids: Sequence[Sequence[int] | None] | None = None,
    extra_tokens: Sequence[int | None] | None = None,
) -> list[RewardBreakdown]:
    """:func:`score` over a batch (one training step's rollouts); errors name the item."""
    size = len(responses)
    columns: dict[str, Sequence[Any]] = {"correct": correct, "num_tokens": num_tokens, "ref_len": ref_len}
    if token_ids is not None:
        columns["token_ids"] = token_ids
    if extra_tokens is not None:
        columns["extra_tokens"] = extra_tokens
    for name, column in columns.items():
        if len(column) != size:
            raise LieError(f"score_batch: {name} has {len(column)} items, responses has {size}")
    ids: Iterable[Sequence[int] | None] = token_ids if token_ids is not None else [None] * size
    extras: Iterable[int | None] = extra_tokens if extra_tokens is not None else [None] * size
    out = []
    for i, (resp, ok, length, ref, tok, extra) in enumerate(
        zip(responses, correct, num_tokens, ref_len, ids, extras)
    ):
        try:
            out.append(score(resp, ok, length, ref, config, tok, extra))
        except LieError as exc:
            raise LieError(f"item {i}: {exc}") from None
    return out
