"""The third registration (docs/study/preregistration-v3.md) through the code `make study` runs: its config
holds the registered numbers, the forced-depth probe writes the full depth before any answer, the gates
read their bounds, and the report gives the primary test the only verdict, in the registration's words
(tests/study_pipeline.py's shrunken run, read under a v3 study section; those that read it are make test-all's,
as in tests/test_study.py: the study is closed)."""

from __future__ import annotations

import copy
import csv
import json
import shutil
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from small import write_config
from study_pipeline import BASES, STUDY_V3, pipeline, study_config, v3_pipeline

from lie.config import Config
from lie.core.errors import LieError

pytestmark = pytest.mark.slow


def _csv(path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_the_config_holds_the_registered_design(tmp_path):
    from lie.config import load_config
    from lie.formats.rows import ground_truth, prompt_messages, read_rows
    from lie.stages.data.build import build_dataset
    from lie.study.spec import study_spec
    from lie.tasks.chain import parse_question

    config = study_config(STUDY_V3)
    spec = study_spec(Config.of(config))
    assert spec.registration == 3 and [c.name for c in spec.conditions] == ["deep"]
    deep = spec.conditions[0]
    assert deep.depths == (6, 7) and deep.base_models == ("tiny-v3-m0", "tiny-v3-m1")
    pairs = Counter((config["experiments"][r]["model"], config["experiments"][r]["seed"]) for r in deep.runs)
    assert len(pairs) == 24 and set(pairs.values()) == {2}  # 2 models x 12 seeds, one run per arm
    assert {config["experiments"][r]["data"] for r in deep.runs} == {"chain-strong-train"}
    third = spec.third
    assert (third.forced_n, spec.probe_n, third.run_samples) == (4, 16, 20 * 8 * 8)
    assert (third.step_accuracy, third.full_depth_accuracy, third.max_right_per_run) == (0.85, 0.3, 3)
    assert (third.binding_median, third.alpha, third.smallest_effect) == (1, 0.05, 0.05)
    v2 = study_config()
    for name in ("tiny-v3-m0", "tiny-v3-m1"):  # v2's models but the stop probability
        mine, theirs = config["models"][name], v2["models"][name.replace("-v3", "")]
        assert mine["tiny"] == theirs["tiny"] and mine["sft"]["stop_prob"] == 0.7
        assert {k: v for k, v in mine["sft"].items() if k != "stop_prob"} == {
            k: v for k, v in theirs["sft"].items() if k != "stop_prob"
        }
    for key in ("reward", "reflen", "training", "prompt", "algorithms"):
        assert config[key] == v2[key], key
    assert config["sft_cache"] == v2["sft_cache"]  # v2's and v3's models share the full-solution state
    # only the 212 test problems of depth 6-7 of v2's test set are generated (item 4 of issue 36)
    assert config["evaluation"]["benchmarks"] == ["chain-test-deep"] and spec.bench == "chain-test-deep"
    config["outdir"] = str(tmp_path)
    cfg = load_config(write_config(tmp_path / "v3.yaml", config))
    deep = build_dataset(Config.of(cfg), "chain-test-deep", str(tmp_path / "deep.parquet"), progress=False)
    full = build_dataset(Config.of(cfg), "chain-test", str(tmp_path / "full.parquet"), progress=False)
    assert (deep["rows"]["written"], full["rows"]["written"]) == (212, 400)
    rows = read_rows(tmp_path / "deep.parquet", ("prompt", "reward_model"), only=True)
    everything = {ground_truth(r, "full") + prompt_messages(r, "full")[0]["content"]
                  for r in read_rows(tmp_path / "full.parquet", ("prompt", "reward_model"), only=True)}  # fmt: skip
    depths = Counter(parse_question(prompt_messages(r, "deep")[0]["content"]).depth for r in rows)
    assert depths == {6: 103, 7: 109}  # the registration's counts
    assert all(ground_truth(r, "d") + prompt_messages(r, "d")[0]["content"] in everything for r in rows)


@pytest.mark.heavy
def test_the_forced_depth_probe_writes_the_full_depth_before_any_answer():
    from lie.study.paths import StudyPaths
    from lie.study.responses import read_responses

    p = v3_pipeline()
    paths = StudyPaths(p.layout)
    for model in BASES:
        forced = read_responses(paths.probe_responses(model, forced=True))
        natural = read_responses(paths.probe_responses(model))
        with open(paths.probe_generations(model, True), encoding="utf-8") as handle:
            lines = {(g["index"], g["sample"]): g for g in map(json.loads, handle)}
        assert len(forced) == 12 * 2  # 12 problems x forced_probe.n
        for r in forced:
            text = lines[(r["index"], r["sample"])]["text"]
            if r["depth_written"] < r["depth_needed"]:  # only the token budget stops a sample short
                assert "\\" not in text and lines[(r["index"], r["sample"])]["finish_reason"] == "length", (
                    text
                )
        # the rule bites: the forced samples write the full depth more often than the natural ones
        share = sum(r["depth_written"] >= r["depth_needed"] for r in forced) / len(forced)
        natural_share = sum(r["depth_written"] >= r["depth_needed"] for r in natural) / len(natural)
        assert share > natural_share, (model, share, natural_share)
    from lie.stages.generate import manifest_path

    forced_manifest = json.loads(manifest_path(paths.probe_generations(BASES[0], True)).read_text())
    natural_manifest = json.loads(manifest_path(paths.probe_generations(BASES[0])).read_text())
    assert (
        forced_manifest["sampling_rule"].startswith("forced-depth")
        and "sampling_rule" not in natural_manifest
    )


@pytest.mark.heavy
def test_the_gates_read_one_sided_bounds_on_both_probes(tmp_path, capsys, caplog):
    """The shrunken run's supervised models (300 steps) write no right step: G1 and G2 fail on their lower
    bounds, G3 on its upper bound at the registered 3 a run; the tables are written either way."""
    from lie.cli import main
    from lie.study.paths import StudyPaths

    p = v3_pipeline()
    assert main(["study-gates", "--config", str(p.cfg)]) == 0  # a gate stop is an outcome: the tables stay
    err = caplog.text
    assert "a gate on the supervised models failed (change only the supervised stage): tiny-m0: G1" in err
    assert "G3 right samples per run, upper bound" in err
    assert "the registration stops here, before any RL run, without a verdict" in err
    assert main(["study-gates", "--config", str(p.cfg), "--outcome"]) == 3
    assert "stopped at the registered gates" in capsys.readouterr().out
    md, csv_path = StudyPaths(p.layout).gates
    rows = {r["base_model"]: r for r in _csv(csv_path)}
    assert set(rows) == set(BASES) and all(r["passed"] == "False" for r in rows.values())
    for r in rows.values():
        n = int(r["problems"])
        assert int(r["forced_samples"]) == 2 * n and int(r["natural_samples"]) == 4 * n  # the two probes' n
        assert float(r["step_low"]) <= float(r["step_accuracy"]) and float(r["full_low"]) <= float(
            r["full_depth_accuracy"]
        )
        assert float(r["right_per_run_high"]) > 1280 * int(r["natural_right"]) / int(r["natural_samples"])
        assert r["trap_gate"] == str(float(r["right_per_run_high"]) <= 3)
    text = md.read_text()
    assert "preregistration-v3.md" in text and text.count("**FAIL**") >= 2
    config = copy.deepcopy(p.config)
    config["study"]["third"]["max_right_per_run"] = 1e9  # G3 opened: only G1 and G2 are named
    caplog.clear()
    assert main(["study-gates", "--config", str(write_config(tmp_path / "open.yaml", config))]) == 0
    err = caplog.text
    assert "tiny-m0: G1" in err and "G3" not in err


@pytest.mark.heavy
def test_the_report_gives_only_the_primary_test_a_verdict():
    from lie.cli import main
    from lie.study.decision import INCONCLUSIVE

    p = v3_pipeline()
    assert main(["study-gates", "--config", str(p.cfg)]) == 0  # gates failed: an outcome
    assert main(["study-report", "--config", str(p.cfg)]) == 0
    tables = p.layout.tables
    tests = _csv(tables / "study_tests.csv")
    assert [r["test"] for r in tests] == ["primary", "model:tiny-m0", "model:tiny-m1", "binding"]
    primary, m0, m1, check = tests
    verdicts = ("supported", "supported, below 0.05", "refuted at 0.05", INCONCLUSIVE, "no result")
    assert primary["verdict"].startswith(verdicts) and primary["n"] == "3"
    assert m0["verdict"] == m1["verdict"] == "no verdict: a readout" and (m0["n"], m1["n"]) == ("2", "1")
    assert check["verdict"] in ("holds", "fails") and check["n"] == "3"
    if check["verdict"] == "fails" and primary["p"]:
        assert primary["verdict"].endswith("; the trap did not bind")
    # the binding check reads the GRPO runs' right training samples, as the steps table counts them
    steps = _csv(tables / "study_steps.csv")
    right = Counter()
    for r in steps:
        if r["arm"] == "grpo":
            right[r["run"]] += round(float(r["accuracy"]) * int(r["samples"]))
    ordered = sorted(right.values())
    assert float(check["estimate"]) == ordered[1]  # the median of 3 runs
    # no first-registration verdict anywhere: the paired table's one registered row carries none
    paired = [r for r in _csv(tables / "study_paired.csv") if r.get("registered")]
    assert [r["registered"] for r in paired] == ["primary"] and not paired[0].get("verdict")
    summary = (tables / "study_summary.md").read_text()
    assert "## The registered test (docs/study/preregistration-v3.md)" in summary
    assert "first registration" not in summary and summary.count("**no verdict: a readout**") == 2
    assert "right training samples per run" in summary


@pytest.mark.heavy
def test_pooling_adds_another_machines_pairs_and_grpo_runs():
    from lie.cli import main

    p = v3_pipeline()
    assert main(["study-gates", "--config", str(p.cfg)]) == 0  # gates failed: an outcome
    assert main(["study-report", "--config", str(p.cfg)]) == 0  # this machine's tables first
    other = (
        Path(tempfile.mkdtemp(prefix="lie-study-pool-")) / "other"
    )  # another machine's: a copy of this one
    for part in ("tables", "runs"):
        shutil.copytree(p.layout.root / part, other / part)
    assert main(["study-report", "--config", str(p.cfg), "--pool", str(other)]) == 0
    pooled = _csv(p.layout.tables / "study_tests_pooled.csv")
    assert pooled[0]["test"] == "primary" and pooled[0]["n"] == "6" and pooled[0]["machines"] == "2"
    assert pooled[-1]["test"] == "binding" and pooled[-1]["n"] == "6"


def test_a_config_with_both_registrations_or_a_bad_third_section_is_one_line():
    from lie.study.spec import study_spec

    config = study_config(STUDY_V3)
    both = copy.deepcopy(config)
    both["study"]["tests"] = study_config()["study"]["tests"]
    with pytest.raises(LieError, match="give tests .* or third .*, not both"):
        study_spec(Config.of(both))
    bad = copy.deepcopy(config)
    bad["study"]["third"]["alpha"] = 1.5
    with pytest.raises(LieError, match=r"study.third.alpha must be in \(0, 1\)"):
        study_spec(Config.of(bad))
    bad["study"]["third"] = {**config["study"]["third"], "confidence": 0.9}
    with pytest.raises(LieError, match=r"study.third: unknown key\(s\) confidence"):
        study_spec(Config.of(bad))
    assert pipeline  # the shrunken run is shared with tests/test_study.py


def test_the_forced_depth_rule_bans_answers_and_words_until_the_depth_is_written(tmp_path):
    from lie.stages.tiny import build_tokenizer
    from lie.study.stages.probe import _force, forced_depth, run_probe
    from lie.tasks import chain

    problem = chain.generate(1, 5, 2, 2)[0]
    question = problem.question()
    tok = build_tokenizer([question, problem.solution(), "The answer is \\boxed{12}. Check: 1 + 2 = 3."], 300)
    eos = [tok.eos_token_id]
    rule = forced_depth(tok, eos)(tok(question, add_special_tokens=False)["input_ids"])
    steps = problem.solution().split(". ")
    one, both = steps[0] + ". ", ". ".join(steps[:2]) + ". "
    banned = set(rule(tok(one, add_special_tokens=False)["input_ids"]))
    texts = {i: tok.decode([i]) for i in range(len(tok))}
    assert tok.eos_token_id in banned
    assert all(i in banned for i, t in texts.items() if "\\" in t or any(c.isalpha() for c in t))
    assert not any(i in banned for i, t in texts.items() if t.strip().isdigit() or t.strip() in "=+-*.")
    assert rule(tok(both, add_special_tokens=False)["input_ids"]) == ()  # the depth is written: free again
    with pytest.raises(LieError, match="the forced-depth probe needs arithmetic-chain prompts"):
        forced_depth(tok, eos)(tok("What is 2 + 3?", add_special_tokens=False)["input_ids"])
    with pytest.raises(LieError, match="samples with the hf engine only .*engines.generate: hf"):
        _force(object())
    with pytest.raises(
        LieError, match="--forced is the third registration's probe: the config has no study.third"
    ):
        run_probe(
            Config.of(study_config()), "tiny-m0", tmp_path / "d.parquet", tmp_path / "g.jsonl", forced=True
        )
