"""Prompt text and token ids: the question template and the model's chat template.

The template changes scores, so it lives in config and is recorded with the data (lighteval's
rule). Prompts go through the tokenizer's chat template with a generation prompt, as verl does
for the ``prompt`` column; too long prompts are cut on the left (``data.truncation=left``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lie.core.errors import LieError

# SPEC section 3: the Qwen files' instruction after the question.


def render_question(template: str, question: str, **fields: Any) -> str:
    """The user message text: ``template`` with ``{question}`` (and any other fields) filled in."""
    try:
        return template.format(question=question, **fields)
    except (KeyError, IndexError, ValueError) as exc:
        raise LieError(
            f"prompt template {template!r} cannot be filled ({exc}); use {{question}} for the question "
            "and {{ }} for literal braces"
        ) from None


def chat_messages(text: str, system: str | None = None) -> list[dict[str, str]]:
    messages = [{"role": "system", "content": system}] if system else []
    messages.append({"role": "user", "content": text})
    return messages


def prompt_token_ids(
    tokenizer: Any,
    messages: Sequence[dict[str, str]],
    enable_thinking: bool | None = None,
    max_prompt_tokens: int | None = None,
) -> list[int]:
    """Token ids of ``messages`` through the chat template, ready for generation."""
    kwargs: dict[str, Any] = {}
    if enable_thinking is not None:
        kwargs["enable_thinking"] = enable_thinking
    if getattr(tokenizer, "chat_template", None):
        text = tokenizer.apply_chat_template(
            list(messages), add_generation_prompt=True, tokenize=False, **kwargs
        )
    else:
        raise LieError(
            "the tokenizer has no chat template; every model of this pipeline needs one "
            "(base models such as Qwen3-*-Base ship one)"
        )
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    if max_prompt_tokens is not None and len(ids) > max_prompt_tokens:
        ids = ids[-max_prompt_tokens:]
    return list(ids)
