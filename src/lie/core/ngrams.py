"""N-gram state abstraction: phi(s_t) = the last n units of the trajectory (SPEC section 1).

Two unit kinds:
- ``word``: the authors' split, ``response.split()`` then every piece split on ``_`` with empty
  pieces kept, case-sensitive (``recipe/reward_ours/repetition.py`` in LINs-lab/LIE);
- ``token``: the response's token ids.

The counts run in NumPy on the UTF-8 bytes of a response, without building one Python string per
word: every word (piece) gets a 64-bit polynomial hash from prefix sums (words of 256 bytes or
more an exact digest, since polynomial hashes modulo 2**64 collide on long Thue-Morse strings),
every window of ``n`` words a 64-bit combination, and a sort counts the repeats.
:func:`split_words` is the plain Python definition the fast path must agree with (the tests
check it on every input they draw).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "NgramStats",
    "split_words",
    "unit_hashes",
    "window_hashes",
    "ngram_stats",
    "ngram_stats_of_hashes",
]

_U64 = np.uint64
_MASK64 = (1 << 64) - 1


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """Stateless 64-bit mixer (splitmix64's finaliser); uint64 arithmetic wraps modulo 2**64."""
    x = x + _U64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> _U64(30))) * _U64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> _U64(27))) * _U64(0x94D049BB133111EB)
    return x ^ (x >> _U64(31))


def _coefficients(count: int, stream: int) -> np.ndarray:
    """Pseudo-random uint64 coefficients; element i depends only on (stream, i), so they can grow."""
    with np.errstate(over="ignore"):
        return _splitmix64(np.arange(count, dtype=_U64) + _U64((stream << 40) & _MASK64))


with np.errstate(over="ignore"):
    _LENGTH_SALT = _U64(0xFF51AFD7ED558CCD)
    _TOKEN_SALT = _U64(0xC4CEB9FE1A85EC53)

# Python's str.split() splits on exactly the characters for which str.isspace() is true; the
# largest of them is U+3000 (checked by the tests over the whole code space).
_ASCII_SPACE = np.array([chr(c).isspace() for c in range(256)], dtype=bool)
_ASCII_SPACE[128:] = False  # bytes >= 0x80 are parts of multi-byte characters in UTF-8
_NON_ASCII_SPACES = {c: " " for c in range(0x80, 0x3001) if chr(c).isspace()}
_UNDERSCORE = ord("_")


_BASE = 0x100000001B3  # odd, so it has an inverse modulo 2**64
_EXACT_FROM = 256  # words this long (bytes) are hashed exactly instead (see _word_hashes)


class _Powers:
    """BASE**i and BASE**-i modulo 2**64 for i < size; grows on demand."""

    def __init__(self) -> None:
        self.size = 0
        self.grow(1 << 16)

    def grow(self, size: int) -> None:
        if size <= self.size:
            return
        size = max(size, 2 * self.size)
        with np.errstate(over="ignore"):
            self.pow = np.cumprod(np.full(size, _BASE, dtype=_U64))
            self.pow = np.concatenate([np.ones(1, dtype=_U64), self.pow[:-1]])
            inverse = pow(_BASE, -1, 1 << 64)
            self.inv = np.cumprod(np.full(size, inverse, dtype=_U64))
            self.inv = np.concatenate([np.ones(1, dtype=_U64), self.inv[:-1]])
        self.size = size


_POWERS = _Powers()


@functools.lru_cache(maxsize=32)
def _window_multipliers(n: int) -> np.ndarray:
    return _coefficients(n, stream=3) | _U64(1)


def split_words(text: str) -> list[str]:
    """The authors' word units: ``text.split()``, then each piece split on ``_`` (empties kept)."""
    words: list[str] = []
    for segment in text.split():
        words.extend(segment.split("_"))
    return words


