"""Footnotes of the result tables, generated from the config: every assumption shows where it acts.

A :class:`Note` either marks rows (``keys``: a ``[n]`` after the model's name) or speaks for the
whole table. What is noted, each only when a row of the table is concerned:

- the checkpoint: the paper's (probably the best one, picked on the test sets) against ours
  (``training.eval_step``: ``final``, a step, or ``best_val``, labelled a selection on the test sets);
- the epochs of every run (the paper gives none; the authors' scripts ran 10 and 15);
- a higher clip (``clip_ratio_high`` above ``clip_ratio_low``): DAPO's value, no script of the authors';
- a continual stage: its epochs, its response limit and the L_ref it keeps (its base model's);
- a length-only run: its ``e`` (``extra_tokens``), which the paper does not give;
- training data other than the main model's (Polaris, OctoThinker's), with the paper-code conflicts
  of ``paper_numbers.yaml``;
- bare questions (``evaluation.bare_questions``), where the problems come from, that the
  out-of-domain inputs are the project's, the multiple-choice grading mode each summary records, and
  the thinking switch each evaluated model had (``evaluation.enable_thinking``).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from lie import config as cfgmod
from lie.config.sections import Evaluation, thinking_at_evaluation
from lie.report.groups import main_model, model_of
from lie.report.inputs import ReportData


@dataclass(frozen=True)
class Note:
    text: str
    keys: tuple[str, ...] = ()  # the rows it marks; empty: the whole table


def _runs(data: ReportData, keys: list[str]) -> list[str]:
    experiments = data.config.get("experiments") or {}
    return [k for k in keys if k in experiments]


def _spec(data: ReportData, run: str) -> dict[str, Any]:
    return cfgmod.experiment(data.config, run)


def _epochs(count: int) -> str:
    return f"{count} epoch{'' if int(count) == 1 else 's'}"


def checkpoint(data: ReportData, keys: list[str]) -> list[Note]:
    runs = _runs(data, keys)
    if not runs:
        return []
    settings = cfgmod.RunSettings.of(data.config, runs[0])  # training.eval_step: one for every run
    step = settings.eval_step
    paper = data.paper.checkpoint or "the paper does not say which checkpoint it reports"
    if step == "best_val":
        ours = (
            "ours are each run's saved checkpoint (every training.save_freq steps, here "
            f"{settings.save_freq}) with the best in-training validation average (training.eval_step: "
            f"best_val; training.val_sets at the training response length, one sample a problem): a selection "
            "on the test sets, so these numbers are optimistic. It is not the authors' selection, which keeps a "
            "copy at every validation (every 10 steps) and compares their valid_ood_qwen3.parquet average at "
            "16,384 tokens (docs/evaluation.md)"
        )
    else:
        which = "final" if step == "final" else f"step-{step}"
        ours = f"ours are each run's {which} checkpoint (training.eval_step)"
    return [Note(f"Checkpoints: {paper}; {ours}.")]


def epochs(data: ReportData, keys: list[str]) -> list[Note]:
    by_epochs: dict[int, list[str]] = defaultdict(list)
    runs = _runs(data, keys)
    labels = [data.label(run) or run for run in runs]
    for run, label in zip(runs, labels, strict=True):  # a label two runs share is told apart by the run
        name = label if labels.count(label) == 1 else f"{label} ({run})"
        by_epochs[int(_spec(data, run)["epochs"])].append(name)
    if not by_epochs:
        return []
    # labels hold commas ("GSPO+LIE, continual stage 8k -> 12k"): runs are parted by " / "
    parts = "; ".join(f"{n}: {' / '.join(names)}" for n, names in sorted(by_epochs.items()))
    return [
        Note(
            f"Epochs (experiments.<run>.epochs; the paper gives none, the authors' scripts 10 or 15): {parts}."
        )
    ]


def higher_clip(data: ReportData, keys: list[str]) -> list[Note]:
    notes = []
    algorithms = data.config.get("algorithms") or {}
    for run in _runs(data, keys):
        spec = _spec(data, run)
        algo = algorithms.get(spec["algorithm"]) or {}
        low, high = algo.get("clip_ratio_low"), algo.get("clip_ratio_high")
        if algo.get("loss_mode") == "vanilla" and low is not None and high is not None and high > low:
            notes.append(
                Note(
                    f"{spec['algorithm']}: clip_ratio_high {high} (low {low}), DAPO's value; the authors ship no "
                    f"script for this run, so this value and its {_epochs(spec['epochs'])} are ours.",
                    (run,),
                )
            )
    return notes


def continual(data: ReportData, keys: list[str]) -> list[Note]:
    notes = []
    reflen = data.config.get("reflen") or {}
    for run in _runs(data, keys):
        spec = _spec(data, run)
        if not spec.get("parent"):
            continue
        limit = cfgmod.RunSettings.of(data.config, run).max_response_length
        notes.append(
            Note(
                f"continual stage: {_epochs(spec['epochs'])} from {spec['parent']}'s final model with a {limit}-token "
                f"response limit; its L_ref are {spec['model']}'s on {spec['data']} (reflen.max_tokens "
                f"{reflen.get('max_tokens')}, cap {reflen.get('cap')}), not recomputed for the longer limit. The "
                "paper gives neither the epochs nor the L_ref of this stage.",
                (run,),
            )
        )
    return notes


def length_only(data: ReportData, keys: list[str]) -> list[Note]:
    return [
        Note(
            f"length reward alone (no R_red) with e = {_spec(data, run).get('extra_tokens', 0)} "
            f"(experiments.{run}.extra_tokens; the paper does not give e for its ablation).",
            (run,),
        )
        for run in _runs(data, keys)
        if _spec(data, run).get("lie") == "length-only"
    ]


def origin(config: dict[str, Any], name: str) -> str:
    """Where a data set's file comes from, in a few words."""
    _, entry = cfgmod.dataset_entry(config, name)
    if entry.get("local"):
        return f"the local file {entry['local']}"
    url = entry.get("url")
    if url:
        parts = url.split("/")
        if "githubusercontent" in url and len(parts) > 6:
            return f"{parts[-1]} of {parts[3]}/{parts[4]} at {parts[5][:7]} (git blob {str(entry.get('sha1'))[:7]})"
        return url
    if entry.get("synthetic"):
        return "synthetic arithmetic"
    return f"{entry.get('hf_id')} at {str(entry.get('revision'))[:7]}"


