"""Reference lengths: the formula on the authors' files, ``lie reflen`` end to end on a tiny model,
and resuming after an interruption."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from conftest import data_file, full
from hubcache import repo_config

from lie.cli import main
from lie.config import Config
from lie.core.errors import LieError
from lie.engines.generation import Completion, HFEngine, SamplingSettings, sample_seed
from lie.formats.prompts import prompt_token_ids
from lie.formats.rows import read_metadata
from lie.stages.data.adapters import DAPO_PREFIX, DAPO_SUFFIX
from lie.stages.data.build import build_dataset
from lie.stages.reflen import (
    add_reference_lengths,
    reference_length,
    run_reflen,
    sample_lengths,
    settings_from_config,
)
from lie.stages.sample_shards import Draw, Prompt, shard_assignment


@pytest.mark.parametrize(
    "which", ["authors_dapo", "authors_deepmath", full("full_authors_dapo"), full("full_authors_deepmath")]
)
def test_formula_reproduces_every_authors_row(which, request):
    table = pq.read_table(request.getfixturevalue(which))
    settings = settings_from_config(Config.of(repo_config()))
    assert (settings.k, settings.offset, settings.cap) == (1, 1000, 9192)
    rows = table.to_pylist()
    for i, row in enumerate(rows):
        got = reference_length(row["extra_info"]["avg_response_len"], settings.offset, settings.cap)
        assert got == row["reward_model"]["num_tokens"], f"row {i}"
    # and through the table path that lie reflen writes with
    stats = [
        {
            "lengths": [int(r["extra_info"]["avg_response_len"])],
            "correct": [r["extra_info"]["ori_acc"] == 1.0],
        }
        for r in rows
    ]
    stripped = table.drop_columns(["reward_model"]).append_column(
        "reward_model", pa.array([{"ground_truth": r["reward_model"]["ground_truth"]} for r in rows])
    )
    out = add_reference_lengths(stripped, stats, settings).to_pylist()
    for i, (ours, theirs) in enumerate(zip(out, rows)):
        assert ours["reward_model"]["num_tokens"] == theirs["reward_model"]["num_tokens"], f"row {i}"
        for key in ("avg_response_len", "gen_count", "ori_acc"):
            assert ours["extra_info"][key] == theirs["extra_info"][key], f"row {i} {key}"


def test_formula_cap_and_fractional_means():
    assert reference_length(0) == 1000
    assert reference_length(8192) == 9192 and reference_length(19482) == 9192
    assert reference_length(2113.5) == 3114 and reference_length(2113.25) == 3113
    assert reference_length(100, offset=500, cap=550) == 550


def test_settings_reject_unknown_and_bad_keys():
    config = repo_config()
    config["reflen"]["samples"] = 2
    with pytest.raises(LieError, match="unknown key\\(s\\) reflen.samples"):
        settings_from_config(Config.of(config))
    with pytest.raises(LieError, match="reflen.k must be an integer >= 1"):
        settings_from_config(Config.of(repo_config()), k=0)
    with pytest.raises(LieError, match="reflen.offset must be an integer >= 0, got -1"):
        settings_from_config(Config.of(repo_config()), offset=-1)
    with pytest.raises(LieError, match=r"reflen.temperature is 3.0, outside vLLM's range \[0, 2\]"):
        settings_from_config(Config.of(repo_config()), temperature=3.0)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from lie.stages.tiny import build_tiny

    return str(build_tiny(tmp_path_factory.mktemp("tiny") / "model", ["What is 2 + 2?"], seed=0))


@pytest.fixture(scope="module")
def train_set(tmp_path_factory):
    """A DAPO-layout training set of 6 of the authors' problems, built with lie data (local path)."""
    authors = (
        pq.read_table(data_file("lie-authors/dapo-math-17k_llama-add1k.parquet")).slice(0, 6).to_pylist()
    )
    raw = pa.Table.from_pylist(
        [
            {
                "prompt": [
                    {"content": DAPO_PREFIX + r["prompt"][0]["content"] + DAPO_SUFFIX, "role": "user"}
                ],
                "reward_model": {"ground_truth": r["reward_model"]["ground_truth"], "style": "rule"},
            }
            for r in authors
        ]
    )
    folder = tmp_path_factory.mktemp("train")
    pq.write_table(raw, folder / "raw.parquet")
    config = repo_config()
    config["datasets"]["train"]["dapo"].update(local=str(folder / "raw.parquet"), hf_id=None)
    config["reflen"].update(max_tokens=8, shard_size=2, k=2)
    config["evaluation"]["grade_workers"] = 1
    cfg = folder / "config.yaml"
    cfg.write_text(yaml.safe_dump(config), encoding="utf-8")
    build_dataset(Config.of(config), "dapo", folder / "dapo.parquet", progress=False)
    return SimpleNamespace(config=config, cfg=cfg, data=folder / "dapo.parquet")


