"""Batched token-in/token-out sampling with log-probs, in plain torch: vLLM's job where vLLM cannot run.

Used by the ``hf`` generation engine (``lie generate``, ``lie reflen`` on a CPU) and by verl's CPU
rollout (``lie.engines.verl.cpu.rollout``). Prompts of different lengths are left-padded into one
batch and decoded together with a KV cache; each row keeps its own temperature, top-p, top-k,
token budget and seed (a seeded row draws the same tokens whatever else is in its batch), and
stops at an end-of-sequence token (kept in the output, as vLLM keeps it) or at its budget. The
log-probs are those of the model's raw distribution (vLLM's default ``raw_logprobs``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class TokenRequest:
    """One prompt and its sampling parameters (vLLM's meaning: ``top_k <= 0`` is off, temperature 0 greedy)."""

    prompt_ids: Sequence[int]
    max_tokens: int
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = -1
    seed: int | None = None
    ignore_eos: bool = False


@dataclass
class SampledTokens:
    token_ids: list[int]
    log_probs: list[float]
    finish_reason: str  # "stop" (end of sequence) or "length" (its budget)


def _filtered_probs(logits: torch.Tensor, requests: Sequence[TokenRequest]) -> torch.Tensor:
    """Per-row sampling distributions after temperature, top-k and top-p (rows with temperature 0 unused)."""
    temps = torch.tensor([r.temperature if r.temperature > 0 else 1.0 for r in requests], dtype=logits.dtype)
    scaled = logits / temps[:, None]
    ordered, order = torch.sort(scaled, dim=-1, descending=True)
    rank = torch.arange(ordered.shape[-1])[None, :]
    top_k = torch.tensor([r.top_k if r.top_k > 0 else ordered.shape[-1] for r in requests])
    ordered = ordered.masked_fill(rank >= top_k[:, None], float("-inf"))
    probs = torch.softmax(ordered, dim=-1)
    top_p = torch.tensor([r.top_p for r in requests], dtype=probs.dtype)
    before = torch.cumsum(probs, dim=-1) - probs  # mass of the strictly more likely tokens
    probs = probs.masked_fill(before >= top_p[:, None], 0.0)
    probs = probs / probs.sum(dim=-1, keepdim=True)
    return torch.zeros_like(probs).scatter(-1, order, probs)


def _draw(
    probs: torch.Tensor, logits: torch.Tensor, requests: Sequence[TokenRequest], generators: list
) -> list[int]:
    tokens = []
    for row, request in enumerate(requests):
        if request.temperature <= 0:
            tokens.append(int(torch.argmax(logits[row])))
        else:
            tokens.append(int(torch.multinomial(probs[row], 1, generator=generators[row])))
    return tokens


# Given the tokens a row has drawn so far, the token ids it may not draw next.
Banned = Callable[[Sequence[int]], Sequence[int]]


def _ban(
    logits: torch.Tensor,
    banned: Sequence[Banned | None],
    out: Sequence[SampledTokens],
    active: Sequence[bool],
) -> torch.Tensor:
    """``logits`` with each active row's banned tokens at -inf (a row left with no token is refused)."""
    logits = logits.clone()
    for row, rule in enumerate(banned):
        if rule is None or not active[row]:
            continue
        ids = list(rule(out[row].token_ids))
        if ids:
            logits[row, ids] = float("-inf")
            if not torch.isfinite(logits[row]).any():
                raise ValueError(f"row {row}: every token is banned")
    return logits


@torch.no_grad()
def sample_batch(
    model: torch.nn.Module,
    requests: Sequence[TokenRequest],
    eos_ids: Sequence[int],
    pad_id: int,
    generator: torch.Generator | None = None,
    width: int = 0,
    banned: Sequence[Banned | None] | None = None,
) -> list[SampledTokens]:
    """Decode ``requests`` together; rows without a seed draw from ``generator`` (or torch's default).

    Prompts are left-padded to the longest of them, or to ``width`` if longer: with one fixed width
    a row's numbers no longer depend on how long the other prompts of its batch were. ``banned``, per
    row: the token ids that row may not draw next, given what it has drawn so far (the study's
    forced-depth probe); the log-probs stay those of the raw distribution.
    """
    if not requests:
        return []
    device = next(model.parameters()).device
    width = max([len(r.prompt_ids) for r in requests] + [int(width)])
    ids = torch.full((len(requests), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(requests), width), dtype=torch.long)
    for row, request in enumerate(requests):
        ids[row, width - len(request.prompt_ids) :] = torch.tensor(list(request.prompt_ids), dtype=torch.long)
        mask[row, width - len(request.prompt_ids) :] = 1
    generators = [
        torch.Generator().manual_seed(int(r.seed)) if r.seed is not None else generator for r in requests
    ]
    eos = set(int(e) for e in eos_ids)
    out = [SampledTokens([], [], "length") for _ in requests]
    active = [r.max_tokens > 0 for r in requests]
    past, step_ids = None, ids
    while any(active):
        positions = (mask.cumsum(-1) - 1).clamp(min=0)[:, -step_ids.shape[1] :]
        result = model(
            input_ids=step_ids.to(device),
            attention_mask=mask.to(device),
            position_ids=positions.to(device),
            past_key_values=past,
            use_cache=True,  # a checkpoint saved by a trainer may say use_cache: false in its config
        )
        past = result.past_key_values
        # Drawn on the CPU whatever the model's device: each seeded row has its own CPU generator, so a
        # seed draws the same token from the same distribution on a CPU and on a GPU.
        logits = result.logits[:, -1, :].float().cpu()
        log_probs = torch.log_softmax(logits, dim=-1)
        if banned is not None:
            logits = _ban(logits, banned, out, active)
        tokens = _draw(_filtered_probs(logits, requests), logits, requests, generators)
        for row, token in enumerate(tokens):
            if not active[row]:
                continue
            sample = out[row]
            sample.token_ids.append(token)
            sample.log_probs.append(float(log_probs[row, token]))
            if token in eos and not requests[row].ignore_eos:
                sample.finish_reason, active[row] = "stop", False
            elif len(sample.token_ids) >= requests[row].max_tokens:
                active[row] = False
        step_ids = torch.tensor([[t if a else pad_id] for t, a in zip(tokens, active)], dtype=torch.long)
        mask = torch.cat([mask, torch.tensor([[int(a)] for a in active], dtype=torch.long)], dim=1)
    return out
