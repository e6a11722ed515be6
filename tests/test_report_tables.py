"""The result tables of the paper's own config.yaml: which table each run is in, the paper's column
order, and the footnotes the config generates.

The summaries are made by ``lie evaluate``'s own summariser from score lines written here (no
model runs): these tests are about layout and notes, which depend on the config, not on the
accuracies.
"""

from __future__ import annotations

import copy

import pytest
from small import paper_config

from lie.analysis.behaviours import load_classifier
from lie.config import Config
from lie.config.layout import Layout
from lie.report import tables
from lie.report.build import report_paths
from lie.report.groups import evaluated_keys, table_keys
from lie.report.inputs import READERS, ReportData
from lie.report.intervals import problem_scores
from lie.report.paper import load_paper
from lie.report.render import markdown
from lie.stages.evaluate import add_readers, summarize_scores

B = "qwen3-4b-base"
R = "qwen3-4b-base_dapo_"


def scores(config: Config, key: str) -> list[dict]:
    """Two problems a benchmark, n samples each; the key's name decides which samples are right."""
    lines = []
    salt = sum(map(ord, key))
    for bench in config.evaluation.benchmarks:
        entry = config.dataset(bench)
        for index in range(2):
            for sample in range(entry.n or 1):
                correct = (salt + index + sample) % 3 == 0
                length = 1000 * (1 + (salt + sample) % 40)
                grades = {str(b): {"correct": correct and length <= b, "pred": "", "status": "ok"}
                          for b in config.evaluation.budgets}  # fmt: skip
                line = dict(bench=bench, index=index, sample=sample, kind=entry.kind, gold="1",
                            num_tokens=length, finish_reason="stop", grades=grades)  # fmt: skip
                if entry.kind == "choice":  # the authors' reader misses the first problem's answers
                    missed = {b: {**g, "correct": g["correct"] and index != 0} for b, g in grades.items()}
                    line["grades_by_reader"] = {"robust": grades, "authors": missed}
                lines.append(line)
    return lines


def report_data(config: dict, mode: str = "robust") -> ReportData:
    keys = evaluated_keys(Config.of(config))
    summaries, per_problem = {}, {}
    budgets = config["evaluation"]["budgets"]
    for key in keys:
        lines = scores(Config.of(config), key)
        summary = summarize_scores(lines, budgets, Config.of(config))
        add_readers(summary, lines, budgets, Config.of(config), [mode, *(m for m in READERS if m != mode)])
        summary["grading"] = {"choice_grading": mode}
        summaries[key] = summary
        per_problem[key] = problem_scores(lines, 32768, READERS)
    return ReportData(config=Config.of(config), layout=Layout(Config.of(config)), paper=load_paper(), keys=keys,
                      runs=[k for k in keys if k in config["experiments"]],
                      benchmarks=list(config["evaluation"]["benchmarks"]), budget=32768, summaries=summaries,
                      dynamics={}, evals={}, classifier=load_classifier(), n=10, unit="word",
                      problem_scores=per_problem)  # fmt: skip


@pytest.fixture(scope="module")
def paper():
    return report_data(paper_config())


def rendered(data: ReportData, name: str) -> str:
    keys = table_keys(Config.of(data.config), data.keys)[name]
    return markdown(tables.result_table(data, keys, tables.result_rows(data, keys, name)))