def describe_source(config: dict[str, Any], name: str) -> str:
    """Where a data set comes from and what is kept of it."""
    _, entry = cfgmod.dataset_entry(config, name)
    if entry.get("sample"):
        kept = f"a seeded draw of {entry['sample']} (seed {entry.get('seed')})"
    elif entry.get("filter"):
        kept = f"the rows with {entry['filter']}"
    else:
        kept = "all rows" + (", one a prompt" if entry.get("dedup") else "")
    return f"{origin(config, name)}, {kept}"


def training_data(data: ReportData, keys: list[str]) -> list[Note]:
    main = main_model(data.config)
    main_data = {_spec(data, r)["data"] for r in data.runs if model_of(data.config, r) == main}
    by_data: dict[str, list[str]] = defaultdict(list)
    for run in _runs(data, keys):
        if _spec(data, run)["data"] not in main_data:
            by_data[_spec(data, run)["data"]].append(run)
    notes = []
    for name, runs in by_data.items():
        text = f"trained on {name}: {describe_source(data.config, name)}"
        conflict = data.paper.conflict(name)
        notes.append(Note(text + (f"; {conflict}." if conflict else "."), tuple(runs)))
    return notes


def bare(data: ReportData, keys: list[str]) -> list[Note]:
    models = Evaluation.of(data.config).bare_questions
    marked = tuple(k for k in keys if model_of(data.config, k) in models)
    if not marked:
        return []
    return [
        Note(
            "evaluated on bare questions, without the instruction (evaluation.bare_questions: the authors' "
            "Llama file where a benchmark has one), as the authors evaluated OctoThinker.",
            marked,
        )
    ]


def problems(data: ReportData, keys: list[str]) -> list[Note]:
    by_source: dict[str, list[str]] = defaultdict(list)
    for bench in data.benchmarks:
        by_source[origin(data.config, bench)].append(bench)
    parts = "; ".join(f"{', '.join(benches)}: {source}" for source, benches in by_source.items())
    return [Note(f"Problems: {parts}.")]


def _choice_benches(data: ReportData) -> list[str]:
    eval_sets = (data.config.get("datasets") or {}).get("eval") or {}
    return [b for b in data.benchmarks if (eval_sets.get(b) or {}).get("kind") == "choice"]


AUTHORS_OOD = "valid_ood_qwen3.parquet (LINs-lab/LIE 1b3bb02, git blob 0b77e909)"


