"""Sampling completions: one small interface, two engines.

- ``hf``: transformers ``generate`` on the CPU (or one GPU): the smoke run, tests, tiny models;
- ``vllm``: vLLM on GPUs (the paper's scale), installed only in the GPU image.

Both take prompts as token ids and return, for every prompt, ``n`` completions with their token
ids (the end-of-sequence token included when the model stopped, as verl counts it), the text
decoded without special tokens, and whether the model stopped or hit ``max_tokens``. Each prompt
has its own seed, so a shard gives the same samples whichever shards ran before it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from lie.errors import LieError

log = logging.getLogger(__name__)

ENGINES = ("hf", "vllm")


@dataclass(frozen=True)
class SamplingSettings:
    n: int = 1
    max_tokens: int = 8192
    temperature: float = 1.0
    top_p: float = 1.0

    def __post_init__(self) -> None:
        if self.n < 1 or self.max_tokens < 1:
            raise LieError(
                f"sampling needs n >= 1 and max_tokens >= 1, got n={self.n}, max_tokens={self.max_tokens}"
            )
        if self.temperature < 0 or not 0 < self.top_p <= 1:
            raise LieError(
                f"sampling needs temperature >= 0 and 0 < top_p <= 1, got {self.temperature}, {self.top_p}"
            )


@dataclass(frozen=True)
class Completion:
    token_ids: list[int]
    text: str
    finish_reason: str  # "stop" (end of sequence) or "length" (max_tokens reached)


class Engine(Protocol):
    tokenizer: Any

    def generate(
        self, prompts: Sequence[Sequence[int]], settings: SamplingSettings, seeds: Sequence[int]
    ) -> list[list[Completion]]: ...


def prompt_seed(base_seed: int, prompt_index: int) -> int:
    """A per-prompt seed that does not depend on sharding (fits vLLM's and torch's 64-bit seeds)."""
    return (base_seed * 1_000_003 + prompt_index) % (2**31 - 1)


def load_tokenizer(model_path: str, trust_remote_code: bool = False, revision: str | None = None):
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(
            model_path, trust_remote_code=trust_remote_code, revision=revision
        )
    except OSError as exc:
        raise LieError(f"cannot load a tokenizer from {model_path!r}: {exc}") from None


class HFEngine:
    """transformers ``generate``, one prompt at a time with its own seed (small models, CPU)."""

    def __init__(
        self, model_path: str, trust_remote_code: bool = False, device: str | None = None, dtype: str = "auto"
    ):
        import torch
        from transformers import AutoModelForCausalLM

        self.torch = torch
        self.tokenizer = load_tokenizer(model_path, trust_remote_code)
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        try:
            self.model = AutoModelForCausalLM.from_pretrained(
                model_path, trust_remote_code=trust_remote_code, dtype=dtype
            ).to(self.device)
        except OSError as exc:
            raise LieError(f"cannot load a model from {model_path!r}: {exc}") from None
        self.model.eval()
        self.eos_ids = _eos_ids(self.tokenizer, self.model)
        pad = self.tokenizer.pad_token_id
        self.pad_id = pad if pad is not None else self.eos_ids[0]

    def generate(
        self, prompts: Sequence[Sequence[int]], settings: SamplingSettings, seeds: Sequence[int]
    ) -> list[list[Completion]]:
        torch = self.torch
        out = []
        for ids, seed in zip(prompts, seeds):
            torch.manual_seed(seed)
            input_ids = torch.tensor([list(ids)], device=self.device)
            sample = settings.temperature > 0
            with torch.no_grad():
                generated = self.model.generate(
                    input_ids,
                    attention_mask=torch.ones_like(input_ids),
                    do_sample=sample,
                    temperature=settings.temperature if sample else None,
                    top_p=settings.top_p if sample else None,
                    top_k=0 if sample else None,
                    max_new_tokens=settings.max_tokens,
                    num_return_sequences=settings.n,
                    eos_token_id=self.eos_ids,
                    pad_token_id=self.pad_id,
                )
            completions = []
            for row in generated[:, input_ids.shape[1] :].tolist():
                completions.append(self._completion(row))
            out.append(completions)
        return out

    def _completion(self, row: list[int]) -> Completion:
        for i, tok in enumerate(row):
            if tok in self.eos_ids:
                ids = row[: i + 1]
                return Completion(ids, self.tokenizer.decode(ids, skip_special_tokens=True), "stop")
        return Completion(row, self.tokenizer.decode(row, skip_special_tokens=True), "length")


class VLLMEngine:
    """vLLM offline inference; prompts as token ids, one seeded request per prompt."""

    def __init__(self, model_path: str, trust_remote_code: bool = False, **engine_kwargs: Any):
        try:
            from vllm import LLM
        except ImportError:
            raise LieError(
                "engine 'vllm' needs vLLM, which lives in the GPU image (containers/); "
                "on a CPU use engine 'hf'"
            ) from None
        self.llm = LLM(model=model_path, trust_remote_code=trust_remote_code, **engine_kwargs)
        self.tokenizer = self.llm.get_tokenizer()

    def generate(
        self, prompts: Sequence[Sequence[int]], settings: SamplingSettings, seeds: Sequence[int]
    ) -> list[list[Completion]]:
        from vllm import SamplingParams, TokensPrompt

        params = [
            SamplingParams(
                n=settings.n,
                temperature=settings.temperature,
                top_p=settings.top_p,
                max_tokens=settings.max_tokens,
                seed=seed,
                skip_special_tokens=True,
            )
            for seed in seeds
        ]
        requests = [TokensPrompt(prompt_token_ids=list(ids)) for ids in prompts]
        results = self.llm.generate(requests, params, use_tqdm=False)
        return [
            [
                Completion(list(o.token_ids), o.text, "length" if o.finish_reason == "length" else "stop")
                for o in r.outputs
            ]
            for r in results
        ]


def _eos_ids(tokenizer: Any, model: Any) -> list[int]:
    ids: list[int] = []
    config_eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    for value in (config_eos, tokenizer.eos_token_id):
        for v in value if isinstance(value, (list, tuple)) else [value]:
            if v is not None and v not in ids:
                ids.append(int(v))
    if not ids:
        raise LieError("the model and tokenizer name no end-of-sequence token")
    return ids


def load_engine(kind: str, model_path: str, trust_remote_code: bool = False, **engine_kwargs: Any) -> Engine:
    """The generation engine ``kind`` (``hf`` or ``vllm``) for the model at ``model_path``."""
    if kind == "hf":
        return HFEngine(model_path, trust_remote_code=trust_remote_code, **engine_kwargs)
    if kind == "vllm":
        return VLLMEngine(model_path, trust_remote_code=trust_remote_code, **engine_kwargs)
    raise LieError(f"unknown generation engine {kind!r}: use one of {ENGINES}")