def test_every_run_is_in_the_table_the_paper_puts_it_in(paper):
    groups = table_keys(Config.of(paper.config), paper.keys)
    assert groups == {
        "main": [B] + [R + s for s in ("grpo", "grpo_lie", "grpo-clip-higher", "grpo-clip-higher_lie", "gspo",
                                       "gspo_lie", "gspo_lie_12k")],  # Base first, as the paper's Table 1
        "families": ["qwen3-4b_polaris_gspo", "qwen3-4b_polaris_gspo_lie", "octothinker-3b_deepmath-5k_gspo",
                     "octothinker-3b_deepmath-5k_gspo_lie"],
        "scale": ["qwen3-1.7b-base_dapo_gspo", "qwen3-1.7b-base_dapo_gspo_lie", "qwen3-8b-base_dapo_gspo",
                  "qwen3-8b-base_dapo_gspo_lie"],
        "ablation": [R + "gspo_lie", R + "gspo_len-only"],
    }  # fmt: skip
    names = {p.name for p in report_paths(Layout(Config.of(paper.config)))}
    assert {f"{t}.{e}" for t in groups for e in ("md", "csv", "tex")} <= names
    assert "sensitivity.md" not in names and {"lengths.md", "lengths.csv", "lengths.png"} <= names


def test_columns_follow_the_papers_table(paper):
    assert tables.result_columns(paper) == ["math500", "olympiadbench", "amc", "aime24", "aime25", "in_domain",
                                            "arc-c", "gpqa-diamond", "mmlu-pro", "out_of_domain", "minerva"]  # fmt: skip
    header = next(line for line in rendered(paper, "main").splitlines() if line.startswith("| model"))
    titles = [c.strip() for c in header.strip("|").split("|")]
    assert [t for t in titles if not t.endswith(("paper", "Δ"))] == [
        "model", "paper row", "MATH-500 ours", "OlympiadBench ours", "AMC ours", "AIME24 ours", "AIME25 ours",
        "ID avg ours", "ARC-c ours (authors)", "ARC-c robust", "GPQA-Diamond ours (authors)", "GPQA-Diamond robust",
        "MMLU-Pro ours (authors)", "MMLU-Pro robust", "OOD avg ours (authors)", "OOD avg robust", "Minerva"]  # fmt: skip


def row(md: str, key: str) -> str:
    return next(line for line in md.splitlines() if line.startswith(f"| {key}"))


def footnote_line(md: str, start: str) -> str:
    return next(line for line in md.splitlines() if line.startswith(start))


def footnote(md: str, number: str) -> str:
    return next(line for line in md.splitlines() if line.startswith(f"- [{number}]"))


def test_assumptions_are_footnotes_of_the_rows_they_concern(paper):
    main = rendered(paper, "main")
    clip = row(main, R + "grpo-clip-higher ")
    assert clip.startswith(f"| {R}grpo-clip-higher [1] |")
    assert "clip_ratio_high 0.28 (low 0.2), DAPO's value" in footnote(main, "1") and "10 epochs" in footnote(
        main, "1"
    )
    assert row(main, R + "grpo-clip-higher_lie").startswith(f"| {R}grpo-clip-higher_lie [2] |")
    assert "its 15 epochs are ours" in footnote(main, "2")
    assert row(main, R + "gspo_lie_12k").startswith(f"| {R}gspo_lie_12k [3] |")
    stage = footnote(main, "3")
    assert f"5 epochs from {R}gspo_lie's final model with a 12288-token response limit" in stage
    assert "its L_ref are qwen3-4b-base's on dapo (reflen.max_tokens 8192, cap 9192)" in stage
    assert (
        "- Checkpoints: the paper does not say which checkpoint its numbers come from (the authors' " in main
    )
    assert "valid_ood_qwen3.parquet at 16,384 tokens beats the best so far, a file whose content this" in main
    assert "test sets" not in footnote_line(main, "- Checkpoints")  # an inference about an unread file
    assert "- Epochs (experiments.<run>.epochs" in main and "10: GRPO / GRPO w/ higher clip / GSPO" in main
    assert "valid.all_qwen3.parquet of LINs-lab/LIE at 1b3bb02 (git blob b7d15c4)" in main
    assert "- Multiple choice (arc-c, gpqa-diamond, mmlu-pro) graded in mode robust" in main
    ablation = rendered(paper, "ablation")
    assert row(ablation, R + "gspo_len-only").startswith(f"| {R}gspo_len-only [1] |")
    assert "length reward alone (no R_red) with e = 500" in footnote(ablation, "1")
    families = rendered(paper, "families")
    polaris = footnote(families, "1")
    assert "trained on polaris: POLARIS-Project/Polaris-Dataset-53K at 296f8e3, all rows." in polaris
    octo = footnote(families, "2")
    assert "trained on deepmath-5k: deepmath-5k-octothinker_add1k.parquet of LINs-lab/LIE at 1b3bb02" in octo
    assert "the authors' training script for OctoThinker" in octo and "a DAPO-Math file" in octo
    assert "not a commit" in footnote(families, "3") and "evaluated on bare questions" in footnote(
        families, "4"
    )
    assert row(families, "octothinker-3b_deepmath-5k_gspo_lie").startswith(
        "| octothinker-3b_deepmath-5k_gspo_lie [2,3,4] |"
    )
    assert "[" not in row(rendered(paper, "scale"), "qwen3-8b-base_dapo_gspo ").split("|")[1]


