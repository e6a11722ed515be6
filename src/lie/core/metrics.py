"""Accuracy metrics over n samples a problem: Avg@n, pass@1 and the unbiased pass@k.

- ``avg@n``: the mean over problems of the fraction of a problem's n samples that are correct
  (the paper's Avg@32; with n = 1 it is Pass@1);
- ``pass@k``: the probability that at least one of k samples drawn without replacement from the
  n is correct, estimated without bias as ``1 - C(n-c, k) / C(n, k)`` (Chen et al. 2021, eq. 1),
  averaged over problems; pass@1 equals avg@n.

Names carry their parameters (lighteval's convention), so a number never loses its meaning:
``avg@n:n=32``, ``pass@k:k=8&n=32``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from lie.core.errors import LieError

PASS_KS = (1, 2, 4, 8, 16, 32)


def metric_name(metric: str, **params: int) -> str:
    """``metric_name("pass@k", k=8, n=32)`` -> ``"pass@k:k=8&n=32"`` (parameters in the given order)."""
    if not params:
        return metric
    return metric + ":" + "&".join(f"{key}={value}" for key, value in params.items())


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one problem with ``c`` correct among ``n`` samples (Chen et al. 2021)."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise LieError(f"pass@k needs 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    # 1 - C(n-c, k) / C(n, k) as a product, stable for large n
    prob_all_wrong = 1.0
    for i in range(n - c + 1, n + 1):
        prob_all_wrong *= 1.0 - k / i
    return 1.0 - prob_all_wrong


def _sample_count(problems: Sequence[Sequence[bool]], what: str) -> int:
    if not problems:
        raise LieError(f"{what}: no problems to score")
    counts = {len(samples) for samples in problems}
    if len(counts) != 1 or 0 in counts:
        raise LieError(
            f"{what}: every problem needs the same number of samples (>= 1), got {sorted(counts)}; "
            "regenerate the missing samples"
        )
    return counts.pop()


def avg_at_n(problems: Sequence[Sequence[bool]], what: str = "avg@n") -> float:
    """Mean over problems of the fraction of correct samples."""
    n = _sample_count(problems, what)
    return sum(sum(bool(x) for x in samples) / n for samples in problems) / len(problems)


def mean_pass_at_k(problems: Sequence[Sequence[bool]], k: int, what: str = "pass@k") -> float:
    """Unbiased pass@k averaged over problems."""
    n = _sample_count(problems, what)
    return sum(pass_at_k(n, sum(bool(x) for x in samples), k) for samples in problems) / len(problems)


def summarize(
    problems: Sequence[Sequence[bool]], ks: Iterable[int] = PASS_KS, what: str = "benchmark"
) -> dict[str, float]:
    """``avg@n:n=N`` and ``pass@k:k=K&n=N`` for every K in ``ks`` that is at most N."""
    n = _sample_count(problems, what)
    out = {metric_name("avg@n", n=n): avg_at_n(problems, what)}
    for k in ks:
        if k <= n:
            out[metric_name("pass@k", k=k, n=n)] = mean_pass_at_k(problems, k, what)
    return out
