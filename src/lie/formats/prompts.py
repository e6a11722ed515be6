"""Prompt text and token ids: the question template and the model's chat template.

The template changes scores, so it lives in config and is recorded with the data (lighteval's
rule). Prompts go through the tokenizer's chat template with a generation prompt, as verl does
for the ``prompt`` column; too long prompts are cut on the left (``data.truncation=left``).

The ids are training's: the rendered text tokenized with no special token added, as verl 0.9.1's
rollouts (``apply_chat_template(tokenize=True)``) and TRL's prompts (this function), so a BOS is
there exactly where the chat template writes ``{{ bos_token }}`` (tests/test_prompt_bos.py). The
authors' evaluation instead gives vLLM the text, which adds the tokenizer's BOS in front.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
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


RENDER_LIMIT_S = 10.0  # one chat message renders in milliseconds; a template looping for ever never ends


class _RenderTimeout(Exception):
    pass


@contextlib.contextmanager
def _time_bound(seconds: float) -> Iterator[None]:
    """Raise :class:`_RenderTimeout` in the block after ``seconds`` (a timer signal; the template's
    loops are Python code, so it stops them). Outside the main thread, where no handler runs, unbounded."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expired(signum: int, frame: Any) -> None:
        raise _RenderTimeout()

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def chat_messages(text: str, system: str | None = None) -> list[dict[str, str]]:
    messages = [{"role": "system", "content": system}] if system else []
    messages.append({"role": "user", "content": text})
    return messages


def prompt_token_ids(
    tokenizer: Any,
    messages: Sequence[dict[str, str]],
    enable_thinking: bool | None = None,
    max_prompt_tokens: int | None = None,
    where: str | None = None,
) -> list[int]:
    """Token ids of ``messages`` through the chat template, ready for generation.

    A template that raises (``raise_exception``), does not parse, renders no text or takes longer than
    :data:`RENDER_LIMIT_S` is one line naming the model folder (``where``, else the tokenizer's
    ``name_or_path``).
    """
    kwargs: dict[str, Any] = {}
    if enable_thinking is not None:
        kwargs["enable_thinking"] = enable_thinking
    folder = where or f"model folder {getattr(tokenizer, 'name_or_path', '') or '?'}"
    if not getattr(tokenizer, "chat_template", None):
        raise LieError(
            f"{folder}: the tokenizer has no chat template; every model of this pipeline needs one "
            "(base models such as Qwen3-*-Base ship one)"
        )
    try:
        with _time_bound(RENDER_LIMIT_S):
            text = tokenizer.apply_chat_template(
                list(messages), add_generation_prompt=True, tokenize=False, **kwargs
            )
    except _RenderTimeout:
        raise LieError(
            f"{folder}: the chat template did not render a {messages[-1].get('role', '?')} message within "
            f"{RENDER_LIMIT_S:g} s (a loop without end?); fix chat_template.jinja (or tokenizer_config.json's "
            "chat_template)"
        ) from None
    except (MemoryError, RecursionError) as exc:
        raise LieError(f"{folder}: the chat template does not render ({type(exc).__name__})") from None
    except Exception as exc:  # jinja2's TemplateError and whatever a template's own code raises
        first = (str(exc).strip().splitlines() or [""])[0][:300]
        raise LieError(
            f"{folder}: the chat template does not render a {messages[-1].get('role', '?')} message "
            f"({type(exc).__name__}: {first}); fix chat_template.jinja (or tokenizer_config.json's chat_template)"
        ) from None
    if not isinstance(text, str) or not text:
        raise LieError(f"{folder}: the chat template renders no text; fix chat_template.jinja")
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    if max_prompt_tokens is not None and len(ids) > max_prompt_tokens:
        ids = ids[-max_prompt_tokens:]
    return list(ids)