def fake_grader(calls: list, fail_at: int | None = None):
    def grade(items, timeout_s=10, workers=0, progress=True):
        calls.append(len(items))
        if len(calls) == fail_at:
            raise KeyboardInterrupt("killed")  # what a killed run leaves: the shards done so far
        return [SimpleNamespace(correct=it["gold"] in it["response"]) for it in items]

    return grade


def test_resume_generates_only_the_missing_shards(tmp_path, tiny, train_set, monkeypatch):
    generated: list[int] = []
    original = HFEngine.generate

    def counting(self, prompts, settings, seeds):
        generated.append(len(prompts))
        return original(self, prompts, settings, seeds)

    monkeypatch.setattr(HFEngine, "generate", counting)
    config, data = train_set.config, train_set.data
    full = run_reflen(
        Config.of(config),
        tiny,
        data,
        tmp_path / "full.parquet",
        engine="hf",
        progress=False,
        grader=fake_grader([]),
    )
    # 6 prompts x k=2 samples in shards of 2 samples' expected tokens on average (prompt lengths)
    rows = pq.read_table(data).to_pylist()
    prompts = [Prompt(i, r["prompt"], f"row {i}") for i, r in enumerate(rows)]
    plan = shard_assignment(prompts, Draw(SamplingSettings(n=2, max_tokens=8), 0), 2)
    assert sorted(u for shard in plan for u in shard) == list(range(12))
    assert generated == [len(shard) for shard in plan]

    generated.clear()
    out = tmp_path / "resumed.parquet"
    with pytest.raises(KeyboardInterrupt):
        run_reflen(
            Config.of(config), tiny, data, out, engine="hf", progress=False, grader=fake_grader([], fail_at=2)
        )
    assert not out.exists()
    assert sorted(p.name for p in (tmp_path / "resumed.parquet.shards").iterdir()) == [
        "lie.lock",  # held while shards are written: one command per output
        "manifest.json",
        "shard-00000.jsonl",
        "shard-00000.seal.json",  # written last: the shard is finished
    ]

    generated.clear()
    with pytest.raises(LieError, match="other settings \\(seed differ"):
        run_reflen(
            Config.of(config), tiny, data, out, engine="hf", progress=False, grader=fake_grader([]), seed=1
        )
    assert generated == []
    resumed = run_reflen(
        Config.of(config), tiny, data, out, engine="hf", progress=False, grader=fake_grader([])
    )
    assert generated == [len(shard) for shard in plan[1:]]  # all shards but the first only
    assert pq.read_table(out).to_pylist() == pq.read_table(tmp_path / "full.parquet").to_pylist()
    assert resumed["reflen"] == full["reflen"]
    assert not (tmp_path / "resumed.parquet.shards").exists()


class ScriptedEngine:
    """The engine interface with fixed answers: of each prompt's k=2 requests, the first right."""

    max_model_len = 4096

    def __init__(self, tokenizer, golds):
        self.tokenizer, self.golds, self.seen = tokenizer, golds, []
        # which (row, sample) a request is, from its seed (seed 0): shards need not follow row order
        self.which = {sample_seed(0, i, j): (i, j) for i in range(len(golds)) for j in range(2)}

    def generate(self, prompts, settings, seeds):
        assert settings.n == 1  # one request per sample
        self.seen.append(list(seeds))
        out = []
        for seed in seeds:
            row, sample = self.which[seed]
            right = Completion([1] * 5 + [0], f"So the answer is \\boxed{{{self.golds[row]}}}.", "stop", 8)
            wrong = Completion([1] * 8, "I give up", "length", 8)
            out.append([[right, wrong][sample]])
        return out


