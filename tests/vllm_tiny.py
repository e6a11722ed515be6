"""A tiny model vLLM's CPU build can sample, shaped so that its samples say something.

``lie.stages.tiny`` builds it with head size 32 (vLLM's CPU attention has no kernel for 16). Random
weights of that size give near-uniform next-token distributions that ignore the prompt, and almost
never an end-of-sequence token; so the weights are reshaped (deterministically): larger embeddings
and layers (the answer depends on the prompt, and greedy decoding has clear winners), an untied
output head, and one residual dimension that no layer writes and that only the end-of-sequence row
of the head reads, so the model stops after a few dozen tokens on average; sampled, some samples
stop and some reach a 40-token budget.
"""

from __future__ import annotations

from pathlib import Path

HEAD_DIM = 32
CORPUS = [f"What is {a} + {b}? The answer is \\boxed{{{a + b}}}." for a in range(9) for b in range(9)]


def shaped_tiny(out: Path, eos_weight: float = 4.0, seed: int = 0) -> Path:
    """Write the model and its tokenizer to ``out`` (float32, Hugging Face format)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from lie.stages.tiny import build_tiny

    base = build_tiny(out.with_name(out.name + "-base"), CORPUS, seed=seed, vocab_size=400, head_dim=HEAD_DIM)
    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(base)
    generator = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        embed = model.get_input_embeddings().weight
        embed.mul_(10.0)
        embed[:, 0] = 0.5  # the constant dimension
        for name, weight in model.model.layers.named_parameters():
            if weight.dim() == 2:
                weight.mul_(3.0)
                if name.endswith(("o_proj.weight", "down_proj.weight")):
                    weight[0, :] = 0.0  # no layer writes the constant dimension
        head = torch.randn(embed.shape, generator=generator) * 0.3
        head[:, 0] = 0.0
        head[tokenizer.eos_token_id, 0] = eos_weight
        model.config.tie_word_embeddings = False
        model.lm_head.weight = torch.nn.Parameter(head)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out
