"""A real pipeline run for the report and analysis tests: data, training, generation, evaluation.

The smoke configuration's stages on three runs named as in the paper's config (so the paper's
numbers apply) plus a run whose model loops, through the same code the ``lie`` commands call:
``lie data`` (synthetic arithmetic), TRL training (rollouts and metrics), ``lie merge``,
``lie generate`` (transformers) and ``lie evaluate`` (math-verify). Built once per test process
(about 30 s on 2 cores) in a temporary folder removed at exit.

The looping model is the tiny model with its layers silenced and its output head set so that it
writes " Wait, check \\boxed{A}." over and over: its rollouts repeat 10-grams (R_red's test fires,
low R_context, identical samples), its generations show one behaviour a sentence, and it answers
the multiple-choice items whose gold is A, but only within the 48-token budget (the 6-token
budget cuts the phrase before its answer).
"""

from __future__ import annotations

import atexit
import copy
import functools
import shutil
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import yaml
from small import REPO, arithmetic_rows, write_config, write_parquet

from lie.config import Config

LOOP_PHRASE = " Wait, check \\boxed{A}."  # 8 distinct tokens of the tiny tokenizer
RUNS = ("qwen3-4b-base_dapo_grpo", "qwen3-4b-base_dapo_gspo_lie", "loop_gspo_lie")
BASE = "qwen3-4b-base"
BENCHMARKS = ("math500", "arc-c")


def build_looping_model(src: Path, dst: Path, phrase: str = LOOP_PHRASE) -> Path:
    """The tiny model rewired to repeat ``phrase`` (its tokens must be distinct)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(src)
    ids = tok(phrase, add_special_tokens=False)["input_ids"]
    assert len(set(ids)) == len(ids), f"{phrase!r} repeats a token: {ids}"
    model = AutoModelForCausalLM.from_pretrained(src, dtype=torch.float32)
    hidden, vocab = model.config.hidden_size, model.config.vocab_size
    assert len(ids) < hidden
    basis = torch.eye(hidden)
    with torch.no_grad():
        for layer in model.model.layers:  # the residual stream is the current token's embedding
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        model.model.norm.weight.fill_(1.0)
        embed = model.model.embed_tokens.weight
        embed[:] = basis[0]  # every other token starts the phrase
        head = torch.zeros(vocab, hidden)
        head[ids[0]] += 5 * basis[0]
        for i, token in enumerate(ids):
            embed[token] = basis[i + 1]
            head[ids[(i + 1) % len(ids)]] += 5 * basis[i + 1]  # logit 40 for the next token, 0 else
    model.config.tie_word_embeddings = False
    model.lm_head.weight = torch.nn.Parameter(head)
    dst.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(dst)
    tok.save_pretrained(dst)
    return dst


def pipeline_config(root: Path, tiny: Path, loopy: Path) -> dict[str, Any]:
    """workflow/configs/smoke.yaml with the paper's names for two runs, the base model and two benchmarks."""
    smoke = yaml.safe_load((REPO / "workflow" / "configs" / "smoke.yaml").read_text(encoding="utf-8"))
    config = copy.deepcopy(smoke)
    config["name"], config["outdir"] = "report-test", str(root / "out")
    model = {"hf_id": None, "revision": None, "enable_thinking": None, "tiny": None}
    config["models"] = {BASE: {**model, "path": str(tiny)}, "loopy": {**model, "path": str(loopy)}}
    config["datasets"]["train"] = {"arith": smoke["datasets"]["train"]["arith-train"]}
    config["datasets"]["eval"] = {
        "math500": {**smoke["datasets"]["eval"]["arith-test"], "expected_rows": 6,
                    "synthetic": {"task": "arithmetic", "count": 6, "seed": 2, "min_depth": 1, "max_depth": 2}},
        "arc-c": {**smoke["datasets"]["eval"]["arith-choice"], "expected_rows": 4,
                  "synthetic": {"task": "arithmetic", "count": 4, "seed": 3, "min_depth": 1, "max_depth": 2}},
    }  # fmt: skip
    config["training"].update(train_batch_size=2, ppo_mini_batch_size=2, rollout_n=4, max_steps=3,
                              max_response_length=24, save_freq=3, val_sets=[])  # fmt: skip
    base = {"data": "arith", "epochs": 1, "parent": None, "max_response_length": None, "extra_tokens": 0}
    config["experiments"] = {
        RUNS[0]: {**base, "model": BASE, "algorithm": "grpo", "lie": "off"},
        RUNS[1]: {**base, "model": BASE, "algorithm": "gspo", "lie": "on"},
        RUNS[2]: {**base, "model": "loopy", "algorithm": "gspo", "lie": "on", "max_response_length": 128},
    }
    config["evaluation"].update(benchmarks=list(BENCHMARKS), base_models=[BASE], budgets=[6, 48],
                                max_tokens=48, in_domain=["math500"], out_of_domain=["arc-c"],
                                grade_workers=1)  # fmt: skip
    config["runs"] = []
    # the report's runs are sampled by transformers (smoke.yaml's generate_by names smoke_grpo)
    config["engines"]["generate_by"] = {}
    return config


