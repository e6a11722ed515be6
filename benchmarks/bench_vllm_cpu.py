"""Start time and sampling speed of the two generation engines on the CPU, measured in one run.

Run: ``.venv/bin/python benchmarks/bench_vllm_cpu.py`` (after ``make venv-vllm``). It builds the
smoke run's tiny model (Qwen3, hidden 64, 2 layers, head size 32, random weights) and times, each
in a fresh process of its own environment, the ``hf`` engine (``.venv``, transformers, torch 2.13)
and the ``vllm`` engine (``.venv-vllm``, vLLM 0.24's CPU build, with ``make smoke``'s settings from
``engines.vllm_cpu`` of workflow/configs/smoke.yaml): the start (importing the engine's library and
building ``lie.engines.generation.load_engine``'s engine) and ``generate`` on the same prompts,
seeds and budget (tokens sampled per second, a warm-up call first). Every process uses one thread.
Prints one line per engine and the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PYTHONS = {"hf": REPO / ".venv" / "bin" / "python", "vllm": REPO / ".venv-vllm" / "bin" / "python"}


def smoke_vllm_cpu() -> dict:
    import yaml

    return yaml.safe_load((REPO / "workflow" / "configs" / "smoke.yaml").read_text())["engines"]["vllm_cpu"]


def measure(kind: str, model: str, prompts: int, max_tokens: int, engine_args: dict) -> dict:
    """In this process: start the engine, then time one generate call of ``prompts`` x 1 sample."""
    start = time.perf_counter()
    from lie.engines.generation import SamplingSettings, load_engine
    from lie.formats.prompts import prompt_token_ids

    engine = load_engine(kind, model, **engine_args)
    ready = time.perf_counter() - start
    ids = [
        prompt_token_ids(engine.tokenizer, [{"role": "user", "content": f"What is {i} + {i + 1}?"}])
        for i in range(prompts)
    ]
    settings = SamplingSettings(n=1, max_tokens=max_tokens, temperature=1.0)
    engine.generate(ids[:2], settings, [0, 1])  # warm-up
    begin = time.perf_counter()
    out = engine.generate(ids, settings, list(range(prompts)))
    seconds = time.perf_counter() - begin
    tokens = sum(len(c.token_ids) for group in out for c in group)
    return {"engine": kind, "start_s": ready, "tokens": tokens, "generate_s": seconds}


def run_worker(kind: str, model: str, prompts: int, max_tokens: int) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    engine_args: dict = {"batch_size": prompts} if kind == "hf" else {}
    if kind == "vllm":
        cpu = smoke_vllm_cpu()
        env.update({k: str(v) for k, v in cpu["env"].items()})
        engine_args.update(cpu["engine_args"])
    python = PYTHONS[kind]
    if not python.exists():
        sys.exit(f"{python} is missing: run `make venv` and `make venv-vllm` first")
    args = [str(python), __file__, "--worker", kind, "--model", model, "--prompts", str(prompts)]
    args += ["--max-tokens", str(max_tokens), "--engine-args", json.dumps(engine_args)]
    result = subprocess.run(args, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"the {kind} worker failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=64)
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--worker", choices=sorted(PYTHONS), help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--engine-args", default="{}", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(
            json.dumps(
                measure(args.worker, args.model, args.prompts, args.max_tokens, json.loads(args.engine_args))
            )
        )
        return
    from lie.stages.tiny import build_tiny

    with tempfile.TemporaryDirectory() as tmp:
        model = str(
            build_tiny(Path(tmp) / "tiny", ["What is 1 + 2? The answer is 3."], vocab_size=400, head_dim=32)
        )
        rows = [run_worker(kind, model, args.prompts, args.max_tokens) for kind in ("hf", "vllm")]
    for row in rows:
        rate = row["tokens"] / row["generate_s"]
        print(
            f"{row['engine']:5s} start {row['start_s']:6.1f} s   {row['tokens']} tokens in "
            f"{row['generate_s']:6.2f} s = {rate:7.0f} tokens/s"
        )
    hf, vllm = ({r["engine"]: r["tokens"] / r["generate_s"] for r in rows}[k] for k in ("hf", "vllm"))
    print(
        f"vllm / hf tokens/s: {vllm / hf:.2f}x ({args.prompts} prompts, max_tokens {args.max_tokens}, 1 thread)"
    )


if __name__ == "__main__":
    main()