def test_the_notes_follow_the_config():
    config = paper_config()
    config["algorithms"]["grpo-clip-higher"]["clip_ratio_high"] = 0.3
    config["experiments"][R + "gspo_len-only"]["extra_tokens"] = 0
    config["training"]["eval_step"] = 200
    config["evaluation"]["bare_questions"] = []
    data = report_data(config, mode="authors")
    main, ablation = rendered(data, "main"), rendered(data, "ablation")
    assert "clip_ratio_high 0.3 (low 0.2)" in main and "ours are each run's step-200 checkpoint" in main
    assert "graded in mode authors" in main
    assert "with e = 0 (experiments" in ablation
    assert "bare questions" not in rendered(data, "families")


def test_a_summary_without_a_mode_is_said_so():
    data = report_data(copy.deepcopy(paper_config()))
    for summary in data.summaries.values():
        del summary["grading"]
    assert "graded in mode unrecorded (an older summary: rerun `lie evaluate`)" in rendered(data, "scale")


def test_evaluation_lengths_table(paper):
    rows = tables.length_rows(paper)
    assert {r["budget"] for r in rows} == set(paper_config()["evaluation"]["budgets"])
    md = markdown(tables.length_table(paper, rows))
    assert (
        "| model | MATH-500 | OlympiadBench | AMC | AIME24 | AIME25 | ARC-c | GPQA-Diamond | MMLU-Pro | Minerva |"
        in md
    )
    octo = [r for r in rows if r["key"] == "octothinker-3b_deepmath-5k_gspo" and r["budget"] == 32768]
    salt = sum(map(ord, "octothinker-3b_deepmath-5k_gspo"))
    aime = next(r for r in octo if r["bench"] == "aime24")
    cut = [min(1000 * (1 + (salt + s) % 40), 32768) for s in range(32)]  # longer ones count the budget
    assert aime["mean_tokens"] == pytest.approx(sum(cut) / 32)


# ---------------------------------------------------------------- readers, intervals, gains
def csv_row(rows: list[dict], key: str, bench: str, reader: str = "", versus: str = "") -> dict:
    (found,) = [
        r for r in rows if (r["key"], r["bench"], r["reader"], r["versus"]) == (key, bench, reader, versus)
    ]
    return found


def test_out_of_domain_columns_under_both_readers(paper):
    keys = table_keys(Config.of(paper.config), paper.keys)["main"]
    rows = tables.result_rows(paper, keys)
    for key in keys:  # the authors' reader misses the first problem's answers (scores() above)
        authors, robust = (csv_row(rows, key, "arc-c", r) for r in ("authors", "robust"))
        right = [correct for (index, correct) in first_sample_correct(paper.config, key, "arc-c")]
        assert robust["ours_pct"] == pytest.approx(100 * sum(right) / 2)
        assert authors["ours_pct"] == pytest.approx(100 * right[1] / 2)
        assert authors["paper_pct"] == robust["paper_pct"] == paper.paper.main_value(key, "arc-c")
    ood = csv_row(rows, B, "out_of_domain", "authors")["ours_pct"]
    assert ood == pytest.approx(sum(csv_row(rows, B, b, "authors")["ours_pct"] for b in OOD) / 3)
    assert {r["reader"] for r in rows if r["bench"] in ("math500", "in_domain")} == {""}


