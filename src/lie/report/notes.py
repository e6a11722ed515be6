"""Footnotes of the result tables, generated from the config: every assumption shows where it acts.

A :class:`Note` either marks rows (``keys``: a ``[n]`` after the model's name) or speaks for the
whole table. What is noted, each only when a row of the table is concerned:

- the checkpoint: what is known of the paper's (paper_numbers.yaml) against ours (``training.eval_step``:
  ``final``, a step, or ``best_val``, labelled a selection on the test sets), with each run's epochs
  and evaluated step (``runs/<run>/final.json``);
- the epochs of every run (the paper gives none; the authors' scripts ran 10 and 15);
- a higher clip (``clip_ratio_high`` above ``clip_ratio_low``): DAPO's value, no script of the authors';
- a continual stage: its epochs, its response limit and the L_ref it keeps (its base model's);
- a length-only run: its ``e`` (``extra_tokens``), which the paper does not give;
- training data other than the main model's (Polaris, OctoThinker's), with the paper-code conflicts
  of ``paper_numbers.yaml``;
- bare questions (``evaluation.bare_questions``), where the problems come from, that the
  out-of-domain inputs are the project's, the multiple-choice grading mode each summary records, and
  the thinking switch each evaluated model had (``evaluation.enable_thinking``);
- a base model at a hub revision that is not a commit (its weights float);
- how the prompts are tokenized (training's way), against the authors' evaluation (one BOS more
  where the tokenizer adds one).
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

from lie.config.datasets import DatasetSpec
from lie.config.settings import EpochStep
from lie.config.typed import Config
from lie.report.groups import main_model, model_of
from lie.report.inputs import ReportData


@dataclass(frozen=True)
class Note:
    text: str
    keys: tuple[str, ...] = ()  # the rows it marks; empty: the whole table


def _runs(data: ReportData, keys: list[str]) -> list[str]:
    return [k for k in keys if k in data.config.experiments]


def _epochs(count: int) -> str:
    return f"{count} epoch{'' if int(count) == 1 else 's'}"


def evaluated_at(data: ReportData, run: str) -> str:
    """Where ``run`` was evaluated, in a few words: its epochs (or step choice) and, where its
    ``runs/<run>/final.json`` names it, the step."""
    settings = data.config.run(run)
    choice = settings.eval_step
    if isinstance(choice, EpochStep):
        at = f"after {choice.epochs} of {choice.of} epochs"
    elif choice == "final":
        at = f"after {_epochs(settings.epochs)}"
    elif choice == "best_val":
        at = f"best_val of {_epochs(settings.epochs)}"
    else:
        at = f"step {choice} of {_epochs(settings.epochs)}"
    step = data.steps.get(run)
    return f"{at}, step {step}" if step is not None else f"{at}, step not recorded"


def checkpoint(data: ReportData, keys: list[str]) -> list[Note]:
    runs = _runs(data, keys)
    if not runs:
        return []
    settings = data.config.run(runs[0])  # training.eval_step: one for every run
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
        if data.config.evaluation.equal_steps:
            ours += ", a LIE run's after its baseline's epochs (evaluation.equal_steps)"
    at = "; ".join(f"{run}: {evaluated_at(data, run)}" for run in runs)
    return [Note(f"Checkpoints: {paper}; {ours}. Evaluated (runs/<run>/final.json): {at}.")]


def epochs(data: ReportData, keys: list[str]) -> list[Note]:
    by_epochs: dict[int, list[str]] = defaultdict(list)
    runs = _runs(data, keys)
    labels = [data.label(run) or run for run in runs]
    for run, label in zip(runs, labels, strict=True):  # a label two runs share is told apart by the run
        name = label if labels.count(label) == 1 else f"{label} ({run})"
        by_epochs[data.config.run(run).epochs].append(name)
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
    for run in _runs(data, keys):
        s = data.config.run(run)
        low, high = s.clip_ratio_low, s.clip_ratio_high
        if s.loss_mode == "vanilla" and high > low:
            notes.append(
                Note(
                    f"{s.algorithm}: clip_ratio_high {high} (low {low}), DAPO's value; the authors ship no "
                    f"script for this run, so this value and its {_epochs(s.epochs)} are ours.",
                    (run,),
                )
            )
    return notes


def continual(data: ReportData, keys: list[str]) -> list[Note]:
    notes = []
    reflen = data.config.reflen
    for run in _runs(data, keys):
        s = data.config.run(run)
        if not s.parent:
            continue
        notes.append(
            Note(
                f"continual stage: {_epochs(s.epochs)} from {s.parent}'s final model with a {s.max_response_length}"
                f"-token response limit; its L_ref are {s.model}'s on {s.data} (reflen.max_tokens "
                f"{reflen.max_tokens}, cap {reflen.cap}), not recomputed for the longer limit. The "
                "paper gives neither the epochs nor the L_ref of this stage.",
                (run,),
            )
        )
    return notes


def length_only(data: ReportData, keys: list[str]) -> list[Note]:
    return [
        Note(
            f"length reward alone (no R_red) with e = {data.config.run(run).reward.extra_tokens} "
            f"(experiments.{run}.extra_tokens; the paper does not give e for its ablation).",
            (run,),
        )
        for run in _runs(data, keys)
        if data.config.experiment(run).lie == "length-only"
    ]


def origin(config: Config, name: str) -> str:
    """Where a data set's file comes from, in a few words."""
    spec = config.dataset(name)
    if spec.local:
        return f"the local file {spec.local}"
    url = spec.url
    if url:
        parts = url.split("/")
        if "githubusercontent" in url and len(parts) > 6:
            return f"{parts[-1]} of {parts[3]}/{parts[4]} at {parts[5][:7]} (git blob {str(spec.sha1)[:7]})"
        return url
    if spec.synthetic:
        return "synthetic arithmetic"
    return f"{spec.hf_id} at {str(spec.revision)[:7]}"