def _build(root: Path) -> SimpleNamespace:
    from lie.cli import main
    from lie.config import RunSettings, load_config, read_config
    from lie.config.layout import Layout
    from lie.engines.generation import load_tokenizer
    from lie.engines.trl import train as trl_train
    from lie.formats.graded import write_summary
    from lie.formats.jsonl import atomic_output, dumps
    from lie.stages.evaluate import evaluate
    from lie.stages.generate import run_generate
    from lie.stages.tiny import build_tiny

    corpus = [r["prompt"][0]["content"] for r in arithmetic_rows(40)] + ["The answer is \\boxed{7}."] * 5
    corpus += [LOOP_PHRASE * 3] * 20  # so that the phrase is a few distinct tokens
    tiny = build_tiny(root / "tiny", corpus, seed=0, vocab_size=300)
    loopy = build_looping_model(tiny, root / "loopy")
    cfg = write_config(root / "config.yaml", pipeline_config(root, tiny, loopy))
    load_config(cfg)  # a valid config
    config = read_config(cfg)  # as written: the tests read and edit it
    layout = Layout(Config.of(config))
    for bench in BENCHMARKS:
        out = layout.dataset_file(bench)
        assert main(["data", bench, "--config", str(cfg), "--out", str(out), "--no-progress"]) == 0
    train_file = write_parquet(root / "arith.reflen.parquet", arithmetic_rows(6, ref_len=40))
    for run in RUNS:
        model = layout.base_model(config["experiments"][run]["model"])
        trl_train.train(
            Config.of(config), RunSettings.of(Config.of(config), run), train_file, model, threads=1
        )
        assert main(["merge", run, "--config", str(cfg)]) == 0
    for key in [*RUNS, BASE]:
        model = layout.model_for(key)
        gens = []
        for bench in BENCHMARKS:
            out = layout.generations(key, bench)
            run_generate(
                Config.of(config),
                str(model),
                bench,
                layout.dataset_file(bench),
                out,
                engine="hf",
                progress=False,
            )
            gens.append(str(out))
        scores, summary = evaluate(Config.of(config), gens, load_tokenizer(str(model)), progress=False)
        with atomic_output(layout.graded(key, "scores").with_suffix(".jsonl")) as handle:
            handle.writelines(dumps(line) + "\n" for line in scores)
        write_summary(summary, str(layout.summary(key)))
    return SimpleNamespace(root=root, cfg=cfg, config=config, layout=layout, tiny=tiny, loopy=loopy)


@functools.cache
def pipeline() -> SimpleNamespace:
    """The finished pipeline (built on first use, shared by every test module of the process)."""
    root = Path(tempfile.mkdtemp(prefix="lie-report-test-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    return _build(root)


def fresh_copy(tmp: Path) -> SimpleNamespace:
    """A private copy of the pipeline's outputs (for tests that break or rewrite files)."""
    base = pipeline()
    out = tmp / "out"
    shutil.copytree(base.layout.root, out, ignore=shutil.ignore_patterns("checkpoints", "models", "base"))
    config = copy.deepcopy(base.config)
    config["outdir"] = str(out)
    from lie.config.layout import Layout

    return SimpleNamespace(root=tmp, cfg=write_config(tmp / "config.yaml", config), config=config,
                           layout=Layout(Config.of(config)), tiny=base.tiny, loopy=base.loopy)  # fmt: skip


@functools.cache
def reported() -> SimpleNamespace:
    """A copy of the pipeline's outputs with ``lie report`` run on it once per process (read-only)."""
    from lie.cli import main

    copy = fresh_copy(Path(tempfile.mkdtemp(prefix="lie-reported-")))
    atexit.register(shutil.rmtree, copy.root, ignore_errors=True)
    assert main(["report", "--config", str(copy.cfg)]) == 0
    return copy