OOD = ("arc-c", "gpqa-diamond", "mmlu-pro")
IN = ("math500", "olympiadbench", "amc", "aime24", "aime25")


def first_sample_correct(config: Config, key: str, bench: str) -> list[tuple[int, bool]]:
    return [(x["index"], x["grades"]["32768"]["correct"]) for x in scores(config, key) if x["bench"] == bench]


def per_problem(config: dict, key: str, bench: str) -> dict[int, float]:
    lines = [x for x in scores(config, key) if x["bench"] == bench]
    return {i: sum(x["grades"]["32768"]["correct"] for x in lines if x["index"] == i) /
               sum(x["index"] == i for x in lines) for i in (0, 1)}  # fmt: skip


def samples_a_problem(config: dict, key: str, bench: str) -> int:
    return sum(x["bench"] == bench and x["index"] == 0 for x in scores(config, key))


def resampled(config: dict, key: str, bench: str) -> float | None:
    """Points: sqrt(sum of p(1-p)/(k-1)) / P, the noise of re-sampling one model on the same problems."""
    k, shares = samples_a_problem(config, key, bench), per_problem(config, key, bench).values()
    return None if k < 2 else 100 * sum(p * (1 - p) / (k - 1) for p in shares) ** 0.5 / len(shares)


def sd_over_root(values: list[float]) -> float:
    mean = sum(values) / len(values)
    return (sum((v - mean) ** 2 for v in values) / (len(values) - 1) / len(values)) ** 0.5


def test_every_difference_carries_its_interval_from_the_per_problem_scores(paper):
    keys = table_keys(Config.of(paper.config), paper.keys)["main"]
    rows = tables.result_rows(paper, keys)
    lie, base = R + "grpo_lie", R + "grpo"
    for bench in ("aime24", "math500"):
        got = csv_row(rows, lie, bench)
        se = 100 * sd_over_root(list(per_problem(paper.config, lie, bench).values()))
        assert got["ours_se_pct"] == pytest.approx(se)
        noise = resampled(paper.config, lie, bench)  # the paper's run: another re-sampling of the model
        assert got["diff_se_pct"] == pytest.approx(2**0.5 * (noise if noise is not None else se))
        assert (noise is None) == (bench == "math500")  # one sample a problem: √2 · SE(ours)
        assert got["diff_inside_noise"] == (abs(got["diff_pct"]) <= 1.96 * got["diff_se_pct"])
        gain = csv_row(rows, lie, bench, versus=base)
        a, b = per_problem(paper.config, lie, bench), per_problem(paper.config, base, bench)
        assert gain["ours_pct"] == pytest.approx(100 * (sum(a.values()) - sum(b.values())) / 2)
        assert gain["ours_se_pct"] == pytest.approx(100 * sd_over_root([a[i] - b[i] for i in a]))  # paired
        paper_gain = paper.paper.main_value(lie, bench) - paper.paper.main_value(base, bench)
        assert gain["paper_pct"] == pytest.approx(paper_gain)
        both = [resampled(paper.config, k, bench) for k in (lie, base)]
        expected = 2**0.5 * (gain["ours_se_pct"] if None in both else (both[0] ** 2 + both[1] ** 2) ** 0.5)
        assert gain["diff_se_pct"] == pytest.approx(expected)
    domain = csv_row(rows, lie, "in_domain")
    parts = [
        csv_row(rows, lie, b)["ours_se_pct"] for b in ("math500", "olympiadbench", "amc", "aime24", "aime25")
    ]
    assert domain["ours_se_pct"] == pytest.approx(sum(p * p for p in parts) ** 0.5 / 5)
    # Δ with the paper's average: each benchmark's own noise (re-sampling where k > 1), combined
    noises = [resampled(paper.config, lie, b) or csv_row(rows, lie, b)["ours_se_pct"] for b in IN]
    assert [resampled(paper.config, lie, b) is None for b in IN] == [True, True, False, False, False]
    assert domain["diff_se_pct"] == pytest.approx(2**0.5 * sum(n * n for n in noises) ** 0.5 / 5)
    gains = [(resampled(paper.config, lie, b) or 0) ** 2 + (resampled(paper.config, base, b) or 0) ** 2
             or csv_row(rows, lie, b, versus=base)["ours_se_pct"] ** 2 for b in IN]  # fmt: skip
    gain = csv_row(rows, lie, "in_domain", versus=base)
    assert gain["diff_se_pct"] == pytest.approx(2**0.5 * sum(gains) ** 0.5 / 5)
    # every Δ of the tables carries an interval; those inside the noise are marked
    main = rendered(paper, "main")
    lie_row = row(main, lie + " |").split("|")
    math_delta = lie_row[5].strip()  # MATH-500 Δ
    expected = csv_row(rows, lie, "math500")
    assert math_delta == tables.with_interval(expected["diff_pct"], expected["diff_se_pct"])
    assert math_delta.startswith("~") == expected["diff_inside_noise"] and "±" in math_delta
    assert row(main, f"{lie} − {base}").startswith(f"| {lie} − {base} (15 vs 10 epochs) | GRPO+LIE − GRPO |")
    assert f"| {R}gspo_lie − {R}gspo (15 vs 10 epochs) |" in main and "grpo-clip-higher_lie − " in main
    assert "~: inside the noise" in main and "±: the 95% interval" in main