def describe_source(config: Config, name: str) -> str:
    """Where a data set comes from and what is kept of it."""
    spec = config.dataset(name)
    if spec.sample:
        kept = f"a seeded draw of {spec.sample} (seed {spec.seed})"
    elif spec.filter:
        kept = f"the rows with {spec.filter}"
    else:
        kept = "all rows" + (", one a prompt" if spec.dedup else "")
    return f"{origin(config, name)}, {kept}"


def training_data(data: ReportData, keys: list[str]) -> list[Note]:
    main = main_model(data.config)
    main_data = {data.config.experiment(r).data for r in data.runs if model_of(data.config, r) == main}
    by_data: dict[str, list[str]] = defaultdict(list)
    for run in _runs(data, keys):
        if data.config.experiment(run).data not in main_data:
            by_data[data.config.experiment(run).data].append(run)
    notes = []
    for name, runs in by_data.items():
        text = f"trained on {name}: {describe_source(data.config, name)}"
        conflict = data.paper.conflict(name)
        notes.append(Note(text + (f"; {conflict}." if conflict else "."), tuple(runs)))
    return notes


def bare(data: ReportData, keys: list[str]) -> list[Note]:
    models = data.config.evaluation.bare_questions
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
    sets = data.config.datasets
    return [b for b in data.benchmarks if b in sets and sets[b].group == "eval" and sets[b].kind == "choice"]


AUTHORS_OOD = "valid_ood_qwen3.parquet (LINs-lab/LIE 1b3bb02, git blob 0b77e909)"


def _questions(bench: str, spec: DatasetSpec) -> str:
    """Where a benchmark's questions come from, in a few words."""
    if spec.synthetic:
        where = "synthetic"
    elif spec.hf_id:
        where = " ".join(str(x) for x in (spec.hf_id, spec.config, spec.split) if x)
    elif spec.url:
        where = str(spec.url).rsplit("/", 1)[-1]
    else:
        where = "a local file"
    rows = f", {spec.expected_rows} questions" if spec.expected_rows else ""
    shuffle = f", options shuffled with seed {spec.shuffle_seed}" if spec.shuffle_seed is not None else ""
    return f"{bench}: {where}{rows}{shuffle}"


def ood_inputs(data: ReportData, keys: list[str]) -> list[Note]:
    """The out-of-domain problems and prompts are the project's, not the authors' (their file was not read)."""
    ood = [b for b in data.config.evaluation.out_of_domain if b in data.benchmarks]
    if not ood:
        return []
    parts = "; ".join(_questions(bench, data.config.dataset(bench)) for bench in ood)
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
        value = data.config.thinking_at_evaluation(model)
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


VLLM_TEXT = "vLLM 0.24's LLM.generate on text prompts (vllm/renderers/base.py: default_cmpl_tok_params)"


def prompts(data: ReportData, keys: list[str]) -> list[Note]:
    """Our prompt ids are training's; the authors' evaluation adds the tokenizer's BOS to the text."""
    return [
        Note(
            "Prompt tokens: the chat template's text tokenized as training tokenizes it (verl 0.9.1's "
            "apply_chat_template(tokenize=True); TRL the same), no special token added: a BOS only where the "
            f"template writes one. The authors' evaluation hands the text to {VLLM_TEXT}, which adds the "
            "tokenizer's own BOS (add_special_tokens=True) and removes no duplicate: with a tokenizer that "
            "adds one (Llama-3's, OctoThinker's base) their prompts hold one BOS more than ours."
        )
    ]


SHA = re.compile(r"[0-9a-f]{40}")


def floating(data: ReportData, keys: list[str]) -> list[Note]:
    """Rows whose base model is a hub revision that is not a commit: its weights may change."""
    by_model: dict[str, list[str]] = defaultdict(list)
    for key in keys:
        entry = data.config.model(model_of(data.config, key))
        if entry.hf_id and not entry.path and not entry.tiny and not SHA.fullmatch(str(entry.revision or "")):
            by_model[entry.name].append(key)
    return [
        Note(
            f"{data.config.model(name).hf_id} at revision {data.config.model(name).revision!r}, not a commit "
            f"(models.{name}.revision): no commit of it was reachable when config.yaml was written, so its "
            "weights float; the model folder's lie_source.json records the commit that was downloaded.",
            tuple(rows),
        )
        for name, rows in by_model.items()
    ]


def tiny(data: ReportData, keys: list[str]) -> list[Note]:
    """A table of tiny models says first that its numbers test the pipeline, not LIE."""
    names = [m for m in dict.fromkeys(model_of(data.config, k) for k in keys) if data.config.model(m).tiny]
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
    floating,
    bare,
    problems,
    ood_inputs,
    choice_mode,
    thinking,
    prompts,
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
