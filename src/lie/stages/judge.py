"""Running a judge model over responses (``lie behaviours --judge``): the stage of ``lie.analysis.judge``.

Each response, in parts of at most ``chunk_chars`` characters cut between sentences, goes into the
judge prompt; the judge (``lie.engines.generation``: vLLM on GPUs, ``hf`` for tiny models) answers
greedily, one request per part, and ``lie.analysis.judge.judgements`` adds the parts' counts up.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from lie.analysis.behaviours import Classifier
from lie.analysis.judge import Judgement, JudgePrompt, chunks, judgements, load_prompt
from lie.engines.generation import SamplingSettings, load_engine
from lie.formats.prompts import chat_messages, prompt_token_ids

log = logging.getLogger(__name__)


def judge_texts(
    texts: Sequence[str],
    classifier: Classifier,
    model: str,
    engine: str = "vllm",
    prompt: JudgePrompt | None = None,
    chunk_chars: int = 12000,
    max_tokens: int = 1024,
    batch: int = 256,
    engine_kwargs: dict[str, Any] | None = None,
    trust_remote_code: bool = False,
    engine_factory: Callable[[], Any] | None = None,
    keep_answers: bool = False,
) -> list[Judgement]:
    """Judge every text; one :class:`Judgement` per text, in order."""
    prompt = prompt or load_prompt()
    parts = [chunks(text, chunk_chars) for text in texts]
    flat = [part for pieces in parts for part in pieces]
    factory = engine_factory or (
        lambda: load_engine(engine, model, trust_remote_code=trust_remote_code, **(engine_kwargs or {}))
    )
    eng = factory()
    settings = SamplingSettings(n=1, max_tokens=max_tokens, temperature=0.0, top_p=1.0)
    answers: list[str] = []
    for start in range(0, len(flat), batch):
        block = flat[start : start + batch]
        ids = [prompt_token_ids(eng.tokenizer, chat_messages(prompt.render(p, classifier))) for p in block]
        outs = eng.generate(ids, settings, list(range(start, start + len(block))))
        answers.extend(out[0].text for out in outs)
        log.info("judged %d of %d parts", len(answers), len(flat))
    return judgements(parts, answers, classifier, keep_answers)