def test_footnotes_say_the_ood_inputs_the_thinking_switch_and_the_checkpoint_selection():
    config = paper_config()
    config["training"]["eval_step"] = "best_val"
    config["evaluation"]["enable_thinking"] = {"qwen3-4b": None}
    data = report_data(config)
    main, families = rendered(data, "main"), rendered(data, "families")
    assert (
        "- Out-of-domain inputs are the project's: the authors' file, valid_ood_qwen3.parquet (LINs-lab/LIE "
        "1b3bb02, git blob 0b77e909), is in their public tree but was not in the offline snapshot" in main
    )
    assert (
        "gpqa-diamond: Idavidrein/gpqa gpqa_diamond train, 198 questions, options shuffled with seed 0; "
        "mmlu-pro: TIGER-Lab/MMLU-Pro test, 12032 questions" in main
    )
    assert "whole test splits" not in main
    assert "saved checkpoint (every training.save_freq steps, here 50) with the best in-training" in main
    assert "It is not the authors' selection, which keeps a copy at every validation (every 10 steps)" in main
    assert "a selection on the test sets" in main
    assert "not passed (the template's default): qwen3-4b, octothinker-3b" in families
    data = report_data(paper_config())
    assert "Thinking at evaluation (evaluation.enable_thinking, else models.<m>.enable_thinking): off: qwen3-4b; " \
        "not passed (the template's default): octothinker-3b" in rendered(data, "families")  # fmt: skip


def test_an_older_summary_read_by_one_reader_shows_the_other_as_a_gap():
    config = paper_config()
    for mode, gap in (("robust", "authors"), ("authors", "robust")):
        data = report_data(copy.deepcopy(config), mode=mode)
        for summary in data.summaries.values():  # as `lie evaluate` wrote them before both readers
            for entry in [*summary["benchmarks"].values(), summary["in_domain"], summary["out_of_domain"]]:
                entry.pop("by_reader", None)
        rows = tables.result_rows(data, [B])
        shown, missing = csv_row(rows, B, "arc-c", mode), csv_row(rows, B, "arc-c", gap)
        assert shown["ours_pct"] == pytest.approx(
            100 * data.summaries[B]["benchmarks"]["arc-c"]["budgets"]["32768"]["avg@n:n=1"]
        )
        assert (
            missing["ours_pct"] is None
            and "not read by the" in missing["note"]
            and "rerun `lie evaluate`" in missing["note"]
        )


