"""``lie report`` on a real pipeline run: every table and figure, beside the paper, all or none."""

from __future__ import annotations

import csv
import io
import json
import math
import shutil

import pytest
from report_pipeline import BASE, RUNS, fresh_copy, reported
from small import REPO

from lie.analysis.behaviours import load_classifier
from lie.cli import main
from lie.config import Config
from lie.core.errors import LieError
from lie.report import build
from lie.report.build import build_report, report_paths

pytestmark = pytest.mark.slow
GRPO, GSPO_LIE, LOOP = RUNS
KEYS = [*RUNS, BASE]


@pytest.fixture(scope="module")
def report():
    return reported()  # shared with tests/test_report_snakemake.py


def read_csv(path):
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))


def summary(copy, key):
    return json.loads(copy.layout.summary(key).read_text())


def test_every_declared_output_is_written_and_nothing_else_is_left(report):
    paths = report_paths(report.layout)
    assert all(p.exists() and p.stat().st_size > 0 for p in paths)
    assert not list(report.layout.root.glob(".report-*"))
    from matplotlib.image import imread

    for name, shape in (
        ("tts.png", (506, 1210)),
        ("dynamics.png", (1100, 1430)),
        ("lengths.png", (242, 924)),
    ):
        image = imread(report.layout.figures / name)
        assert image.shape[:2] == shape  # figure size x dpi: a real image, not an empty file


def test_every_file_the_issues_name_is_written(report):
    """The Snakemake rule declares report_paths() (common.smk's report_outputs() returns it)."""
    names = {str(p.relative_to(report.layout.root)) for p in report_paths(report.layout)}
    expected = {f"tables/{t}.{e}" for t in ("main", "families") for e in ("md", "csv", "tex", "html")}
    expected |= {"tables/tts.csv", "figures/tts.png", "figures/dynamics.png", "tables/dynamics.csv"}
    expected |= {"tables/lengths.md", "tables/lengths.csv", "tables/lengths.html", "figures/lengths.png"}
    expected |= {f"tables/{n}.{e}" for n in ("behaviours", "diversity") for e in ("md", "csv", "html")}
    assert names == expected
    assert all(p.stat().st_size > 0 for p in report_paths(report.layout))
    source = (REPO / "workflow" / "rules" / "common.smk").read_text(encoding="utf-8")
    assert "report_paths(LAYOUT)" in source


def test_main_csv_holds_the_summaries_the_paper_and_the_differences(report):
    main_rows = read_csv(report.layout.tables / "main.csv")
    families = read_csv(report.layout.tables / "families.csv")
    # the paper's order: in-domain, ID avg, out-of-domain (under the authors' reader, then ours), OOD avg
    order = [("math500", ""), ("in_domain", ""), ("arc-c", "authors"), ("arc-c", "robust"),
             ("out_of_domain", "authors"), ("out_of_domain", "robust")]  # fmt: skip
    assert [(r["key"], r["bench"], r["reader"]) for r in main_rows] == [
        (k, b, r) for k in (BASE, GRPO, GSPO_LIE) for b, r in order
    ]
    assert [(r["key"], r["bench"], r["reader"]) for r in families] == [(LOOP, b, r) for b, r in order]
    assert {r["table"] for r in main_rows} == {"main"} and {r["table"] for r in families} == {"families"}
    rows = main_rows + families
    paper = {(GSPO_LIE, "math500"): 88.4, (GSPO_LIE, "arc-c"): 91.4, (GRPO, "math500"): 80.4,
             (GRPO, "arc-c"): 84.6, (BASE, "math500"): 66.0, (BASE, "arc-c"): 66.9}  # fmt: skip
    for row in rows:
        s = summary(report, row["key"])
        assert row["budget"] == "48"
        if row["bench"] in s["benchmarks"]:
            entry = s["benchmarks"][row["bench"]]
            assert (
                row["metric"] == entry["avg@n"] == ("avg@n:n=4" if row["bench"] == "math500" else "avg@n:n=1")
            )
            budgets = entry["by_reader"][row["reader"]]["budgets"] if row["reader"] else entry["budgets"]
            assert float(row["ours_pct"]) == pytest.approx(100 * budgets["48"][entry["avg@n"]])
        else:
            domain = s[row["bench"]]
            budgets = domain["by_reader"][row["reader"]]["budgets"] if row["reader"] else domain["budgets"]
            assert float(row["ours_pct"]) == pytest.approx(100 * budgets["48"]["avg"])
            assert row["paper_pct"] == "" and row["metric"] == "avg@n (mean over benchmarks)"
        assert float(row["ours_se_pct"]) >= 0 and row["versus"] == ""  # from scores.jsonl
        expected = paper.get((row["key"], row["bench"]))
        if expected is None:
            assert row["paper_pct"] == row["diff_pct"] == ""
        else:
            assert float(row["paper_pct"]) == expected
            assert float(row["diff_pct"]) == pytest.approx(float(row["ours_pct"]) - expected)
            assert float(row["diff_se_pct"]) == pytest.approx(2**0.5 * float(row["ours_se_pct"]))
            assert row["diff_inside_noise"] in ("True", "False")
    loop_arc = [r for r in rows if (r["key"], r["bench"]) == (LOOP, "arc-c")]
    assert [float(r["ours_pct"]) for r in loop_arc] == [50.0, 50.0]  # it boxes A; half the items' gold is A
    # the paper's in-domain average is over five benchmarks, ours over one: no comparison
    base_id = next(r for r in rows if (r["key"], r["bench"]) == (BASE, "in_domain"))
    assert base_id["note"] == "paper's average is over other benchmarks"