def test_accuracy_and_lengths_with_the_real_grader(tmp_path, tiny, train_set):
    from transformers import AutoTokenizer

    rows = pq.read_table(train_set.data).to_pylist()
    golds = [r["reward_model"]["ground_truth"] for r in rows]
    engine = ScriptedEngine(AutoTokenizer.from_pretrained(tiny), golds)
    settings = replace(settings_from_config(Config.of(train_set.config)), grade_workers=1)
    stats = sample_lengths(rows, lambda: engine, settings, tmp_path / "w", {"test": 1}, progress=False)
    assert [s["correct"] for s in stats] == [[True, False]] * 6
    assert [s["lengths"] for s in stats] == [[6, 8]] * 6
    assert [s["finish"] for s in stats] == [["stop", "length"]] * 6
    # a seed per sample, hashed from (seed, row, sample), each drawn once, in the shards of the plan
    prompts = [Prompt(i, r["prompt"], f"row {i}") for i, r in enumerate(rows)]
    plan = shard_assignment(prompts, Draw(settings.sampling(), 0), settings.shard_size)
    assert engine.seen == [[sample_seed(0, *divmod(u, 2)) for u in shard] for shard in plan]
    table = add_reference_lengths(pq.read_table(train_set.data), stats, settings).to_pylist()
    assert {
        (r["extra_info"]["avg_response_len"], r["extra_info"]["ori_acc"], r["reward_model"]["num_tokens"])
        for r in table
    } == {(7.0, 0.5, 1007)}


def test_sampling_settings_vllm_refuses_are_refused_with_the_key():
    with pytest.raises(LieError, match="reflen.temperature is 3.0, outside vLLM's range"):
        settings_from_config(Config.of(repo_config()), temperature=3.0)
    with pytest.raises(LieError, match="reflen.temperature is 0.0 \\(greedy\\) with reflen.k = 4"):
        settings_from_config(Config.of(repo_config()), temperature=0.0, k=4)
    assert settings_from_config(Config.of(repo_config()), temperature=0.0, k=1).sampling().n == 1


def test_budget_and_context_through_the_real_engine(tmp_path, tiny, train_set):
    from lie.engines.generation import load_engine

    rows = pq.read_table(train_set.data).to_pylist()[:2]
    settings = replace(settings_from_config(Config.of(train_set.config)), k=1, max_tokens=20, grade_workers=1)
    engine = load_engine("hf", tiny)
    longest = max(
        len(prompt_token_ids(engine.tokenizer, r["prompt"], None, settings.max_prompt_tokens)) for r in rows
    )
    engine.max_model_len = longest + 4
    stats = sample_lengths(
        rows, lambda: engine, settings, tmp_path / "w", {}, fake_grader([]), progress=False
    )
    assert min(b for s in stats for b in s["budgets"]) == 4 and all(
        n <= b for s in stats for n, b in zip(s["lengths"], s["budgets"])
    )
    engine.max_model_len = longest
    with pytest.raises(
        LieError, match=f"row \\d has {longest} tokens, which fills the model's {longest}-token"
    ):
        sample_lengths(rows, lambda: engine, settings, tmp_path / "w2", {}, fake_grader([]), progress=False)


def test_cli_end_to_end_on_a_tiny_model(tmp_path, tiny, train_set):
    out = tmp_path / "dapo.reflen.parquet"
    args = [
        "reflen",
        "--config",
        str(train_set.cfg),
        "--model",
        tiny,
        "--data",
        str(train_set.data),
        "--out",
        str(out),
    ]
    assert main(args + ["--engine", "hf", "--max-tokens", "6", "--shard-size", "6", "--no-progress"]) == 0
    before = pq.read_table(train_set.data).to_pylist()
    after = pq.read_table(out).to_pylist()
    assert len(after) == 6
    for old, new in zip(before, after):
        avg = new["extra_info"]["avg_response_len"]
        assert new["extra_info"]["gen_count"] == 2 and 1 <= avg <= 6
        assert new["reward_model"]["num_tokens"] == reference_length(avg)
        assert new["extra_info"]["ori_acc"] in (0.0, 0.5, 1.0)
        assert (
            new["prompt"] == old["prompt"] and new["extra_info"]["question"] == old["extra_info"]["question"]
        )
        assert new["reward_model"]["ground_truth"] == old["reward_model"]["ground_truth"]
    meta = read_metadata(out)
    assert meta["source"] == read_metadata(train_set.data)["source"]
    assert (meta["reflen"]["k"], meta["reflen"]["max_tokens"], meta["reflen"]["engine"]) == (2, 6, "hf")
    assert not (tmp_path / "dapo.reflen.parquet.shards").exists()
    assert main(args + ["--engine", "hf", "--max-tokens", "6", "--limit", "3", "--no-progress"]) == 0
    assert pq.read_table(out).to_pylist() == after[:3]  # seeded per prompt: a subset gives the same samples