def _questions(bench: str, entry: dict[str, Any]) -> str:
    """Where a benchmark's questions come from, in a few words."""
    if entry.get("synthetic"):
        where = "synthetic"
    elif entry.get("hf_id"):
        where = " ".join(str(x) for x in (entry["hf_id"], entry.get("config"), entry.get("split")) if x)
    elif entry.get("url"):
        where = str(entry["url"]).rsplit("/", 1)[-1]
    else:
        where = "a local file"
    rows = f", {entry['expected_rows']} questions" if entry.get("expected_rows") else ""
    shuffle = (
        f", options shuffled with seed {entry['shuffle_seed']}"
        if entry.get("shuffle_seed") is not None
        else ""
    )
    return f"{bench}: {where}{rows}{shuffle}"


def ood_inputs(data: ReportData, keys: list[str]) -> list[Note]:
    """The out-of-domain problems and prompts are the project's, not the authors' (their file was not read)."""
    ood = [b for b in Evaluation.of(data.config).out_of_domain if b in data.benchmarks]
    if not ood:
        return []
    eval_sets = (data.config.get("datasets") or {}).get("eval") or {}
    parts = "; ".join(_questions(bench, eval_sets.get(bench) or {}) for bench in ood)
    return [
        Note(
            f"Out-of-domain inputs are the project's: the authors' file, {AUTHORS_OOD}, is in their public "
            "tree but was not in the offline snapshot this project was built from, so its questions, prompts and "
            f"option layout were never read. These columns use {parts}, with our prompt (prompt.choice) and "
            "option layout; compare them with the paper's as a different test of the same skill."
        )
    ]


def thinking(data: ReportData, keys: list[str]) -> list[Note]:
    """The chat template's thinking switch each evaluated model had (evaluation.enable_thinking)."""
    values: dict[str, list[str]] = defaultdict(list)
    for model in dict.fromkeys(model_of(data.config, k) for k in keys):
        value = thinking_at_evaluation(data.config, model)
        values["not passed (the template's default)" if value is None else ("on" if value else "off")].append(
            model
        )
    parts = "; ".join(f"{v}: {', '.join(models)}" for v, models in values.items())
    return [
        Note(
            f"Thinking at evaluation (evaluation.enable_thinking, else models.<m>.enable_thinking): {parts}. The "
            "authors' eval script passes none (the template's default) and gives no Qwen3-4B command "
            "(docs/evaluation.md)."
        )
    ]


def choice_mode(data: ReportData, keys: list[str]) -> list[Note]:
    choice = _choice_benches(data)
    if not choice:
        return []
    modes: dict[str, list[str]] = defaultdict(list)
    for key in keys:
        mode = (data.summaries[key].get("grading") or {}).get("choice_grading")
        modes[mode or "unrecorded (an older summary: rerun `lie evaluate`)"].append(key)
    if len(modes) == 1:
        text = f"mode {next(iter(modes))}"
    else:
        text = "modes " + "; ".join(f"{m}: {', '.join(k)}" for m, k in modes.items())
    return [
        Note(
            f"Multiple choice ({', '.join(choice)}) graded in {text} (evaluation.choice_grading); every table shows "
            "both readers: (authors) = math-verify, then the authors' A-E rules, as their script (compared with the "
            "paper); robust = our reader of A-J."
        )
    ]


def tiny(data: ReportData, keys: list[str]) -> list[Note]:
    """A table of tiny models says first that its numbers test the pipeline, not LIE."""
    names = [
        m
        for m in dict.fromkeys(model_of(data.config, k) for k in keys)
        if cfgmod.model_entry(data.config, m).get("tiny")
    ]
    if not names:
        return []
    return [
        Note(
            f"Tiny models ({', '.join(names)}: built locally by `lie base-model`, models.<m>.tiny): these numbers "
            "show that the pipeline runs end to end; they say nothing about LIE or the paper."
        )
    ]


MAKERS = (
    tiny,
    checkpoint,
    epochs,
    higher_clip,
    continual,
    length_only,
    training_data,
    bare,
    problems,
    ood_inputs,
    choice_mode,
    thinking,
)


def table_notes(data: ReportData, keys: list[str]) -> list[Note]:
    """Every footnote of a table with rows ``keys``, in a fixed order."""
    return [note for make in MAKERS for note in make(data, keys)]


def markers(notes: list[Note]) -> tuple[dict[str, str], list[str]]:
    """``{key: " [1,2]"}`` for the marked rows, and the notes as lines (numbered where they mark rows)."""
    marks: dict[str, list[int]] = defaultdict(list)
    lines, number = [], 0
    for note in notes:
        if note.keys:
            number += 1
            for key in note.keys:
                marks[key].append(number)
            lines.append(f"[{number}] {note.text}")
        else:
            lines.append(note.text)
    return {k: f" [{','.join(map(str, v))}]" for k, v in marks.items()}, lines
