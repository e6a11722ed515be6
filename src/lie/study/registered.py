"""The second registration's readings (docs/study/preregistration-v2.md), from per-pair numbers only.

- :func:`persistence`: does plain GRPO stay trapped in the strong level? The per-step trap index
  averaged over its runs, as a trailing running mean, must stay at or above the threshold through the
  registered step;
- :func:`registered_rows`: per level, the one-sided paired t-test of GRPO + LIE minus GRPO (with the smallest
  effect it detects at the registered power, from the observed paired SD); the primary test (the
  strong level); the interaction (the strong level's mean difference minus the weak level's, Welch);
  the slope of the per-pair differences over the levels' trap strength. A test is "supported" when
  its one-sided p-value is below alpha, and "not supported" otherwise; nothing else is read.

Only what the registration allows carries a verdict: the primary always; the interaction and the slope
only at the look that decides them, ``make study-full``, recognised by its registered pairs
(:data:`FULL_LOOK_PAIRS`: 30 in the strong level, 15 in each other one; ``make study``'s are "reported
as underpowered, not as a verdict"); the others are computed and printed with "no verdict". A level
other than the strong one is never a registered test alone. When the persistence check fails, every verdict carries the
registration's words "the trap did not persist".

Pairs of runs from another machine are pooled by adding them as further pairs (each pair is two runs of
the same machine, supervised model and seed): :func:`read_effects` reads a machine's per-pair
differences from its ``tables/study_paired.csv``, :func:`pool` joins them, and the same tests read the
union (``lie study-report --pool OUTDIR``: ``tables/study_tests_pooled.csv``).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lie.core.errors import LieError
from lie.study.spec import RegisteredTests
from lie.study.stats import SPREAD_TOL, Test, detectable_effect, interaction, paired_test, slope

SUPPORTED, NOT_SUPPORTED = "supported", "not supported"
UNTESTABLE = "no result (too few pairs, or no spread)"
NOT_REGISTERED = "no verdict: not a registered test"  # a level other than the strong one, alone
UNDERPOWERED = "no verdict: underpowered at this look (decided by make study-full)"
# the pairs of make study-full (preregistration-v2.md): strong level, every other level
FULL_LOOK_PAIRS = (30, 15)
NOT_PERSISTED = "the trap did not persist"  # the registration's words when the persistence check fails
PERSISTENCE_SMOOTH = 5  # steps of the trailing running mean of the persistence check


@dataclass(frozen=True)
class Persistence:
    steps: int  # the check runs through this step
    threshold: float
    lowest: float | None  # the lowest running mean over steps 1..steps (None: no step there)
    lowest_step: int | None
    runs: int

    @property
    def holds(self) -> bool:
        return self.lowest is not None and self.lowest >= self.threshold


def persistence(curves: Sequence[Mapping[int, float]], steps: int, threshold: float) -> Persistence:
    """``curves``: per GRPO run of the strong level, ``{step: trap index}``. The per-step mean over runs
    (steps every run has), as a :data:`PERSISTENCE_SMOOTH`-step trailing running mean, at its lowest
    over steps ``1..steps``."""
    common = sorted(set.intersection(*(set(c) for c in curves))) if curves else []
    mean = [sum(c[x] for c in curves) / len(curves) for x in common]
    lowest: tuple[float, int] | None = None
    for i, x in enumerate(common):
        if x > steps:
            break
        chunk = mean[max(0, i - PERSISTENCE_SMOOTH + 1) : i + 1]
        value = sum(chunk) / len(chunk)
        if lowest is None or value < lowest[0]:
            lowest = (value, x)
    return Persistence(
        steps, threshold, lowest[0] if lowest else None, lowest[1] if lowest else None, len(curves)
    )


def qualified(verdict: str, check: Persistence | None) -> str:
    """``verdict`` with the registration's words when the persistence check fails (or has no step to
    read); ``check`` None: a config without the check (the first registration)."""
    if check is None or check.holds:
        return verdict
    return f"{verdict}; {NOT_PERSISTED}"


def _verdict(test: Test | None, alpha: float, withheld: str | None, check: Persistence | None) -> str:
    if withheld is not None:
        return withheld
    if test is None:
        return UNTESTABLE
    return qualified(SUPPORTED if test.p < alpha else NOT_SUPPORTED, check)


def _sd(values: Sequence[float]) -> float | None:
    if len(values) < 2:
        return None
    if max(values) - min(values) <= SPREAD_TOL:  # equal values: no spread, not floating-point noise
        return 0.0
    m = sum(values) / len(values)
    return math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1))


def _row(test_id: str, text: str, test: Test | None, verdict: str, alpha: float, n: int,
         **extra: Any) -> dict[str, Any]:  # fmt: skip
    """One test's row; ``n`` (pairs) is given even where there are too few to test."""
    empty = dict.fromkeys(("estimate", "se", "t", "df", "p"))
    return {"test": test_id, "comparison": text, **(test.as_dict() if test else empty), "n": n,
            "alpha": alpha, "verdict": verdict, **extra}  # fmt: skip


