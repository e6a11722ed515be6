"""The supervised model sampled as RL will sample it: the gates' measurements before any RL run.

``lie study-probe`` runs ``lie generate``'s code on the study's benchmark with the rollout settings
of ``training:`` (temperature, top_p, ``max_response_length`` tokens) and ``study.probe.n`` samples
per problem (GRPO's group size), so that the share of problems whose samples all get the same grade
is the trap index RL starts from. The pipeline's ``lie evaluate`` then grades the lines as usual.

``--forced`` is the third registration's forced-depth probe (docs/study/preregistration-v3.md):
``study.third.forced_probe.n`` samples a problem, drawn as above except that until a response has
written as many steps as its problem's depth (counted as ``lie study-responses`` counts depth
written: :func:`lie.tasks.chain.trace`), the end-of-sequence tokens, every token whose text holds
a backslash (the start of ``\\boxed``) and, a change after the registration (docs/study.md), every
token whose text holds a letter cannot be drawn. It measures what a full-depth answer of the model is
worth where natural samples almost never write one. Without the letter ban the stop-0.7 models wrote
"The answer is" and went on with text no step follows (16 of 848 samples reached the full depth): a step
is digits, operators, "=" and "." only, and the ban leaves the model those.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from lie.config.typed import Config
from lie.core.errors import LieError
from lie.stages.generate import SamplingRule, run_generate
from lie.study.spec import study_spec, training_limit
from lie.tasks import chain

FORCED_RULE = (
    "forced-depth: no end-of-sequence token, no token with a backslash or a letter before the problem's depth "
    "is written"
)


def rollout_sampling(config: Config) -> tuple[float, float, int]:
    """The rollouts' temperature, top_p and token limit, which the probe samples with: the settings of the
    study's runs (``lie.config.RunSettings``; they share them)."""
    spec = study_spec(config)
    run = config.run(spec.runs[0])
    return run.temperature, run.top_p, training_limit(config, spec)


def forced_depth(tokenizer: Any, eos_ids: Sequence[int]) -> Callable[[Sequence[int]], Any]:
    """Given a prompt's token ids, the rule its samples are drawn under: the end-of-sequence tokens and
    every token whose text holds a backslash or a letter are banned until the response has written as
    many steps as the chain problem in the prompt has operations."""

    def answers_or_words(text: str) -> bool:
        return "\\" in text or any(c.isascii() and c.isalpha() for c in text)

    texts = [tokenizer.decode([i]) for i in range(len(tokenizer))]
    stop = sorted(
        set(int(e) for e in eos_ids) | {i for i, text in enumerate(texts) if answers_or_words(text)}
    )

    def for_prompt(prompt_ids: Sequence[int]) -> Callable[[Sequence[int]], Sequence[int]]:
        text = tokenizer.decode(list(prompt_ids), skip_special_tokens=True)
        try:
            problem = chain.parse_question(text)
        except ValueError:
            raise LieError(
                f"the forced-depth probe needs arithmetic-chain prompts; got {text[:80]!r}"
            ) from None

        def banned(drawn: Sequence[int]) -> Sequence[int]:
            written = chain.trace(
                problem, tokenizer.decode(list(drawn), skip_special_tokens=True)
            ).depth_written
            return stop if written < problem.depth else ()

        return banned

    return for_prompt


def _force(engine: Any) -> None:
    if not hasattr(engine, "constraint"):
        raise LieError(
            f"the forced-depth probe samples with the hf engine only (got {type(engine).__name__}); "
            "set engines.generate: hf in the study's config"
        )
    engine.constraint = forced_depth(engine.tokenizer, engine.eos_ids)


def run_probe(
    config: Config,
    model: str,
    data: str | Path,
    out: str | Path,
    progress: bool = True,
    forced: bool = False,
) -> dict[str, Any]:
    """Sample ``model`` on the study's benchmark as the rollouts do (``forced``: under the forced-depth
    rule, with the third registration's sample count and seed); write ``lie generate`` lines to ``out``."""
    spec = study_spec(config)
    n, seed, rule = spec.probe_n, spec.probe_seed, None
    if forced:
        if spec.third is None:
            raise LieError(
                "--forced is the third registration's probe: the config has no study.third section"
            )
        n, seed, rule = spec.third.forced_n, spec.third.forced_seed, SamplingRule(FORCED_RULE, _force)
    temperature, top_p, max_tokens = rollout_sampling(config)
    return run_generate(
        config,
        model,
        spec.bench,
        data,
        out,
        n=n,
        max_tokens=max_tokens,
        seed=seed,
        progress=progress,
        rule=rule,
        temperature=temperature,
        top_p=top_p,
    )
