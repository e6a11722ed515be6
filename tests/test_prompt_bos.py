"""The evaluation prompt's token ids are training's: a BOS exactly where the chat template writes one.

verl 0.9.1 makes a rollout's prompt ids with its Continuous Token builder
(``verl.utils.tokenizer.continuous_token.ContinuousTokenBuilder._render_tokens``): the tokenizer's
``apply_chat_template(messages, tokenize=True, add_generation_prompt=True, return_dict=False)``, which
tokenizes the rendered text without added special tokens. ``lie.formats.prompts.prompt_token_ids``
(evaluation, TRL training) must give the same ids, for a Llama-3-like tokenizer (a BOS its
post-processor adds on ``add_special_tokens=True``) whose template has ``{{ bos_token }}`` and one whose
template has none. The authors' evaluation gives vLLM 0.24 the text, which it encodes with
``add_special_tokens=True`` (``vllm/renderers/base.py``, ``default_cmpl_tok_params``): one BOS more than
training's in both cases; the report's footnote says so.
"""

from __future__ import annotations

from typing import Any

import pytest
from tokenizers import processors

from lie.formats.prompts import chat_messages, prompt_token_ids
from lie.stages.tiny import build_tokenizer

BOS = "<|begin_of_text|>"
MESSAGES = chat_messages("What is 1 + 1?", system="Think first.")


def llama_like(bos_in_template: bool) -> Any:
    """The tiny tokenizer with a Llama-3 BOS: added by its post-processor when special tokens are asked for."""
    tokenizer = build_tokenizer(["What is 1 + 1?"], vocab_size=300)
    tokenizer.add_special_tokens({"bos_token": BOS})
    bos = tokenizer.bos_token_id
    tokenizer.backend_tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{BOS} $A", pair=f"{BOS} $A $B", special_tokens=[(BOS, bos)]
    )
    if bos_in_template:
        tokenizer.chat_template = "{{ bos_token }}" + tokenizer.chat_template
    return tokenizer


def authors_ids(tokenizer: Any) -> list[int]:
    """What vLLM 0.24's LLM.generate makes of the authors' text prompt (add_special_tokens=True)."""
    text = tokenizer.apply_chat_template(MESSAGES, add_generation_prompt=True, tokenize=False)
    return list(tokenizer.encode(text, add_special_tokens=True))


@pytest.mark.parametrize("bos_in_template, bos_count", [(True, 1), (False, 0)], ids=["bos", "no-bos"])
def test_the_prompt_ids_are_the_tokenization_verl_trains_on(bos_in_template, bos_count):
    tokenizer = llama_like(bos_in_template)
    ours = prompt_token_ids(tokenizer, MESSAGES)
    training = tokenizer.apply_chat_template(
        MESSAGES, tokenize=True, add_generation_prompt=True, return_dict=False
    )
    assert ours == list(training)
    assert ours.count(tokenizer.bos_token_id) == bos_count and (ours[0] == tokenizer.bos_token_id) == bool(
        bos_count
    )
    theirs = authors_ids(tokenizer)  # the difference the footnote states: one BOS more
    assert theirs == [tokenizer.bos_token_id] + ours
    # enable_thinking and left truncation act on the same ids
    thinking_off = prompt_token_ids(tokenizer, MESSAGES, enable_thinking=False, max_prompt_tokens=12)
    full = tokenizer.apply_chat_template(
        MESSAGES, tokenize=True, add_generation_prompt=True, return_dict=False, enable_thinking=False
    )
    assert thinking_off == list(full)[-12:]


@pytest.mark.heavy  # verl's import alone is ~12 s of CPU
@pytest.mark.parametrize("bos_in_template", [True, False], ids=["bos", "no-bos"])
def test_verls_own_builder_makes_the_same_ids(bos_in_template):
    from verl.utils.tokenizer.continuous_token_wiring import create_continuous_token_builder

    tokenizer = llama_like(bos_in_template)
    for model_type, thinking in (("llama", None), ("qwen3", False)):
        kwargs = {} if thinking is None else {"enable_thinking": thinking}
        builder = create_continuous_token_builder(
            tokenizer, hf_model_type=model_type, chat_template_kwargs=kwargs
        )
        assert builder.build_initial_tokens(list(MESSAGES)) == prompt_token_ids(tokenizer, MESSAGES, thinking)