def _word_hashes(text: str) -> np.ndarray:
    """One uint64 hash per word unit of ``text``, in order, equal for equal words."""
    if not text.isascii():
        text = text.translate(_NON_ASCII_SPACES)
    data = np.frombuffer(text.encode("utf-8", "surrogatepass"), dtype=np.uint8)
    size = len(data)
    if size == 0:
        return np.empty(0, dtype=_U64)
    space = _ASCII_SPACE[data]
    solid = ~space
    underscore = data == _UNDERSCORE
    # A word starts where a run of non-space bytes starts, or right after an underscore; it ends
    # (exclusive) at an underscore or where the run ends. Starts and ends pair up in order.
    starts = np.zeros(size + 1, dtype=bool)
    starts[0] = solid[0]
    starts[1:size] = solid[1:] & space[:-1]
    starts[1:] |= underscore
    ends = np.zeros(size + 1, dtype=bool)
    ends[:size] = underscore
    ends[1:size] |= solid[:-1] & space[1:]
    ends[size] |= solid[-1]
    first = np.flatnonzero(starts)
    last = np.flatnonzero(ends)
    if len(first) == 0:
        return np.empty(0, dtype=_U64)
    lengths = last - first
    # polynomial hash of every word from prefix sums: sum(byte * BASE**i) shifted to its start
    _POWERS.grow(size + 1)
    with np.errstate(over="ignore"):
        prefix = np.empty(size + 1, dtype=_U64)
        prefix[0] = 0
        np.cumsum((data.astype(_U64) + _U64(1)) * _POWERS.pow[:size], out=prefix[1:])
        sums = (prefix[last] - prefix[first]) * _POWERS.inv[first]
        # Polynomial hashes modulo 2**64 collide for some words of 2,048+ bytes (Thue-Morse
        # strings); long words are rare, so they get an exact-by-construction digest instead.
        for i in np.flatnonzero(lengths >= _EXACT_FROM):
            digest = hashlib.blake2b(data[first[i] : last[i]].tobytes(), digest_size=8).digest()
            sums[i] = np.frombuffer(digest, dtype=_U64)[0]
        return _splitmix64(sums ^ (lengths.astype(_U64) * _LENGTH_SALT))


def _token_hashes(token_ids: Sequence[int] | np.ndarray) -> np.ndarray:
    ids = np.asarray(token_ids)
    if ids.size == 0:
        return np.empty(0, dtype=_U64)
    if ids.ndim != 1 or not np.issubdtype(ids.dtype, np.integer):
        raise ValueError("token_ids must be a flat sequence of integers")
    with np.errstate(over="ignore"):
        return _splitmix64(ids.astype(np.int64).view(_U64) ^ _TOKEN_SALT)


def unit_hashes(text: str | None = None, token_ids: Sequence[int] | None = None, unit: str = "word"):
    """Hashes of the units of one response: its words (from ``text``) or its ``token_ids``."""
    if unit == "word":
        if text is None:
            raise ValueError("unit 'word' needs the response text")
        return _word_hashes(text)
    if unit == "token":
        if token_ids is None:
            raise ValueError("unit 'token' needs the response's token_ids")
        return _token_hashes(token_ids)
    raise ValueError(f"unknown unit {unit!r}: use 'word' or 'token'")


@dataclass(frozen=True)
class NgramStats:
    """Counts over the n-gram states of one response."""

    num_units: int  # words or tokens
    num_ngrams: int  # windows of n consecutive units: max(0, num_units - n + 1)
    distinct: int  # distinct windows (the paper's C_context before the short-response rule)
    max_count: int  # occurrences of the most repeated window (0 when there is none)


def window_hashes(hashes: np.ndarray, n: int) -> np.ndarray:
    """A 64-bit key per window of ``n`` consecutive unit hashes, in order (repeats kept)."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    windows = len(hashes) - n + 1
    if windows <= 0:
        return np.empty(0, dtype=_U64)
    mult = _window_multipliers(n)
    with np.errstate(over="ignore"):
        combined = hashes[:windows] * mult[0]
        for k in range(1, n):
            combined += hashes[k : k + windows] * mult[k]
    return combined


def ngram_stats_of_hashes(hashes: np.ndarray, n: int) -> NgramStats:
    """Distinct and most repeated window of ``n`` consecutive unit hashes."""
    combined = window_hashes(hashes, n)
    windows = len(combined)
    if windows == 0:
        return NgramStats(len(hashes), 0, 0, 0)
    combined.sort()
    new = np.empty(windows, dtype=bool)
    new[0] = True
    np.not_equal(combined[1:], combined[:-1], out=new[1:])
    run_starts = np.flatnonzero(new)
    runs = np.diff(np.append(run_starts, windows))
    return NgramStats(len(hashes), windows, len(run_starts), int(runs.max()))


def ngram_stats(
    text: str | None = None,
    token_ids: Sequence[int] | None = None,
    n: int = 10,
    unit: str = "word",
) -> NgramStats:
    """N-gram statistics of one response, over words of ``text`` or over ``token_ids``."""
    return ngram_stats_of_hashes(unit_hashes(text, token_ids, unit), n)
