"""``lie generate`` on a tiny model (seeded, resumable) and ``lie evaluate`` at token budgets.

Evaluation runs on generations written from real AIME answers and solutions, tokenised with the
tiny model's tokenizer, so that a budget that cuts before the boxed answer scores it wrong.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from conftest import REPO, data_file

from lie.cli import main
from lie.config import Config, load_config
from lie.core.errors import LieError
from lie.engines.generation import (
    SEED_RULE,
    HFEngine,
    SamplingSettings,
    VLLMEngine,
    batch_invariant_mode,
    checked_finish,
    load_engine,
    sample_seed,
)
from lie.formats.generations import read_generations
from lie.grading import grade_many
from lie.stages.evaluate import budget_texts, evaluate
from lie.stages.generate import read_problems, run_generate, stream_seed

ABCD = ["A", "B", "C", "D"]


def aime(count: int = 3) -> list[dict]:
    lines = data_file("qwen25-math-eval/aime24.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines[:count]]


def verl_row(bench: str, index: int, question: str, gold: str, kind: str = "math", choices=()) -> dict:
    """A row as `lie data` writes it (verl's format, SPEC's extra_info keys)."""
    letters = ABCD[: len(choices)]
    text = question + "".join(f"\n{a}. {c}" for a, c in zip(letters, choices))
    return {
        "data_source": bench,
        "prompt": [
            {
                "role": "user",
                "content": text + " Let's think step by step and output the final answer within \\boxed{}.",
            }
        ],
        "ability": kind,
        "reward_model": {"ground_truth": gold, "style": "rule"},
        "extra_info": {
            "index": index,
            "split": "test",
            "kind": kind,
            "letters": letters,
            "choices": list(choices),
            "question": question,
        },
    }


def write_parquet(path, rows):
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    from lie.stages.tiny import build_tiny

    folder = tmp_path_factory.mktemp("gen")
    problems = aime()
    corpus = [p["problem"] for p in problems] + [p["solution"] for p in problems]
    tiny = str(build_tiny(folder / "tiny", corpus, seed=0))
    config = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))
    config["evaluation"].update(max_tokens=6, shard_size=2, grade_workers=1, budgets=[8, 100_000])
    config["datasets"]["eval"]["aime24"]["n"] = 2
    cfg = folder / "config.yaml"
    cfg.write_text(yaml.safe_dump(config), encoding="utf-8")
    math = write_parquet(
        folder / "aime24.parquet",
        [verl_row("aime24", i, p["problem"], p["answer"]) for i, p in enumerate(problems)],
    )
    choice = write_parquet(
        folder / "arc-c.parquet",
        [
            verl_row("arc-c", 0, "Which is a mammal?", "B", "choice", ["trout", "whale", "crow", "frog"]),
            verl_row(
                "arc-c",
                1,
                "Which is a gas at room temperature?",
                "D",
                "choice",
                ["iron", "ice", "salt", "neon"],
            ),
        ],
    )
    return SimpleNamespace(
        folder=folder, tiny=tiny, config=config, cfg=cfg, math=math, choice=choice, problems=problems
    )


def read_lines(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def generate_cli(setup, out, *extra):
    args = ["generate", "--config", str(setup.cfg), "--model", setup.tiny, "aime24"]
    args += ["--data", str(setup.math), "--out", str(out), "--engine", "hf", "--no-progress", *extra]
    return main(args)


def test_generate_writes_n_seeded_samples_per_problem(setup, tmp_path):
    from transformers import AutoTokenizer

    from lie.formats.prompts import prompt_token_ids

    out = tmp_path / "gen.jsonl"
    assert generate_cli(setup, out) == 0
    lines = read_lines(out)
    assert [(x["index"], x["sample"]) for x in lines] == [(i, s) for i in range(3) for s in range(2)]
    tok = AutoTokenizer.from_pretrained(setup.tiny)
    for line, problem in zip(lines, [p for p in setup.problems for _ in range(2)]):
        assert line["bench"] == "aime24" and line["kind"] == "math" and "letters" not in line
        assert line["gold"] == problem["answer"]
        assert 1 <= line["num_tokens"] == len(line["token_ids"]) <= 6
        assert line["finish_reason"] in ("stop", "length")
        assert line["text"] == tok.decode(line["token_ids"], skip_special_tokens=True)
        messages = [
            {
                "role": "user",
                "content": problem["problem"]
                + " Let's think step by step and output the final answer within \\boxed{}.",
            }
        ]
        assert line["prompt_tokens"] == len(prompt_token_ids(tok, messages))
        assert line["max_tokens"] == 6  # the tiny model's 4096-token context leaves the whole budget
        base = stream_seed(0, "aime24", Path(setup.tiny).name)  # the benchmark's and the model's stream
        assert line["seed"] == sample_seed(sample_seed(base, line["index"], line["sample"]), 0)
    assert len({x["seed"] for x in lines}) == 6
    streams = {stream_seed(0, b, m) for b in ("aime24", "aime25") for m in ("run-a", "run-b")}
    assert len(streams) == 4  # problem k of each benchmark and each model: a stream of its own
    assert lines[0]["token_ids"] != lines[1]["token_ids"]  # two samples, not one twice
    again = tmp_path / "again.jsonl"
    assert generate_cli(setup, again, "--shard-size", "5") == 0
    assert again.read_text() == out.read_text()  # seeded per sample: other shard bounds, same samples
    assert not (tmp_path / "gen.jsonl.shards").exists()


def test_samples_of_one_prompt_share_no_noise_across_problems(setup, tmp_path):
    """The same question as problems 0..2: with vLLM's seed + j, sample 1 of problem 0 would repeat
    sample 0 of problem 1; with hashed seeds every one of the 9 samples is its own draw."""
    question = setup.problems[0]["problem"]
    data = write_parquet(tmp_path / "same.parquet", [verl_row("aime24", i, question, "1") for i in range(3)])
    out = tmp_path / "same.jsonl"
    run_generate(
        Config.of(setup.config),
        setup.tiny,
        "aime24",
        data,
        out,
        engine="hf",
        n=3,
        max_tokens=8,
        progress=False,
    )
    lines = read_lines(out)
    assert len(lines) == 9 and len({x["prompt_tokens"] for x in lines}) == 1
    assert len({tuple(x["token_ids"]) for x in lines}) == 9


def test_a_small_set_with_many_samples_has_resume_points(setup, tmp_path, monkeypatch):
    calls: list[int] = []
    original = HFEngine.generate

    def counting(self, prompts, settings, seeds):
        calls.append(len(prompts))
        return original(self, prompts, settings, seeds)

    monkeypatch.setattr(HFEngine, "generate", counting)
    out = tmp_path / "gen.jsonl"
    summary = run_generate(
        Config.of(setup.config),
        setup.tiny,
        "aime24",
        setup.math,
        out,
        engine="hf",
        n=5,
        limit=1,
        shard_size=2,
        progress=False,
    )
    assert calls == [2, 2, 1]  # one problem, 5 samples, shards of 2 samples
    assert (summary["problems"], summary["samples"], summary["shard_unit"]) == (1, 5, "sample")
    assert [x["sample"] for x in read_lines(out)] == [0, 1, 2, 3, 4]


def test_budget_is_capped_at_the_context_minus_the_prompt(setup, tmp_path):
    full = tmp_path / "full.jsonl"
    assert generate_cli(setup, full) == 0
    prompts = sorted({x["prompt_tokens"] for x in read_lines(full)})
    context = prompts[-1] + 3  # the longest prompt leaves 3 tokens, shorter ones more
    out = tmp_path / "capped.jsonl"
    summary = run_generate(
        Config.of(setup.config),
        setup.tiny,
        "aime24",
        setup.math,
        out,
        engine="hf",
        max_tokens=50,
        engine_kwargs={"max_model_len": context},
        progress=False,
    )
    lines = read_lines(out)
    for line in lines:
        assert line["max_tokens"] == min(50, context - line["prompt_tokens"])
        assert line["num_tokens"] <= line["max_tokens"]
        if line["finish_reason"] == "length":
            assert line["num_tokens"] == line["max_tokens"]
    assert summary["budget_capped"] == sum(x["max_tokens"] < 50 for x in lines) >= 2
    with pytest.raises(LieError, match=f"aime24 problem \\d has {prompts[-1]} tokens, which fills"):
        run_generate(
            Config.of(setup.config),
            setup.tiny,
            "aime24",
            setup.math,
            tmp_path / "none.jsonl",
            engine="hf",
            engine_kwargs={"max_model_len": prompts[-1]},
            progress=False,
        )


@pytest.mark.parametrize(
    "temperature, n, message",
    [
        (2.5, 2, "evaluation.temperature is 2.5, outside vLLM's range \\[0, 2\\]"),
        (0.0, 2, "evaluation.temperature is 0.0 \\(greedy\\) with datasets.eval.aime24.n \\(or --n\\) = 2"),
        (0.005, 1, "evaluation.temperature is 0.005: vLLM raises temperatures below 0.01"),
    ],
)
def test_sampling_vllm_refuses_is_refused_before_a_model_loads(
    setup, tmp_path, capsys, temperature, n, message
):
    config = dict(setup.config, evaluation=dict(setup.config["evaluation"], temperature=temperature))
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump(config), encoding="utf-8")
    args = ["generate", "--config", str(cfg), "--model", str(tmp_path / "no-model"), "aime24"]
    args += ["--data", str(setup.math), "--out", str(tmp_path / "o.jsonl"), "--n", str(n), "--no-progress"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert re.search(message.replace("datasets.eval.aime24.n \\(or --n\\)", "--n"), err), err
    assert not (tmp_path / "o.jsonl.shards").exists()
    with pytest.raises(LieError, match=message):
        run_generate(
            Config.of(config),
            str(tmp_path / "no-model"),
            "aime24",
            setup.math,
            tmp_path / "o.jsonl",
            progress=False,
        )


def test_each_sample_is_its_own_seeded_request(setup):
    engine = HFEngine(setup.tiny)
    ids = engine.tokenizer("What is 2 + 2?", add_special_tokens=False)["input_ids"]
    (three,) = engine.generate([ids], SamplingSettings(n=3, max_tokens=8, temperature=1.0), [7])
    (one,) = engine.generate([ids], SamplingSettings(n=1, max_tokens=8, temperature=1.0), [7])
    assert [c.seed for c in three] == [sample_seed(7, j) for j in range(3)]
    assert one[0].token_ids == three[0].token_ids  # sample 0 does not depend on how many were asked
    assert len({tuple(c.token_ids) for c in three}) == 3
    engine.max_model_len = len(ids) + 2
    (capped,) = engine.generate([ids], SamplingSettings(n=2, max_tokens=8, temperature=1.0), [7])
    assert [c.max_tokens for c in capped] == [2, 2] and all(len(c.token_ids) <= 2 for c in capped)
    with pytest.raises(LieError, match="engine 'hf' takes no argument batch_invariant"):
        load_engine("hf", setup.tiny, batch_invariant=True)


def test_only_stop_and_length_are_finish_reasons():
    assert [checked_finish(r) for r in ("stop", "length")] == ["stop", "length"]
    for reason in ("abort", "error", "repetition", None):
        with pytest.raises(LieError, match=f"finished a sample with reason {re.escape(repr(reason))}"):
            checked_finish(reason)


def test_batch_invariant_mode_is_set_before_vllm_loads(monkeypatch):
    monkeypatch.setenv("VLLM_BATCH_INVARIANT", "0")  # restored (to unset) after the test
    monkeypatch.delenv("VLLM_BATCH_INVARIANT")
    assert batch_invariant_mode("vllm", {}) is False and batch_invariant_mode("hf", {}) is None
    assert batch_invariant_mode("vllm", {"batch_invariant": True}) is True
    with pytest.raises(LieError, match="engine 'vllm' needs vLLM"):  # no vLLM on a CPU
        VLLMEngine("unused", batch_invariant=True)
    assert os.environ["VLLM_BATCH_INVARIANT"] == "1" and batch_invariant_mode("vllm", None) is True


def test_a_killed_generation_resumes_where_it_stopped(setup, tmp_path, monkeypatch):
    full = tmp_path / "full.jsonl"
    assert generate_cli(setup, full) == 0
    calls: list[int] = []
    killed: list[bool] = []
    original = HFEngine.generate

    def failing(self, prompts, settings, seeds):
        calls.append(len(prompts))
        if len(calls) == 2 and not killed:
            killed.append(True)
            raise KeyboardInterrupt("killed")
        return original(self, prompts, settings, seeds)

    monkeypatch.setattr(HFEngine, "generate", failing)
    out = tmp_path / "gen.jsonl"
    with pytest.raises(KeyboardInterrupt):  # as the CLI runs it, without its handler
        run_generate(
            Config.of(load_config(setup.cfg)),
            setup.tiny,
            "aime24",
            setup.math,
            out,
            engine="hf",
            progress=False,
        )
    assert not out.exists()
    assert sorted(p.name for p in (tmp_path / "gen.jsonl.shards").iterdir()) == [
        "lie.lock",  # held while shards are written: one command per output
        "manifest.json",
        "shard-00000.jsonl",
        "shard-00000.seal.json",  # written last: the shard is finished
    ]
    assert generate_cli(setup, out, "--n", "3") == 2  # other settings: refused, nothing mixed
    manifest = tmp_path / "gen.jsonl.shards" / "manifest.json"
    kept = manifest.read_text()
    before = {k: v for k, v in json.loads(kept).items() if k != "seed_model"}
    manifest.write_text(json.dumps({**before, "seed_rule": SEED_RULE}))  # shards of the seed rule before
    assert generate_cli(setup, out) == 2  # not resumed with other seeds
    manifest.write_text(kept)
    calls.clear()
    assert generate_cli(setup, out) == 0
    # shards by expected length (prompts of 520 > 339 > 314 characters, 2 samples each, 2 a shard):
    # [0, 1], [4, 5], [2, 3]; shard 0 was done before the kill
    assert calls == [2, 2]
    assert out.read_text() == full.read_text()


def test_choice_benchmark_and_limit(setup, tmp_path):
    out = tmp_path / "arc.jsonl"
    summary = run_generate(
        Config.of(setup.config), setup.tiny, "arc-c", setup.choice, out, engine="hf", limit=1, progress=False
    )
    assert (summary["n"], summary["problems"], summary["samples"], summary["temperature"]) == (1, 1, 1, 0.6)
    (line,) = read_lines(out)
    assert (line["kind"], line["letters"], line["gold"], line["index"]) == ("choice", ABCD, "B", 0)


def test_a_run_folder_is_generated_with_its_models_thinking_switch(setup, tmp_path, caplog):
    """`lie generate --model <run folder>`: the base model's evaluation switch (config.yaml: Qwen3-4B
    off), read from the folder's merge record, as the DAG passes it; a bare folder: the template's."""
    from lie.formats.outputs import OWNER

    run = tmp_path / "qwen3-4b_polaris_gspo"
    shutil.copytree(setup.tiny, run)
    record = {"command": "merge", "run": run.name, "model": "qwen3-4b", "checkpoint": "x"}
    (run / OWNER).write_text(json.dumps(record), encoding="utf-8")
    summary = run_generate(Config.of(setup.config), str(run), "arc-c", setup.choice, tmp_path / "a.jsonl", engine="hf",
                           limit=1, progress=False)  # fmt: skip
    assert summary["enable_thinking"] is False
    assert json.loads((tmp_path / "a.manifest.json").read_text(encoding="utf-8"))["enable_thinking"] is False
    bare = run_generate(Config.of(setup.config), setup.tiny, "arc-c", setup.choice, tmp_path / "b.jsonl", engine="hf",
                        limit=1, progress=False)  # fmt: skip
    assert bare["enable_thinking"] is None and "no model of the config behind it" in caplog.text


@pytest.mark.parametrize(
    "change, message",
    [
        (
            lambda r: r["reward_model"].pop("ground_truth"),
            "row 1: field 'reward_model.ground_truth' is missing",
        ),
        (
            lambda r: r["extra_info"].update(kind="essay", letters=[]) or r.update(ability="essay"),
            "row 1: field 'extra_info.kind'",
        ),
        (
            lambda r: r["extra_info"].update(kind="choice", letters=[]),
            "row 1: a choice item needs field 'extra_info.letters'",
        ),
        (lambda r: r["extra_info"].update(index=0), "row 1: extra_info.index 0 repeats row 0"),
        (lambda r: r.update(data_source="aime"), "row 1: data_source is 'aime', not the benchmark 'aime24'"),
        (lambda r: r.update(prompt=[]), "row 1: field 'prompt'"),
        (
            lambda r: r["extra_info"].update(index=None),
            "row 1: field 'extra_info.index' must be an integer, got None",
        ),
    ],
)
def test_bad_benchmark_rows_name_row_and_field(tmp_path, change, message):
    rows = [verl_row("aime24", i, f"q{i}", str(i)) for i in range(3)]
    change(rows[1])
    path = write_parquet(tmp_path / "bad.parquet", rows)
    with pytest.raises(LieError, match=message.replace("(", "\\(").replace(")", "\\)")):
        read_problems(path, "aime24")


def test_truncation_at_budgets_on_real_token_ids(setup):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(setup.tiny)
    samples = []
    for p in setup.problems:
        ids = tok(p["solution"], add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
        samples.append(SimpleNamespace(token_ids=ids, text="STORED " + p["answer"]))
    lengths = [len(s.token_ids) for s in samples]
    budgets = [5, 50, min(lengths) - 1, max(lengths)]
    texts = budget_texts(samples, budgets, tok)
    for s, row in zip(samples, texts):
        for budget, text in zip(budgets, row):
            if len(s.token_ids) <= budget:
                assert text == s.text  # not cut: the generation's own text
            else:
                assert text == tok.decode(s.token_ids[:budget], skip_special_tokens=True)
                assert len(tok(text, add_special_tokens=False)["input_ids"]) <= budget + 1
                full = tok.decode(s.token_ids, skip_special_tokens=True)
                assert full.startswith(text.rstrip("\ufffd"))  # a prefix of the same text


def write_generations(setup, path, right_first=True):
    """Two samples per AIME problem: a real solution, then the answer boxed (right) or another one."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(setup.tiny)
    lines = []
    for i, p in enumerate(setup.problems):
        other = setup.problems[(i + 1) % len(setup.problems)]["answer"]
        for s, answer in enumerate([p["answer"], other] if right_first else [other, p["answer"]]):
            text = p["solution"][:300] + f"\n\nThe answer is \\boxed{{{answer}}}."
            ids = tok(text, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
            lines.append(
                {
                    "bench": "aime24",
                    "index": i,
                    "sample": s,
                    "gold": p["answer"],
                    "kind": "math",
                    "prompt_tokens": 9,
                    "token_ids": ids,
                    "text": text,
                    "num_tokens": len(ids),
                    "finish_reason": "stop",
                }
            )
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return lines


def write_choice_generations(path):
    lines = [
        {
            "bench": "arc-c",
            "index": 0,
            "sample": 0,
            "gold": "B",
            "kind": "choice",
            "letters": ABCD,
            "token_ids": [1, 2],
            "text": "Whales nurse their young. Answer: (B)",
            "num_tokens": 2,
            "finish_reason": "stop",
        },
        {
            "bench": "arc-c",
            "index": 1,
            "sample": 0,
            "gold": "D",
            "kind": "choice",
            "letters": ABCD,
            "token_ids": [1, 2, 3],
            "text": "\\boxed{A}",
            "num_tokens": 3,
            "finish_reason": "stop",
        },
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")


def test_evaluate_end_to_end(setup, tmp_path, capsys):
    gen, arc = tmp_path / "aime24.jsonl", tmp_path / "arc.jsonl"
    lines = write_generations(setup, gen)
    write_choice_generations(arc)
    scores, summary = tmp_path / "scores.jsonl", tmp_path / "summary.json"
    args = [
        "evaluate",
        "--config",
        str(setup.cfg),
        "--gen",
        str(gen),
        "--gen",
        str(arc),
        "--tokenizer",
        setup.tiny,
    ]
    assert main([*args, "--out-scores", str(scores), "--out-summary", str(summary), "--no-progress"]) == 0
    out = read_lines(scores)
    assert [(x["bench"], x["index"], x["sample"]) for x in out] == [
        (x["bench"], x["index"], x["sample"]) for x in lines
    ] + [("arc-c", 0, 0), ("arc-c", 1, 0)]
    assert [x["grades"]["100000"]["correct"] for x in out] == [True, False] * 3 + [True, False]
    assert not any(x["grades"]["8"]["correct"] for x in out[:6])  # 8 tokens never reach the answer
    assert [x["grades"]["8"]["correct"] for x in out[6:]] == [True, False]  # short: not cut
    assert out[0]["grades"]["100000"]["pred"] == setup.problems[0]["answer"]
    result = json.loads(summary.read_text())
    aime24 = result["benchmarks"]["aime24"]
    assert (aime24["problems"], aime24["n"], aime24["samples"], aime24["avg@n"]) == (3, 2, 6, "avg@n:n=2")
    full, cut = aime24["budgets"]["100000"], aime24["budgets"]["8"]
    assert full == {
        "avg@n:n=2": 0.5,
        "pass@k:k=1&n=2": 0.5,
        "pass@k:k=2&n=2": 1.0,
        "n_timeouts": 0,
        "n_no_answer": 0,
        "n_errors": 0,
        "n_truncated": 0,
    }
    assert (cut["avg@n:n=2"], cut["pass@k:k=2&n=2"], cut["n_truncated"]) == (0.0, 0.0, 6)
    assert result["benchmarks"]["arc-c"]["budgets"]["8"]["avg@n:n=1"] == 0.5
    in_domain = result["in_domain"]
    assert in_domain["missing"] == ["math500", "olympiadbench", "amc", "aime25"]
    assert in_domain["budgets"]["100000"] == {"avg": None, "mean_of_present": 0.5}  # never silently fewer
    assert result["out_of_domain"]["missing"] == ["gpqa-diamond", "mmlu-pro"]
    csv_path = tmp_path / "summary.csv"
    assert main([*args, "--out-scores", str(scores), "--out-summary", str(csv_path), "--no-progress"]) == 0
    rows = csv_path.read_text().splitlines()
    assert rows[0] == "bench,budget,metric,value,note"
    assert "aime24,100000,pass@k:k=2&n=2,1.0," in rows
    assert "in_domain,100000,avg@n (mean over benchmarks),,missing: math500 olympiadbench amc aime25" in rows
    other = tmp_path / "summary.txt"  # neither format: refused before anything is graded or written
    assert main([*args, "--out-scores", str(tmp_path / "s2.jsonl"), "--out-summary", str(other)]) == 2
    assert f"--out-summary must end in .json or .csv, got {other}" in capsys.readouterr().err
    assert not other.exists() and not (tmp_path / "s2.jsonl").exists()


def test_each_distinct_text_is_graded_once(setup, tmp_path):
    gen = tmp_path / "aime24.jsonl"
    write_generations(setup, gen)
    seen: list[dict] = []

    def counting(items, **kwargs):
        seen.extend(items)
        return grade_many(items, **kwargs)

    config = dict(setup.config, evaluation=dict(setup.config["evaluation"], budgets=[8, 9, 100_000, 200_000]))
    scores, _ = evaluate(Config.of(config), [str(gen)], _tok(setup), progress=False, grader=counting)
    texts = budget_texts(read_generations([str(gen)]), [8, 9, 100_000], _tok(setup))
    assert len(seen) == len({t for row in texts for t in row})  # 100k and 200k: one grade each
    assert all(x["grades"]["100000"] == x["grades"]["200000"] for x in scores)
    assert len(seen) < 6 * 4  # the budgets past every length, and shared prefixes, cost nothing


def _tok(setup):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(setup.tiny)


def test_bad_generations_and_a_missing_tokenizer(setup, tmp_path):
    gen = tmp_path / "g.jsonl"
    good = write_generations(setup, gen)[0]
    cases = [
        ({k: v for k, v in good.items() if k != "kind"}, "g.jsonl line 2: missing field 'kind'"),
        (dict(good, kind="choice"), "g.jsonl line 2: a choice item needs field 'letters'"),
        (dict(good, sample=0), "g.jsonl line 2: sample 0 of aime24 problem 0 is also in"),
        (dict(good, num_tokens=3), "g.jsonl line 2: field 'num_tokens' is 3"),
        (dict(good, token_ids="1 2"), "g.jsonl line 2: field 'token_ids' must be a list"),
    ]
    for bad, message in cases:
        gen.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
        with pytest.raises(LieError, match=message):
            evaluate(Config.of(setup.config), [str(gen)], _tok(setup), progress=False)
    write_generations(setup, gen)
    with pytest.raises(LieError, match="longer than the 8-token budget: pass --tokenizer"):
        evaluate(Config.of(setup.config), [str(gen)], None, progress=False)


def test_each_bad_input_of_the_generation_engine_is_one_line(monkeypatch, tmp_path, hub):
    """What the engine refuses before any model loads, each as one LieError saying what to change: a
    top_p vLLM would refuse, seeds that do not match the prompts, a model config without a context
    length, a model and tokenizer without an end-of-sequence token, an unknown engine, a model that
    cannot be loaded, batch invariance asked after vLLM was imported; and an engine's version when its
    package is missing."""
    import importlib.metadata
    import sys
    from types import ModuleType, SimpleNamespace

    from lie.engines import generation

    with pytest.raises(LieError, match=r"evaluation.top_p must be in \(0, 1\], got 0.0"):
        SamplingSettings(top_p=0.0, keys={"top_p": "evaluation.top_p"})
    with pytest.raises(LieError, match="2 prompts but 1 seeds: give one seed per prompt"):
        generation.plan_requests([[1], [2]], SamplingSettings(max_tokens=4), [0], max_model_len=16)
    with pytest.raises(LieError, match="states no context length; pass --engine-arg max_model_len=N"):
        generation._context_length(SimpleNamespace(max_position_embeddings=None), "m")
    none = SimpleNamespace(eos_token_id=None, generation_config=SimpleNamespace(eos_token_id=None),
                           config=SimpleNamespace(eos_token_id=None))  # fmt: skip
    with pytest.raises(LieError, match="the model and tokenizer name no end-of-sequence token"):
        generation._eos_ids(none, none)
    with pytest.raises(LieError, match=r"unknown generation engine 'sglang': use one of \('hf', 'vllm'\)"):
        load_engine("sglang", str(tmp_path))
    # offline (the `hub` fixture): a hub name not in the cache
    with pytest.raises(LieError, match="cannot load a model from 'no-such-org/no-such-model'"):
        generation.load_model("no-such-org/no-such-model")
    monkeypatch.setitem(sys.modules, "vllm", ModuleType("vllm"))
    monkeypatch.delenv("VLLM_BATCH_INVARIANT", raising=False)
    with pytest.raises(LieError, match="set VLLM_BATCH_INVARIANT=1 in the environment instead"):
        generation._enable_batch_invariance()

    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    assert generation.engine_version("vllm") == "not installed"


def test_an_empty_benchmark_file_and_a_training_set_as_benchmark_are_one_line(tmp_path):
    """``lie generate``: a benchmark file with no row, and ``--bench`` naming a training set."""
    rows = [verl_row("aime24", 0, "q0", "0")]
    empty = write_parquet(tmp_path / "empty.parquet", rows)
    import pyarrow.parquet as pq

    pq.write_table(pq.read_table(empty).slice(0, 0), empty)
    with pytest.raises(LieError, match=f"{empty}: no problems"):
        read_problems(empty, "aime24")
    config = load_config(REPO / "config.yaml")
    with pytest.raises(LieError, match="'dapo' is a training set; --bench takes a name of datasets.eval"):
        run_generate(Config.of(config), str(tmp_path / "model"), "dapo", write_parquet(tmp_path / "d.parquet", rows),
                     tmp_path / "g.jsonl")  # fmt: skip
    assert not (tmp_path / "g.jsonl").exists()


def test_a_hub_tokenizer_too_deep_to_read_is_one_line(hub):
    """A hub name is not a folder, so the model-folder check does not read its files first: a cached
    tokenizer_config.json nested 100,000 deep stops in Python's JSON reader (RecursionError), which is
    one line naming the model, offline, from the pre-filled cache."""
    from hubcache import add_dataset

    from lie.engines.generation import load_tokenizer

    deep = '{"chat_template": ' + "[" * 100_000 + "]" * 100_000 + "}"
    add_dataset(hub, "org/deep", {"tokenizer_config.json": deep, "config.json": '{"model_type": "qwen3"}'},
                commit=None, repo_type="models")  # fmt: skip
    with pytest.raises(
        LieError, match="cannot load a tokenizer from 'org/deep': its files are too large or deep"
    ):
        load_tokenizer("org/deep")
