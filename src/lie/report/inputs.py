"""Everything the report shows, read from the files under ``outdir`` (never from a live run).

- ``scores/<key>/summary.json`` of every evaluated key (runs in ``selected_runs`` order, then
  ``evaluation.base_models``): missing, unreadable or without the config's largest budget is an
  error (run ``lie evaluate``); a benchmark of ``evaluation.benchmarks`` absent from it is a gap,
  shown as missing (e.g. GPQA without an HF token);
- ``scores/<key>/scores.jsonl`` of every evaluated key: the per-problem scores at that budget, under
  each multiple-choice reader, for the intervals (``lie.report.intervals``); missing is an error;
- ``runs/<run>/final.json``: the step each run was evaluated at (named under every table); missing is
  shown as an unknown step (a run folder moved away after its evaluation);
- ``runs/<run>/{metrics,rollouts}``: per-step dynamics (``lie.analysis.dynamics``; missing is an
  error there);
- ``generations/<key>/<bench>.jsonl``: behaviours and diversity on the evaluation generations; a
  missing file is a gap with a warning (generations are large and may have been cleaned).
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from lie import config as cfgmod
from lie.analysis.behaviours import Classifier, Tally, load_classifier
from lie.analysis.diversity import group_diversity, mean_of
from lie.analysis.dynamics import RunDynamics, run_dynamics
from lie.config.layout import Layout
from lie.config.typed import Config
from lie.core.errors import LieError
from lie.formats.generations import iter_texts
from lie.formats.graded import read_summary
from lie.report.groups import evaluated_keys
from lie.report.intervals import ProblemScores, read_problem_scores
from lie.report.paper import Paper, load_paper

log = logging.getLogger(__name__)
# The multiple-choice readers (the schema's evaluation.choice_grading); the paper's numbers are
# compared under the authors' one.
READERS = ("authors", "robust")


def largest_budget(config: Config) -> int:
    return max(config.evaluation.budgets)  # the view refuses an empty list


def load_summary(layout: Layout, key: str, budget: int) -> dict[str, Any]:
    """``scores/<key>/summary.json``, checked to hold ``budget``."""
    path = layout.summary(key)
    fix = f"run `lie evaluate` for {key} (snakemake target {path})"
    summary = read_summary(path, fix)
    if budget not in [int(b) for b in summary.get("budgets") or []]:
        raise LieError(
            f"{path}: graded at budgets {summary.get('budgets')}, not at {budget} (evaluation.budgets "
            f"changed since): {fix}"
        )
    return summary


@dataclass
class EvalAnalysis:
    """Behaviours and diversity of one key's evaluation generations, per benchmark."""

    behaviours: dict[str, Tally] = field(default_factory=dict)
    diversity: dict[str, dict[str, Any]] = field(default_factory=dict)  # benchmarks with n > 1
    missing: list[str] = field(default_factory=list)  # benchmarks without a generations file


def analyse_generations(
    layout: Layout,
    key: str,
    benchmarks: list[str],
    classifier: Classifier,
    n: int,
    unit: str,
    samples: dict[str, int] | None = None,
) -> EvalAnalysis:
    """Behaviour tallies of every benchmark; diversity of those with several samples a problem.

    ``samples``: samples a problem per benchmark (from the summary), so that the texts of
    one-sample benchmarks (MMLU-Pro's 12k) are not kept in memory; unknown ones are kept.
    """
    out = EvalAnalysis()
    for bench in benchmarks:
        path = layout.generations(key, bench)
        if not path.exists():
            log.warning("%s is missing: no behaviours or diversity for %s on %s", path, key, bench)
            out.missing.append(bench)
            continue
        keep = (samples or {}).get(bench, 2) > 1
        tally = Tally(classifier.names)
        groups: dict[Any, list[tuple[str, list[int] | None]]] = defaultdict(list)
        for line in iter_texts(str(path), token_ids=unit == "token"):
            tally.add(classifier.count(line["text"]))
            if keep:
                groups[line["index"]].append((line["text"], line.get("token_ids")))
        out.behaviours[bench] = tally
        size = max((len(g) for g in groups.values()), default=0)
        if size > 1:
            values = [
                group_diversity([t for t, _ in g], n, unit, [i for _, i in g] if unit == "token" else None)
                for g in groups.values()
            ]
            out.diversity[bench] = {
                "n": size,
                "problems": len(groups),
                "distinct": mean_of(v.distinct for v in values),
                "overlap": mean_of(v.overlap for v in values),
            }
    return out


@dataclass
class ReportData:
    config: Config
    layout: Layout
    paper: Paper
    keys: list[str]
    runs: list[str]
    benchmarks: list[str]
    budget: int
    summaries: dict[str, dict[str, Any]]
    dynamics: dict[str, RunDynamics]
    evals: dict[str, EvalAnalysis]
    classifier: Classifier
    n: int  # the n-gram size of the states (reward.n)
    unit: str
    # key -> reader (None: the main grades) -> per-problem scores at ``budget`` (lie.report.intervals)
    problem_scores: dict[str, dict[str | None, ProblemScores]] = field(default_factory=dict)
    steps: dict[str, int | None] = field(default_factory=dict)  # run -> evaluated step (final.json)

    def label(self, key: str) -> str:
        return self.paper.label(key) or ""


def evaluated_step(layout: Layout, run: str) -> int | None:
    """The step ``runs/<run>/final.json`` names (None where it is missing or names none)."""
    path = layout.run_dir(run).final_json
    try:
        step = json.loads(path.read_text(encoding="utf-8")).get("step")
    except (OSError, ValueError, AttributeError):
        log.warning("%s is missing or unreadable: the report names no evaluated step for %s", path, run)
        return None
    return step if isinstance(step, int) and not isinstance(step, bool) else None


def collect(config: Config, max_points: int = 200, paper: Paper | None = None) -> ReportData:
    """Read and check every input of the report (errors and gaps: module docstring)."""
    layout = Layout(config)
    benchmarks = list(config.evaluation.benchmarks)
    budget = largest_budget(config)
    keys = evaluated_keys(config)
    runs = cfgmod.selected_runs(config)
    reward = config.reward
    n, unit = reward.n, reward.unit
    summaries = {key: load_summary(layout, key, budget) for key in keys}
    dynamics = {}
    for run in runs:
        log.info("dynamics of %s", run)
        dynamics[run] = run_dynamics(config, run, layout.run_dir(run), max_points=max_points)
    problem_scores = {key: read_problem_scores(layout.graded(key, "scores"), budget, READERS) for key in keys}
    classifier = load_classifier()
    evals = {}
    for key in keys:
        log.info("behaviours and diversity of %s's generations", key)
        sizes = {b: int(e.get("n", 2)) for b, e in summaries[key]["benchmarks"].items()}
        evals[key] = analyse_generations(layout, key, benchmarks, classifier, n, unit, sizes)
    return ReportData(
        config=config,
        layout=layout,
        paper=paper or load_paper(),
        keys=keys,
        runs=runs,
        benchmarks=benchmarks,
        budget=budget,
        summaries=summaries,
        dynamics=dynamics,
        evals=evals,
        classifier=classifier,
        n=n,
        unit=unit,
        problem_scores=problem_scores,
        steps={run: evaluated_step(layout, run) for run in runs},
    )
