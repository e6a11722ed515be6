"""A tiny model and tokenizer built locally (no hub): Qwen3 architecture, random weights.

The smoke run, the study and the tests use it so that every stage runs on a CPU in seconds.
The tokenizer is a byte-level BPE trained on a corpus given by the caller (the smoke data), with
Qwen's chat markers, so any text round-trips and ``apply_chat_template`` works as for Qwen3.
``lie base-model NAME`` builds one for a model entry with ``tiny:`` (its corpus: data sets of the config).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

PAD, BOS_CHAT, EOS_CHAT = "<|endoftext|>", "<|im_start|>", "<|im_end|>"
SPECIAL_TOKENS = [PAD, BOS_CHAT, EOS_CHAT]

# Qwen-style chat template (the user turn, then the assistant's generation prompt), with Qwen3's
# rule for ``enable_thinking=False``: an empty think block opens the answer.
CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<|im_start|>assistant\\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false -%}{{ '<think>\\n\\n</think>\\n\\n' }}{%- endif -%}"
    "{%- endif -%}"
)

BASE_CORPUS = [
    "Let's think step by step and output the final answer within \\boxed{}.",
    "The answer is \\boxed{42}. Wait, let me check: 6 * 7 = 42. So the final answer is 42.",
    "0 1 2 3 4 5 6 7 8 9 + - * / = ( ) [ ] { } . , ; : ? ! A B C D E F G H I J",
    "First, second, then, therefore, so, hence, but, wait, check, verify, answer, step.",
]


def build_tokenizer(corpus: Iterable[str], vocab_size: int = 512):
    """A byte-level BPE tokenizer trained on ``corpus`` plus a small base corpus."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(list(BASE_CORPUS) + list(corpus), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token=PAD, eos_token=EOS_CHAT, additional_special_tokens=[BOS_CHAT]
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.padding_side = "left"
    return fast


def build_model(
    vocab_size: int,
    eos_id: int,
    pad_id: int,
    seed: int = 0,
    hidden: int = 64,
    layers: int = 2,
    head_dim: int | None = None,
):
    """A randomly initialised Qwen3 causal LM of about 100k parameters, 4 query and 2 key/value heads.

    ``head_dim`` defaults to ``hidden // 4``; vLLM's CPU attention needs 32, 64, 80, 96, 112, 128, ...
    (a head size of 16 fails at its first generate), so a tiny model vLLM samples sets 32.
    """
    import torch
    from transformers import GenerationConfig, Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(seed)
    config = Qwen3Config(
        vocab_size=vocab_size,
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=head_dim or hidden // 4,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        eos_token_id=eos_id,
        pad_token_id=pad_id,
        bos_token_id=None,
    )
    model = Qwen3ForCausalLM(config)
    model.generation_config = GenerationConfig(eos_token_id=eos_id, pad_token_id=pad_id, bos_token_id=None)
    return model


def build_tiny(
    out_dir: str | Path,
    corpus: Iterable[str] = (),
    seed: int = 0,
    vocab_size: int = 512,
    hidden: int = 64,
    layers: int = 2,
    train: Callable[[Any, Any], None] | None = None,
    head_dim: int | None = None,
) -> Path:
    """Write a tiny model and its tokenizer to ``out_dir`` (Hugging Face format).

    ``train(model, tokenizer)``, when given, runs between building and saving (the study's
    supervised stage, ``lie.stages.sft``).
    """
    out = Path(out_dir)
    tokenizer = build_tokenizer(corpus, vocab_size)
    model = build_model(
        len(tokenizer), tokenizer.eos_token_id, tokenizer.pad_token_id, seed, hidden, layers, head_dim
    )
    if train is not None:
        train(model, tokenizer)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(out)
    model.save_pretrained(out)
    log.info(
        "tiny model: %d parameters, vocabulary %d, written to %s", model.num_parameters(), len(tokenizer), out
    )
    return out