def registered_rows(
    effects: Mapping[str, Sequence[float]], tests: RegisteredTests, check: Persistence | None
) -> list[dict[str, Any]]:
    """``effects``: per level (condition), its per-pair differences GRPO + LIE minus GRPO on the primary
    measure; ``check``: the persistence check of the same runs. Rows: every level's paired test (the
    strong one is the primary), the interaction, the slope; a verdict only where the registration gives
    one, with "the trap did not persist" where ``check`` fails."""
    rows = []
    full_look = all(
        len(diffs) >= FULL_LOOK_PAIRS[0 if level == tests.strong else 1] for level, diffs in effects.items()
    ) and {tests.strong, tests.weak} <= set(effects)

    def verdict(test_id: str, test: Test | None) -> str:
        withheld = None
        if test_id.startswith("effect:"):
            withheld = NOT_REGISTERED
        elif test_id in ("interaction", "slope") and not full_look:
            withheld = UNDERPOWERED
        return _verdict(test, tests.alpha, withheld, check)

    for level, diffs in effects.items():
        sd = _sd(diffs)
        # no spread (fewer than 2 pairs, or all equal): no detectable effect to state
        mde = detectable_effect(sd, len(diffs), tests.alpha, tests.power) if sd else None
        test_id = "primary" if level == tests.strong else f"effect:{level}"
        test = paired_test(diffs)
        rows.append(_row(test_id, f"{level}: GRPO + LIE - GRPO (paired, one-sided)", test, verdict(test_id, test),
                         tests.alpha, len(diffs), level=level, strength=tests.strength[level], sd=sd,
                         detectable=mde, power=tests.power))  # fmt: skip
    strong, weak = effects.get(tests.strong, ()), effects.get(tests.weak, ())
    test = interaction(strong, weak)
    rows.append(_row("interaction", f"effect in {tests.strong} minus effect in {tests.weak} (Welch, one-sided)",
                     test, verdict("interaction", test), tests.alpha, len(strong) + len(weak)))  # fmt: skip
    xs = [tests.strength[level] for level, diffs in effects.items() for _ in diffs]
    ys = [d for diffs in effects.values() for d in diffs]
    test = slope(xs, ys)
    rows.append(_row("slope", "per-pair effect over trap strength (least squares, one-sided)", test,
                     verdict("slope", test), tests.alpha, len(ys)))  # fmt: skip
    return rows


def cell(value: Any, fmt: str) -> str:
    """A table cell: ``value`` formatted, or a dash for none."""
    return "—" if value is None else format(value, fmt)


def tests_markdown(rows: Sequence[dict[str, Any]], check: Persistence) -> list[str]:
    """The registered readings, in the registration's words."""
    held = "holds" if check.holds else "**fails**"
    lines = [
        "## The registered tests (docs/study/preregistration-v2.md)",
        "",
        f"Persistence check: plain GRPO's trap index in the strong level ({check.runs} runs, mean per step, "
        f"{PERSISTENCE_SMOOTH}-step running mean) at its lowest through step {check.steps}: "
        f"{cell(check.lowest, '.3f')} (step {check.lowest_step}), threshold {check.threshold:g}: {held}."
        + ("" if check.holds else f' Every verdict below is read with the words "{NOT_PERSISTED}".'),
        "",
        "A verdict is given only where the registration gives one at this look; the other rows are computed "
        "and printed without one.",
        "",
        "| test | comparison | pairs | estimate | SE | t | df | one-sided p | alpha | detectable at power "
        "(observed SD) | verdict |",
        "|:---|:---|---:|---:|---:|---:|---:|---:|---:|---:|:---|",
    ]
    for r in rows:
        detectable = r.get("detectable")
        power = f"{cell(detectable, '.3f')} ({r['power']:g})" if detectable is not None else "—"
        lines.append(
            f"| {r['test']} | {r['comparison']} | {cell(r['n'], 'd')} | {cell(r['estimate'], '+.4f')} | "
            f"{cell(r['se'], '.4f')} | {cell(r['t'], '.2f')} | {cell(r['df'], 'd')} | {cell(r['p'], '.4f')} | "
            f"{r['alpha']:g} | {power} | **{r['verdict']}** |"
        )
    return lines


def read_effects(path: str | Path) -> dict[str, list[float]]:
    """Per level, the per-pair differences of the registered primary comparison in a
    ``study_paired.csv`` (another machine's study, or this one's)."""
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
    except OSError as exc:
        raise LieError(f"cannot read {path}: {exc.strerror}") from None
    effects: dict[str, list[float]] = {}
    for number, row in enumerate(rows, start=2):
        if row.get("registered") != "primary":
            continue
        try:
            effects[row["condition"]] = [float(d) for d in (row.get("diffs") or "").split()]
        except (KeyError, ValueError):
            raise LieError(f"{path} line {number}: 'diffs' must be numbers separated by spaces") from None
    if not effects:
        raise LieError(
            f"{path}: no row with registered = primary (not a study_paired.csv of lie study-report)"
        )
    return effects


def read_curves(path: str | Path, condition: str, arm: str) -> list[dict[int, float]]:
    """Per run of ``arm`` in ``condition``, ``{step: trap index}`` from a ``study_steps.csv`` (another
    machine's study): the persistence check's input."""
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
    except OSError as exc:
        raise LieError(f"cannot read {path}: {exc.strerror}") from None
    curves: dict[str, dict[int, float]] = {}
    for number, row in enumerate(rows, start=2):
        if row.get("condition") != condition or row.get("arm") != arm:
            continue
        try:
            curves.setdefault(row["run"], {})[int(row["step"])] = float(row["trap_index"])
        except (KeyError, ValueError):
            raise LieError(f"{path} line {number}: run, step and trap_index must be given") from None
    if not curves:
        raise LieError(f"{path}: no step of arm {arm!r} in condition {condition!r}")
    return list(curves.values())


def pool(*machines: Mapping[str, Sequence[float]]) -> dict[str, list[float]]:
    """The union of several machines' pairs, level by level (pairs are never formed across machines)."""
    out: dict[str, list[float]] = {}
    for effects in machines:
        for level, diffs in effects.items():
            out.setdefault(level, []).extend(diffs)
    return out
