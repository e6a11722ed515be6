"""Diversity across samples: how different are the n responses a policy gives to one prompt?

The paper argues that LIE keeps "global diversity" high while a baseline collapses to a few
modes. Two numbers per group (one prompt's samples), on the reward's own n-gram states
(``lie.core.ngrams``: the same word split, or token ids, and the same ``n`` as ``R_red``/``C_context``):

- ``distinct``: distinct n-grams across the whole group over all n-grams of the group (1.0: no
  window repeats anywhere in the group; 1/k: the k samples are one text k times);
- ``overlap``: mean over pairs of samples of the Jaccard index of their sets of distinct n-grams
  (0.0: no state in common, 1.0: the same states).

A group whose samples have no window (all shorter than ``n`` units) has neither number (``None``),
and a pair where one sample has no window is left out of ``overlap``: a missing state set says
nothing about overlap. Example: ``group_diversity(["a b c d", "b c d e"], n=2)`` gives
``distinct = 4/6`` and ``overlap = 2/4``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from lie.core.ngrams import unit_hashes, window_hashes

__all__ = ["GroupDiversity", "window_keys", "group_diversity", "mean_of"]


def window_keys(
    text: str | None = None, n: int = 10, unit: str = "word", token_ids: Sequence[int] | None = None
) -> np.ndarray:
    """The 64-bit keys of every n-gram window of one response, in order (repeats kept).

    ``lie.core.ngrams.window_hashes``, as the reward counts them, so that the
    distinct keys of one response are exactly its ``C_context`` states (the tests check it).
    """
    return window_hashes(unit_hashes(text, token_ids, unit), n)


@dataclass(frozen=True)
class GroupDiversity:
    """Diversity of one group of samples."""

    samples: int
    windows: int  # n-gram windows over the group, repeats counted
    distinct_windows: int  # distinct across the group
    distinct: float | None  # distinct_windows / windows
    overlap: float | None  # mean pairwise Jaccard of distinct window sets
    pairs: int  # pairs that entered ``overlap``


def group_diversity(
    responses: Sequence[str | None],
    n: int = 10,
    unit: str = "word",
    token_ids: Sequence[Sequence[int] | None] | None = None,
) -> GroupDiversity:
    """Distinct ratio and mean pairwise overlap of one prompt's samples (module docstring)."""
    ids = token_ids if token_ids is not None else [None] * len(responses)
    keys = [window_keys(text, n, unit, tok) for text, tok in zip(responses, ids)]
    total = sum(len(k) for k in keys)
    sets = [np.unique(k) for k in keys]
    if total == 0:
        return GroupDiversity(len(responses), 0, 0, None, None, 0)
    distinct = len(np.unique(np.concatenate(sets)))
    jaccards = []
    for a, b in itertools.combinations([s for s in sets if len(s)], 2):
        common = len(np.intersect1d(a, b, assume_unique=True))
        jaccards.append(common / (len(a) + len(b) - common))
    overlap = sum(jaccards) / len(jaccards) if jaccards else None
    return GroupDiversity(len(responses), total, distinct, distinct / total, overlap, len(jaccards))


def mean_of(values: Iterable[float | None]) -> float | None:
    """Mean of the values that exist (``None`` and NaN left out); ``None`` when none does."""
    kept = [v for v in values if v is not None and not math.isnan(v)]
    return sum(kept) / len(kept) if kept else None