def test_cli_names_bad_inputs(tmp_path, train_set, capsys):
    base = [
        "reflen",
        "--config",
        str(train_set.cfg),
        "--data",
        str(train_set.data),
        "--out",
        str(tmp_path / "o.parquet"),
    ]
    assert main(base + ["--model", str(tmp_path / "missing")]) == 2
    assert "neither a model of the config" in capsys.readouterr().err
    bad = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"prompt": ["x"]}), bad)
    assert (
        main(
            [
                "reflen",
                "--config",
                str(train_set.cfg),
                "--data",
                str(bad),
                "--out",
                str(tmp_path / "out" / "o.parquet"),
                "--model",
                str(tmp_path / "model"),  # a folder of its own: an output inside the model's is refused first
            ]
        )
        == 2
    )
    assert "column 'reward_model' is missing" in capsys.readouterr().err


def test_an_engine_that_answers_a_request_with_other_than_one_sample_is_one_line(tiny, train_set):
    """draw_shard asks one sample per request; an engine (a new backend, a changed library) that
    returns two for one is named with the prompt, not zipped silently against the wrong requests."""
    from transformers import AutoTokenizer

    from lie.stages.sample_shards import draw_shard

    rows = pq.read_table(train_set.data).to_pylist()
    engine = ScriptedEngine(
        AutoTokenizer.from_pretrained(tiny), [r["reward_model"]["ground_truth"] for r in rows]
    )
    answer = engine.generate
    engine.generate = lambda prompts, settings, seeds: [done * 2 for done in answer(prompts, settings, seeds)]
    prompts = [Prompt(i, r["prompt"], f"row {i}") for i, r in enumerate(rows)]
    with pytest.raises(LieError, match="the engine returned 2 samples for one request of row 0, expected 1"):
        draw_shard(engine, prompts, Draw(SamplingSettings(n=2, max_tokens=8), 0), [0, 1])


def test_a_grader_that_drops_results_stops_and_rows_without_extra_info_get_it(tiny, train_set, tmp_path):
    """A grader that answers fewer results than it was given responses stops the shard (nothing zipped
    against the wrong sample); a training table without ``extra_info`` gets the column, with the
    reflen fields."""
    from transformers import AutoTokenizer

    rows = pq.read_table(train_set.data).to_pylist()
    engine = ScriptedEngine(
        AutoTokenizer.from_pretrained(tiny), [r["reward_model"]["ground_truth"] for r in rows]
    )
    settings = replace(settings_from_config(Config.of(train_set.config)), grade_workers=1)
    with pytest.raises(LieError, match=r"the grader returned 0 results for 2 responses"):
        sample_lengths(rows, lambda: engine, settings, tmp_path / "w", {"test": 1},
                       grader=lambda items, **kwargs: [], progress=False)  # fmt: skip
    bare = pq.read_table(train_set.data).drop_columns(["extra_info"])
    stats = [{"index": i, "lengths": [6, 8], "correct": [True, False], "finish": ["stop", "length"],
              "budgets": [8, 8]} for i in range(len(rows))]  # fmt: skip
    table = add_reference_lengths(bare, stats, settings).to_pylist()
    assert {(r["extra_info"]["avg_response_len"], r["extra_info"]["ori_acc"]) for r in table} == {(7.0, 0.5)}


def test_a_models_thinking_switch_reaches_reflen_and_shards_that_miss_rows_stop(
    tmp_path, tiny, train_set, monkeypatch
):
    """``--model NAME`` whose config entry sets ``enable_thinking`` samples with it, as the rollouts do
    (recorded with the settings); shards that come back without every (row, sample) stop with one
    line naming the work folder (here the shard loop made to lose the last sample)."""
    import copy

    from lie.stages import sample_shards

    config = copy.deepcopy(train_set.config)
    config["models"]["tiny-think"] = {
        "path": str(tiny),
        "hf_id": None,
        "revision": None,
        "enable_thinking": False,
    }
    meta = run_reflen(Config.of(config), "tiny-think", train_set.data, tmp_path / "think.parquet", engine="hf",
                      progress=False, grader=fake_grader([]))  # fmt: skip
    assert meta["reflen"]["enable_thinking"] is False
    shards = sample_shards.sample_in_shards
    monkeypatch.setattr(sample_shards, "sample_in_shards", lambda *a, **k: list(shards(*a, **k))[:-1])
    with pytest.raises(LieError, match=r"the shards do not cover rows 0..5; delete that folder and rerun"):
        run_reflen(Config.of(config), "tiny-think", train_set.data, tmp_path / "lost.parquet", engine="hf",
                   progress=False, grader=fake_grader([]))  # fmt: skip