def test_main_md_and_tex_show_the_same_cells(report):
    md = (report.layout.tables / "main.md").read_text()
    lines = [line for line in md.splitlines() if line.startswith("| ")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    assert header == ["model", "paper row", "MATH-500 ours", "MATH-500 paper", "MATH-500 Δ", "ID avg",
                      "ARC-c ours (authors)", "ARC-c paper", "ARC-c Δ", "ARC-c robust", "OOD avg (authors)",
                      "OOD avg robust"]  # fmt: skip
    cells = {
        line.split("|")[1].strip(): [c.strip() for c in line.strip("|").split("|")] for line in lines[1:]
    }
    assert list(cells) == [BASE, GRPO, GSPO_LIE]  # Base first, as the paper
    rows = {(r["key"], r["bench"], r["reader"]): r for r in read_csv(report.layout.tables / "main.csv")}
    math, arc = rows[(GSPO_LIE, "math500", "")], rows[(GSPO_LIE, "arc-c", "authors")]
    deltas = [f"{float(r['diff_pct']):+.1f}±{1.96 * float(r['diff_se_pct']):.1f}" for r in (math, arc)]
    deltas = [("~" if r["diff_inside_noise"] == "True" else "") + d for r, d in zip((math, arc), deltas)]
    # every problem alike (all wrong at 48 tokens): a Δ without spread has no interval, not ±0.0
    deltas = [f"{float(r['diff_pct']):+.1f} (no spread)" if float(r["diff_se_pct"]) == 0 else d
              for r, d in zip((math, arc), deltas)]  # fmt: skip
    ours = [f"{float(rows[(GSPO_LIE, b, r)]['ours_pct']):.1f}" for b, r in
            (("math500", ""), ("in_domain", ""), ("arc-c", "authors"), ("arc-c", "robust"))]  # fmt: skip
    assert cells[GSPO_LIE][1:10] == [
        "GSPO+LIE",
        ours[0],
        "88.4",
        deltas[0],
        ours[1],
        ours[2],
        "91.4",
        deltas[1],
        ours[3],
    ]
    assert cells[BASE][1] == "Base"
    assert "at 48 tokens" in md and "our largest budget is 48 tokens, the paper's 32768" in md
    families = (report.layout.tables / "families.md").read_text()
    loop = next(line for line in families.splitlines() if line.startswith(f"| {LOOP}"))
    assert [c.strip() for c in loop.strip("|").split("|")][1:] == [
        "0.0",
        "0.0",
        "50.0",
        "50.0",
        "50.0",
        "50.0",
    ]
    tex = (report.layout.tables / "main.tex").read_text()
    assert r"\multicolumn{3}{c}{MATH-500}" in tex and r"\cmidrule(lr){3-5}" in tex
    assert (
        rf"qwen3-4b-base\_dapo\_gspo\_lie & GSPO+LIE & {ours[0]} & 88.4 & "
        + deltas[0].replace("~", r"\textasciitilde{}").replace("±", r"$\pm$")
        in tex
    )
    body = tex.split("\\midrule\n")[1].split("\\bottomrule")[0].strip().splitlines()
    assert len(body) == 3 and all(row.count("&") == 11 for row in body)


def test_footnotes_state_the_assumptions_and_the_grading_mode(report):
    md = (report.layout.tables / "main.md").read_text()
    assert "- Checkpoints: the paper does not say which checkpoint its numbers come from" in md
    assert "ours are each run's final checkpoint (training.eval_step)" in md
    steps = {run: json.loads(report.layout.run_dir(run).final_json.read_text())["step"] for run in RUNS}
    assert f"{GRPO}: after 1 epoch, step {steps[GRPO]}" in md  # the evaluated step, from final.json
    assert "- Epochs (experiments.<run>.epochs" in md and "1: GRPO / GSPO+LIE." in md
    assert (
        "- Multiple choice (arc-c) graded in mode robust (evaluation.choice_grading); every table shows" in md
    )
    assert (
        "- Out-of-domain inputs are the project's" in md
        and "These columns use arc-c: synthetic, 4 questions" in md
    )
    assert (
        "- Thinking at evaluation (evaluation.enable_thinking, else models.<m>.enable_thinking): not passed"
        in md
    )
    families = (report.layout.tables / "families.md").read_text()
    assert "1: loop_gspo_lie." in families and "GRPO" not in families


def test_lengths_are_the_summaries_mean_tokens(report):
    rows = read_csv(report.layout.tables / "lengths.csv")
    assert {(r["key"], r["bench"], r["budget"]) for r in rows} == {
        (k, b, budget) for k in KEYS for b in ("math500", "arc-c") for budget in ("6", "48")
    }
    for r in rows:
        expected = summary(report, r["key"])["benchmarks"][r["bench"]]["mean_tokens"][r["budget"]]
        assert float(r["mean_tokens"]) == pytest.approx(expected)
    loop = {(r["bench"], r["budget"]): float(r["mean_tokens"]) for r in rows if r["key"] == LOOP}
    assert loop == {
        ("math500", "6"): 6.0,
        ("math500", "48"): 48.0,
        ("arc-c", "6"): 6.0,
        ("arc-c", "48"): 48.0,
    }
    md = (report.layout.tables / "lengths.md").read_text()
    assert f"| {LOOP} | 48 | 48 |" in md and "| model | MATH-500 | ARC-c |" in md


def test_tts_csv_has_every_budget(report):
    rows = read_csv(report.layout.tables / "tts.csv")
    loop = {(r["bench"], r["budget"]): r for r in rows if r["key"] == LOOP}
    assert float(loop[("arc-c", "6")]["accuracy"]) == 0.0  # 6 tokens cut the phrase before its answer
    assert float(loop[("arc-c", "48")]["accuracy"]) == 0.5
    assert float(loop[("out_of_domain", "48")]["accuracy"]) == 0.5
    assert {(r["key"], r["bench"]) for r in rows} == {
        (k, b) for k in KEYS for b in ("math500", "arc-c", "in_domain", "out_of_domain")
    }
    assert all(r["paper"] == "" for r in rows)  # the paper's curves are at 4k-32k tokens


def test_behaviours_count_the_generations_sentences(report):
    classifier = load_classifier()
    rows = read_csv(report.layout.tables / "behaviours.csv")
    for key in KEYS:
        texts = [json.loads(line)["text"] for bench in ("math500", "arc-c")
                 for line in report.layout.generations(key, bench).read_text().splitlines()]  # fmt: skip
        mine = {r["behaviour"]: r for r in rows if r["key"] == key and r["bench"] == "all"}
        for name in classifier.names:
            assert int(mine[name]["count"]) == sum(classifier.count(t)[name] for t in texts)
            assert int(mine[name]["responses"]) == len(texts) == 6 * 4 + 4
    loop = {r["behaviour"]: r for r in rows if r["key"] == LOOP and r["bench"] == "all"}
    assert int(loop["backtracking"]["count"]) == 28 * 6  # "Wait, ..." six times in 48 tokens
    assert int(loop["backtracking"]["responses_with"]) == 28
    assert float(loop["backtracking"]["per_100"]) == 600.0
    gspo = {r["behaviour"]: r for r in rows if r["key"] == GSPO_LIE and r["bench"] == "all"}
    assert gspo["backtracking"]["paper"] == "121" and gspo["verification"]["paper"] == ""
    md = (report.layout.tables / "behaviours.md").read_text()
    assert f"| {LOOP} | 28 | 168 (600.0) | 0 (0.0) | 0 (0.0) | 0 (0.0) | — |" in md
    assert "| backtracking (paper) |" in md and f"| {GSPO_LIE} | 28 |" in md


def test_diversity_tables_tell_the_looping_run_apart(report):
    rows = read_csv(report.layout.tables / "diversity.csv")
    value = {(r["key"], r["source"], r["bench"], r["phase"], r["metric"]): r["value"] for r in rows}
    assert float(value[(LOOP, "train", "rollouts", "last", "group_overlap:n=10")]) == 1.0
    assert float(value[(LOOP, "train", "rollouts", "last", "group_distinct:n=10")]) < 0.1
    assert float(value[(LOOP, "eval", "math500", "all", "group_overlap:n=10")]) == 1.0
    assert float(value[(LOOP, "train", "rollouts", "first", "r_context:n=10")]) < 0.1
    assert not any(k == BASE and s == "train" for k, s, *_ in value)  # a base model has no training
    assert not any(b == "arc-c" for _, _, b, *_ in value)  # one sample a problem: no group
    md = (report.layout.tables / "diversity.md").read_text()
    assert f"| {BASE} | — | — | — |" in md
    assert "| math500 distinct | math500 overlap |" in md


def test_every_table_lists_base_models_first_and_names_its_files_and_steps(report):
    steps = {run: json.loads(report.layout.run_dir(run).final_json.read_text())["step"] for run in RUNS}
    for name in ("main", "families", "lengths", "behaviours", "diversity"):
        md = (report.layout.tables / f"{name}.md").read_text()
        lines = [line for line in md.splitlines() if line.startswith("| ")]
        assert lines[0].startswith("| model |")
        rows = [line.split("|")[1].strip() for line in lines[1:]]
        keys = [k for k in KEYS if any(r.split(" ")[0] == k for r in rows)]
        if BASE in keys:
            assert rows[0] == BASE, (name, rows)  # as the paper's Table 1
        (files,) = [line for line in md.splitlines() if line.startswith("- Files: ")]
        assert f"under {report.layout.root}." in files
        for run in (k for k in keys if k in RUNS):
            assert f"{run} {steps[run]}" in files, (name, files)


def test_dynamics_csv_has_a_row_per_run_and_step(report):
    rows = read_csv(report.layout.tables / "dynamics.csv")
    assert [(r["run"], r["step"]) for r in rows] == [(run, str(s)) for run in RUNS for s in (1, 2, 3)]
    assert all(r["red_flagged"] == "1.0" for r in rows if r["run"] == LOOP)


def test_a_failure_leaves_no_output_that_looks_complete(tmp_path, monkeypatch):
    """A failure while rendering leaves the previous report whole (issue 21): nothing half-new, nothing lost."""
    copy = fresh_copy(tmp_path)
    build_report(Config.of(copy.config))
    paths = report_paths(copy.layout)
    assert all(p.exists() for p in paths)
    before = {p: p.read_bytes() for p in paths}

    def broken(data, path):
        path.write_bytes(b"\x89PNG half")
        raise RuntimeError("disk full")

    monkeypatch.setattr(build.figures, "dynamics_figure", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        build_report(Config.of(copy.config))
    assert {p: p.read_bytes() for p in paths} == before  # the previous report, not a half-new one
    assert not list(copy.layout.root.glob(".report-*"))


@pytest.mark.parametrize("fault", [OSError(18, "Invalid cross-device link"), KeyboardInterrupt()])
def test_a_move_that_fails_midway_puts_the_previous_report_back(tmp_path, monkeypatch, fault):
    """Issue 33 item 1: the new files go in one by one; a move that fails (another file system) or a
    Ctrl-C after some of them leaves every file of the previous report as it was, none deleted."""
    copy = fresh_copy(tmp_path)
    build_report(Config.of(copy.config))
    paths = report_paths(copy.layout)
    before = {p: p.read_bytes() for p in paths}
    for p in paths:  # so that a half-new report would show
        p.write_bytes(before[p] + b" old")
    before = {p: p.read_bytes() for p in paths}
    real, calls = build.os.replace, []

    def replace(src, dst):
        calls.append(dst)
        if len(calls) == 9:
            raise fault
        return real(src, dst)

    monkeypatch.setattr(build.os, "replace", replace)
    with pytest.raises(type(fault)):
        build_report(Config.of(copy.config))
    monkeypatch.setattr(build.os, "replace", real)
    assert {p: p.read_bytes() for p in paths if p.exists()} == before
    assert all(p.exists() for p in paths)
    left = [q.name for p in paths for q in p.parent.iterdir() if q.name.startswith(".")]
    assert not left and not list(copy.layout.root.glob(".report-*")), left


def test_a_report_file_that_became_a_folder_is_one_line_and_nothing_moves(tmp_path, capsys):
    copy = fresh_copy(tmp_path)
    build_report(Config.of(copy.config))
    paths = report_paths(copy.layout)
    before = {p: p.read_bytes() for p in paths}
    folder = paths[3]
    folder.unlink()
    folder.mkdir()
    (folder / "mine.txt").write_text("the user's")
    with pytest.raises(LieError, match=f"{folder} is a folder"):
        build_report(Config.of(copy.config))
    assert (folder / "mine.txt").read_text() == "the user's"
    assert {p: p.read_bytes() for p in paths if p != folder} == {
        p: b for p, b in before.items() if p != folder
    }


def test_a_report_file_the_user_linked_elsewhere_stays_a_link_and_its_target_gets_the_new_report(tmp_path):
    copy = fresh_copy(tmp_path)
    build_report(Config.of(copy.config))
    main = copy.layout.tables / "main.md"
    fresh = main.read_bytes()
    shared = tmp_path / "shared-drive" / "main.md"  # e.g. the table kept on a shared drive, linked in
    shared.parent.mkdir()
    shared.write_bytes(b"an older report")
    main.unlink()
    main.symlink_to(shared)
    build_report(Config.of(copy.config))
    assert main.is_symlink() and main.resolve() == shared.resolve()
    assert shared.read_bytes() == fresh
    assert not [q.name for q in shared.parent.iterdir() if q.name.startswith(".")]


def test_a_benchmark_missing_from_a_summary_is_a_marked_gap(tmp_path):
    from lie.engines.generation import load_tokenizer
    from lie.formats.graded import write_summary
    from lie.stages.evaluate import evaluate

    copy = fresh_copy(tmp_path)
    gens = [str(copy.layout.generations(BASE, "math500"))]  # as if arc-c had not been evaluated
    _, partial = evaluate(Config.of(copy.config), gens, load_tokenizer(str(copy.tiny)), progress=False)
    write_summary(partial, str(copy.layout.summary(BASE)))
    build_report(Config.of(copy.config))
    rows = {(r["key"], r["bench"]): r for r in read_csv(copy.layout.tables / "main.csv")}
    rows = {(r["key"], r["bench"], r["reader"]): r for r in read_csv(copy.layout.tables / "main.csv")}
    arc, ood = rows[(BASE, "arc-c", "authors")], rows[(BASE, "out_of_domain", "authors")]
    assert arc["ours_pct"] == "" and "not in" in arc["note"]
    assert ood["ours_pct"] == ""  # never an average of fewer benchmarks
    assert ood["note"] == "missing: arc-c; paper's average is over other benchmarks"
    md = (copy.layout.tables / "main.md").read_text()
    base = next(line for line in md.splitlines() if line.startswith(f"| {BASE} "))
    assert [c.strip() for c in base.strip("|").split("|")][5:] == ["0.0", "—", "66.9", "—", "—", "—", "—"]
    assert f"- OOD avg: missing: arc-c ({BASE})" in md
    lengths = (copy.layout.tables / "lengths.md").read_text()
    math = json.loads(copy.layout.summary(BASE).read_text())["benchmarks"]["math500"]["mean_tokens"]["48"]
    assert f"| {BASE} | {math:.0f} | — |" in lengths  # arc-c not evaluated: a gap


def _set_accuracy(copy, value) -> None:
    """The first benchmark's first avg@n of GRPO's summary set to ``value`` (written as JSON allows)."""
    path = copy.layout.summary(GRPO)
    summary = json.loads(path.read_text())
    budgets = next(iter(summary["benchmarks"].values()))["budgets"]
    cell = next(iter(budgets.values()))
    cell[next(k for k in cell if k.startswith("avg@n"))] = value
    path.write_text(json.dumps(summary))  # NaN and Infinity as Python's json writes them


def _first_metrics(copy, text: bytes) -> None:
    """GRPO's first metrics file with ``text`` in front of what it held."""
    path = sorted(copy.layout.run_dir(GRPO).metrics_dir.glob("*.jsonl"))[0]
    path.write_bytes(text + path.read_bytes())


def _rewrite_summary(copy, edit) -> None:
    """GRPO's summary replaced by ``edit(summary)`` (a new value, or the summary changed in place)."""
    path = copy.layout.summary(GRPO)
    summary = json.loads(path.read_text())
    changed = edit(summary)
    path.write_text(json.dumps(summary if changed is None else changed))


def _set_count(copy, value) -> None:
    path = copy.layout.summary(GRPO)
    summary = json.loads(path.read_text())
    next(iter(summary["benchmarks"].values()))["problems"] = value
    path.write_text(json.dumps(summary))


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda c: c.layout.summary(GRPO).unlink(), "summary.json is missing: run `lie evaluate` for"),
        (lambda c: c.layout.summary(BASE).write_text("{"), "summary.json cannot be read"),
        (lambda c: shutil.rmtree(c.layout.run_dir(GRPO).metrics_dir), "has no metrics"),
        # issue 33 item 6: a summary's values that no evaluation writes are refused, not rendered
        *[
            (lambda c, v=value: _set_accuracy(c, v), f"must be a number in [0, 1], got {shown}")
            for value, shown in [
                (math.nan, "nan"),
                (math.inf, "inf"),
                (-5.0, "-5.0"),
                (7.0, "7.0"),
                (True, "bool True"),
                ("0.5", "str '0.5'"),
            ]
        ],  # fmt: skip
        (lambda c: _set_count(c, -3), "must be a count (an integer >= 0), got -3"),
        # issue 33, report readers: a summary of the wrong shape (keys, budgets) is one line
        (lambda c: _rewrite_summary(c, lambda s: [s]), "no 'benchmarks' mapping"),
        (lambda c: _rewrite_summary(c, lambda s: s.pop("benchmarks") and None), "no 'benchmarks' mapping"),
        (lambda c: _rewrite_summary(c, lambda s: s.update(budgets="48")), "no 'budgets' list"),
        *[
            (
                lambda c, v=value: _rewrite_summary(c, lambda s: s.update(budgets=[v])),
                f"key 'budgets' must hold token budgets (integers >= 1), got {shown}",
            )
            for value, shown in [
                ("x", "str 'x'"),
                (None, "NoneType None"),
                (math.inf, "inf"),
                (True, "bool True"),
                (0, "0"),
                (4.5, "4.5"),
            ]
        ],  # fmt: skip
        (
            lambda c: _rewrite_summary(c, lambda s: s["benchmarks"].update(x=[1])),
            "key 'benchmarks.x' must be an object",
        ),
        # issue 33, report readers: a metrics file's garbage is one line, not a traceback
        (lambda c: _first_metrics(c, b"\xff\xfe\x00garbage\n{}\n"), ".jsonl line 1: not valid JSON"),
        (lambda c: _first_metrics(c, b"[" * 5000 + b"\n{}\n"), ".jsonl line 1: not valid JSON"),
        (
            lambda c: _first_metrics(c, b'{"step": ' + b"9" * 5000 + b"}\n{}\n"),
            ".jsonl line 1: not valid JSON",
        ),
    ],
)
def test_bad_inputs_stop_with_a_message_and_write_nothing(tmp_path, capsys, damage, message):
    copy = fresh_copy(tmp_path)
    damage(copy)
    assert main(["report", "--config", str(copy.cfg)]) == 2
    assert message in capsys.readouterr().err
    assert not [p for p in report_paths(copy.layout) if p.exists()]


def test_a_summary_of_other_budgets_is_stale(tmp_path):
    copy = fresh_copy(tmp_path)
    copy.config["evaluation"]["budgets"] = [6, 32]
    with pytest.raises(LieError, match="graded at budgets \\[6, 48\\], not at 32 .*run `lie evaluate`"):
        build_report(Config.of(copy.config))