def test_a_difference_without_spread_gets_no_interval_and_the_epochs_note_parts_runs():
    assert tables.with_interval(0.0, 0.0) == "+0.0 (no spread)"
    assert tables.with_interval(1.0, 2.0) == "~+1.0±3.9"
    from lie.report.notes import epochs

    data = report_data(paper_config())
    (note,) = epochs(data, table_keys(Config.of(data.config), data.keys)["main"])
    assert "5: GSPO+LIE, continual stage 8k -> 12k; 10: GRPO / GRPO w/ higher clip / GSPO; 15: " in note.text


def test_legends_name_the_papers_runs_and_a_line_at_zero_stays_in_sight(paper):
    import matplotlib

    matplotlib.use("Agg")
    from lie.report.figures import _min_span, legend_name, new_figure

    assert legend_name(paper, R + "gspo_lie") == f"GSPO+LIE ({R}gspo_lie)"
    assert legend_name(paper, "qwen3-4b-base") == "Base (qwen3-4b-base)"
    ax = new_figure(3, 2).subplots()
    ax.plot([1, 2], [0.0, 0.0])  # an accuracy of 0 at every budget
    _min_span(ax, 5.0, floor=0.0)
    low, high = ax.get_ylim()
    assert low < 0.0 < high and high - low == pytest.approx(5.0)


def test_a_table_of_tiny_models_says_first_that_its_numbers_mean_nothing(paper):
    assert "Tiny models" not in rendered(paper, "main")
    config = paper_config()
    config["models"]["qwen3-4b-base"]["tiny"] = {"seed": 0, "vocab_size": 400, "hidden": 64, "layers": 2}
    notes = [line for line in rendered(report_data(config), "main").splitlines() if line.startswith("- ")]
    assert notes[0].startswith("- Tiny models (qwen3-4b-base: built locally by `lie base-model`")
    assert "they say nothing about LIE or the paper" in notes[0]


def test_the_caption_explains_only_the_columns_and_rows_the_table_has(paper):
    keys = table_keys(Config.of(paper.config), paper.keys)["main"]
    full = tables._caption(paper, keys, paper=True, gains=True, readers=True)
    assert "Δ = ours − paper" in full and "beside the paper's gain" in full and "re-sampling SE" in full
    # which target each interval covers, and what none includes
    assert "Ours and a gain (paired, problem by problem) take the problems as a sample of their kind" in full
    assert "on these problems, fixed, where a problem has k > 1 samples" in full
    assert "combined over a domain average" in full and "the right one on the out-of-domain inputs" in full
    assert "No interval includes training again with another seed." in full
    bare = tables._caption(paper, keys, paper=False, gains=False, readers=False)
    assert "No paper column" in bare and "Δ" not in bare and "A − B" not in bare and "(A-J)" not in bare
    assert "main" in table_keys(Config.of(paper.config), paper.keys) and "Δ = ours − paper" in rendered(
        paper, "main"
    )


def test_the_tables_of_one_reader_say_which(paper):
    rows = tables.tts_rows(paper)
    said = "multiple choice read by the robust reader (evaluation.choice_grading)"
    assert {r["note"] for r in rows if r["bench"] in ("gpqa-diamond", "out_of_domain")} == {said}
    assert {r["note"] for r in rows if r["bench"] in ("math500", "in_domain")} == {""}
    authors = report_data(paper_config(), mode="authors")
    assert tables.main_reader(authors) == said.replace("robust", "authors")


def test_the_footnotes_say_how_prompts_are_tokenized_and_which_weights_float(paper):
    families, main = rendered(paper, "families"), rendered(paper, "main")
    for table in (families, main):
        assert (
            "- Prompt tokens: the chat template's text tokenized as training tokenizes it (verl 0.9.1's"
            in table
        )
        assert "their prompts hold one BOS more than ours" in table
    octo = row(families, "octothinker-3b_deepmath-5k_gspo ")
    (number,) = [n for n in octo.split("|")[1].split("[")[1].rstrip("] ").split(",")
                 if "OctoThinker/OctoThinker-3B-Long-Base at revision 'main', not a commit" in footnote(families, n)]  # fmt: skip
    assert "so its weights float" in footnote(families, number)
    assert "not a commit" not in main  # every Qwen model is pinned to a commit
    pinned = copy.deepcopy(paper_config())
    pinned["models"]["octothinker-3b"]["revision"] = "0123456789abcdef0123456789abcdef01234567"
    assert "not a commit" not in rendered(report_data(pinned), "families")


def test_gain_rows_say_which_epochs_they_compare_and_the_equal_steps_switch_says_its_own():
    lie, base = R + "gspo_lie", R + "gspo"
    data = report_data(paper_config())
    data.steps.update({lie: 2025, base: 1350})
    main = rendered(data, "main")
    assert row(main, f"{lie} − {base}").startswith(
        f"| {lie} − {base} (15 vs 10 epochs, steps 2025 vs 1350) |"
    )
    assert (
        "a 15-epoch LIE run against a 10-epoch baseline, not equal steps (evaluation.equal_steps: false)"
        in main
    )
    assert (
        f"{lie}: after 15 epochs, step 2025; " in main
        and f"{R}grpo: after 10 epochs, step not recorded" in main
    )
    config = paper_config()
    config["evaluation"]["equal_steps"] = True
    config["runs"] = [lie, base, R + "grpo", R + "grpo_lie"]  # the continual stage would start from it
    data = report_data(config)
    data.steps.update({lie: 1350, base: 1350})
    main = rendered(data, "main")
    assert row(main, f"{lie} − {base}").startswith(
        f"| {lie} − {base} (10 vs 10 epochs, steps 1350 vs 1350) |"
    )
    assert (
        "a LIE run's checkpoint after its baseline's epochs, equal steps (evaluation.equal_steps: true)"
        in main
    )
    assert (
        f"{lie}: after 10 of 15 epochs, step 1350" in main and f"{base}: after 10 epochs, step 1350" in main
    )
    assert "a LIE run's after its baseline's epochs (evaluation.equal_steps)" in main


def test_no_cell_prints_minus_zero():
    assert tables.fmt(-0.04) == "0.0" and tables.fmt(-0.04, sign=True) == "+0.0"
    assert tables.fmt(-0.06, sign=True) == "-0.1" and tables.fmt(0.0004, 3) == "0.000"
    assert tables.with_interval(-0.04, 1.0) == "~+0.0±2.0" and tables.with_interval(-0.04, None) == "+0.0"


def test_the_other_tables_list_base_models_first_and_name_their_files(paper):
    from lie.report.inputs import EvalAnalysis

    data = copy.copy(paper)
    data.evals = {k: EvalAnalysis() for k in data.keys}
    data.steps = {R + "gspo_lie": 2025}
    bases = [k for k in data.keys if k not in data.config.experiments]
    assert bases and data.keys[0] not in bases  # runs come first in the evaluated keys
    for table in (tables.length_table(data, tables.length_rows(data)), tables.behaviour_table(data),
                  tables.diversity_table(data)):  # fmt: skip
        assert [r[0] for r in table.rows[: len(bases)]] == bases
        assert table.notes[-1].startswith("Files: ") and f"{R}gspo_lie 2025; " in table.notes[-1]
    assert (
        tables.length_rows(data)[0]["key"] == bases[0] and tables.behaviour_rows(data)[0]["key"] == bases[0]
    )
