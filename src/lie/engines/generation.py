"""Sampling completions: one small interface, two engines.

- ``hf``: a transformers model sampled in batches (``lie.engines.sampling``) on the CPU (or one GPU): the
  smoke run, the study, tests, tiny models;
- ``vllm``: vLLM: on GPUs (the paper's scale) in the GPU image, and on a CPU in the second
  environment ``.venv-vllm`` (``make venv-vllm``: vLLM's CPU build of the same version), where the
  same code runs with vLLM's CPU settings from the environment (``VLLM_CPU_KVCACHE_SPACE``,
  ``VLLM_ENABLE_V1_MULTIPROCESSING=0`` for an in-process engine, ``OMP_NUM_THREADS``).

Both take prompts as token ids and return, for every prompt, ``n`` completions with their token
ids (the end-of-sequence token included when the model stopped, as verl counts it), the text
decoded without special tokens, whether the model stopped or hit its token budget, that budget and
the sample's seed.

Every sample is its own request with its own seed, ``sample_seed(prompt seed, j)``: vLLM 0.24
seeds the n children of one request ``seed + j`` (``v1/engine/parallel_sampling.py``), so with
per-prompt seeds ``base + i`` sample j of prompt i would share its noise with sample j - 1 of
prompt i + 1. Callers give each prompt (or each sample, as a prompt with ``n = 1``) a seed that is
itself a hash of (base seed, problem, sample), so a shard gives the same samples whichever shards
ran before it. The token budget is ``max_tokens`` capped at the model's context minus the prompt,
in both engines, as vLLM caps it (``v1/core/sched/utils.py``, ``check_stop``).
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import InitVar, dataclass
from typing import TYPE_CHECKING, Any, Protocol

from lie.core.errors import LieError
from lie.engines.gpu_env import check_driver
from lie.formats.model_folder import check_model_folder
from lie.formats.prompts import chat_messages, prompt_token_ids

if TYPE_CHECKING:
    from lie.engines.sampling import Banned

log = logging.getLogger(__name__)

ENGINES = ("hf", "vllm")
# Recorded in shard manifests: a run with another rule never resumes from these shards.
SEED_RULE = "sample_seed(sample_seed(base, problem, sample), 0); sample_seed = blake2b-64 >> 1"
# vLLM 0.24 (sampling_params.py): temperatures in [0, 2]; below 1e-5 greedy, which refuses n > 1;
# between that and 0.01 raised to 0.01 with a warning.
MAX_SAMPLES = 4096  # samples of one problem: the paper draws at most 32; more is a typo, not a run
MAX_TOKENS = 1 << 20  # a response's token budget: beyond any model's context
MAX_TEMPERATURE, MIN_SAMPLING_TEMPERATURE, GREEDY_BELOW = 2.0, 0.01, 1e-5
HF_ENGINE_ARGS = ("device", "dtype", "max_model_len", "batch_size")


@dataclass(frozen=True)
class SamplingSettings:
    """What every sample is drawn with; ``keys`` names the config key of each field in errors."""

    n: int = 1
    max_tokens: int = 8192
    temperature: float = 1.0
    top_p: float = 1.0
    keys: InitVar[Mapping[str, str] | None] = None

    def __post_init__(self, keys: Mapping[str, str] | None) -> None:
        name = {f: (keys or {}).get(f, f) for f in ("n", "max_tokens", "temperature", "top_p")}
        message = _sampling_problem(self, name)
        if message:
            raise LieError(message)


def _sampling_problem(s: SamplingSettings, name: Mapping[str, str]) -> str | None:
    """The first setting vLLM 0.24 would refuse or silently change, as a message with the fix."""
    if not isinstance(s.n, int) or not 1 <= s.n <= MAX_SAMPLES:
        return f"{name['n']} must be an integer in [1, {MAX_SAMPLES}] (samples of a problem), got {s.n!r}"
    if not isinstance(s.max_tokens, int) or not 1 <= s.max_tokens <= MAX_TOKENS:
        return f"{name['max_tokens']} must be an integer in [1, {MAX_TOKENS}], got {s.max_tokens!r}"
    t = s.temperature
    if not 0 <= t <= MAX_TEMPERATURE:
        return f"{name['temperature']} is {t}, outside vLLM's range [0, 2]: set it within [0, 2]"
    if 0 < t < MIN_SAMPLING_TEMPERATURE:
        return (
            f"{name['temperature']} is {t}: vLLM raises temperatures below 0.01 to 0.01; "
            "set 0 (greedy) or at least 0.01"
        )
    if t < GREEDY_BELOW and s.n > 1:
        return (
            f"{name['temperature']} is {t} (greedy) with {name['n']} = {s.n}: greedy samples are one "
            "sample repeated and vLLM refuses n > 1; set n to 1 or a temperature of at least 0.01"
        )
    if not 0 < s.top_p <= 1:
        return f"{name['top_p']} must be in (0, 1], got {s.top_p}"
    return None


@dataclass(frozen=True)
class Completion:
    token_ids: list[int]
    text: str
    finish_reason: str  # "stop" (end of sequence) or "length" (token budget reached)
    max_tokens: int | None = None  # the budget it had: max_tokens capped at context minus prompt
    seed: int | None = None  # the seed it was drawn with


class Engine(Protocol):
    tokenizer: Any
    max_model_len: int  # the context, prompt included

    def generate(
        self, prompts: Sequence[Sequence[int]], settings: SamplingSettings, seeds: Sequence[int]
    ) -> list[list[Completion]]: ...


def sample_seed(*keys: int) -> int:
    """A seed in [0, 2**63) hashed from ``keys`` (fits vLLM's int64 and torch's seeds).

    Unlike ``base + index``, seeds of neighbouring problems and samples share nothing.
    """
    digest = hashlib.blake2b(",".join(str(int(k)) for k in keys).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


@dataclass(frozen=True)
class SampleRequest:
    """One sample to draw: which prompt, with which seed and token budget."""

    prompt: int
    seed: int
    max_tokens: int


def token_budget(prompt_tokens: int, max_tokens: int, max_model_len: int, where: str = "a prompt") -> int:
    """``max_tokens`` capped at the context left after the prompt (vLLM stops there too)."""
    room = max_model_len - prompt_tokens
    if room < 1:
        raise LieError(
            f"{where} has {prompt_tokens} tokens, which fills the model's {max_model_len}-token context; "
            "shorten it or raise the context (--engine-arg max_model_len=N where the model allows it)"
        )
    return min(max_tokens, room)


def plan_requests(
    prompts: Sequence[Sequence[int]], settings: SamplingSettings, seeds: Sequence[int], max_model_len: int
) -> list[SampleRequest]:
    """One request per sample, prompt by prompt: sample j of a prompt seeded s gets ``sample_seed(s, j)``."""
    if len(seeds) != len(prompts):
        raise LieError(f"{len(prompts)} prompts but {len(seeds)} seeds: give one seed per prompt")
    out: list[SampleRequest] = []
    for i, (ids, seed) in enumerate(zip(prompts, seeds)):
        budget = token_budget(len(ids), settings.max_tokens, max_model_len, f"prompt {i} of the batch")
        out.extend(SampleRequest(i, sample_seed(seed, j), budget) for j in range(settings.n))
    return out


def group_by_prompt(
    requests: Sequence[SampleRequest], completions: Sequence[Completion], prompts: int
) -> list[list[Completion]]:
    out: list[list[Completion]] = [[] for _ in range(prompts)]
    for request, completion in zip(requests, completions, strict=True):
        out[request.prompt].append(completion)
    return out


def checked_finish(reason: str | None) -> str:
    """``stop`` or ``length``; anything else (vLLM's abort, error, repetition) stops the job."""
    if reason in ("stop", "length"):
        return reason
    raise LieError(
        f"vLLM finished a sample with reason {reason!r} (aborted or failed, not a stop): "
        "nothing of this shard is kept; rerun to redo it"
    )


TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt", "tokenizer.model")


def load_tokenizer(
    model_path: str, trust_remote_code: bool = False, revision: str | None = None, chat: bool = False
):
    """The tokenizer of the model folder ``model_path``; any failure is one line naming the folder.

    ``chat``: its chat template must render one user message (every prompt of the pipeline goes
    through it). A folder is first checked file by file (``lie.formats.model_folder``).
    """
    from transformers import AutoTokenizer

    if revision is None and os.path.isdir(model_path):
        check_model_folder(model_path, weights=False)
    try:
        tokenizer = AutoTokenizer.from_pretrained(
            model_path, trust_remote_code=trust_remote_code, revision=revision
        )
    except (MemoryError, RecursionError):
        raise LieError(
            f"cannot load a tokenizer from {model_path!r}: its files are too large or deep"
        ) from None
    except Exception as exc:  # the tokenizers and transformers raise anything on a broken file
        files = (
            ", ".join(n for n in TOKENIZER_FILES if os.path.isfile(os.path.join(model_path, n))) or "no file"
        )
        raise LieError(f"cannot load a tokenizer from {model_path!r} ({files}): {_reason(exc)}") from None
    if chat:
        prompt_token_ids(tokenizer, chat_messages("What is 1 + 1?"), where=f"model folder {model_path}")
    return tokenizer


def _reason(exc: BaseException) -> str:
    """An exception as one short line: its type and the first line of its message."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300]}" if text else type(exc).__name__


def load_model(model_path: str, trust_remote_code: bool = False, **kwargs: Any) -> Any:
    """A causal LM from the model folder ``model_path`` (checked first); any failure is one line."""
    from transformers import AutoModelForCausalLM

    if os.path.isdir(model_path):
        check_model_folder(model_path)
    try:
        return AutoModelForCausalLM.from_pretrained(model_path, trust_remote_code=trust_remote_code, **kwargs)
    except Exception as exc:  # a config transformers cannot build, weights of the wrong shapes
        raise LieError(f"cannot load a model from {model_path!r}: {_reason(exc)}") from None


def check_finite(model: Any, model_path: str, token_id: int = 0) -> None:
    """One forward pass over one token: NaN or infinite logits are broken weights, named in one line.

    Every weight but the untied embedding rows of other tokens enters these logits, so a NaN almost
    anywhere shows; the cost is one token (checking every tensor of an 8B model would read 16 GB).
    """
    import torch

    device = next(model.parameters()).device
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([[int(token_id)]], device=device)).logits
    if not bool(torch.isfinite(logits).all()):
        raise broken_weights(model_path)


def check_finite_vllm(llm: Any, model_path: str, token_id: int = 0) -> None:
    """``check_finite`` for vLLM: one greedy token from a one-token prompt, and its logprob.

    vLLM 0.24 samples NaN logits without a word (all NaN: token 0 at every step, each sample cut at
    its budget); its logprobs are the log-softmax of the raw logits, NaN when any logit is NaN or +inf.
    """
    import math

    from vllm import SamplingParams, TokensPrompt

    params = SamplingParams(max_tokens=1, temperature=0.0, logprobs=1)
    (result,) = llm.generate([TokensPrompt(prompt_token_ids=[int(token_id)])], params, use_tqdm=False)
    (out,) = result.outputs
    step = out.logprobs[0] if out.logprobs and out.token_ids else {}
    sampled = step.get(out.token_ids[0]) if step else None
    if sampled is None or not math.isfinite(sampled.logprob):
        raise broken_weights(model_path)


def broken_weights(model_path: str) -> LieError:
    """The one line for NaN or infinite logits, the same from either engine (and TRL)."""
    return LieError(
        f"model folder {model_path}: the model's logits are NaN or infinite on a one-token input: its "
        "weights (model.safetensors) are broken; fetch or copy the model again, or retrain it"
    )


class HFEngine:
    """A transformers model sampled in batches (``lie.engines.sampling``), each sample with its own seed.

    Small models, mostly on a CPU (the smoke run, the study, tests); float32 there, since bfloat16
    matrix products are slow on most CPUs.
    """

    def __init__(
        self,
        model_path: str,
        trust_remote_code: bool = False,
        device: str | None = None,
        dtype: str | None = None,
        max_model_len: int | None = None,
        batch_size: int = 64,
    ):
        import torch

        self.torch = torch
        self.tokenizer = load_tokenizer(model_path, trust_remote_code, chat=True)
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        dtype = dtype or ("auto" if self.device != "cpu" else "float32")
        self.batch_size = int(batch_size)
        self.model = load_model(model_path, trust_remote_code, dtype=dtype).to(self.device)
        self.model.eval()
        self.max_model_len = max_model_len or _context_length(self.model.config, model_path)
        self.eos_ids = _eos_ids(self.tokenizer, self.model)
        pad = self.tokenizer.pad_token_id
        self.pad_id = pad if pad is not None else self.eos_ids[0]
        check_finite(self.model, model_path, self.eos_ids[0])
        # Given a prompt's token ids, the rule of what its samples may not draw next (None: no rule):
        # set by the study's forced-depth probe (lie.study.stages.probe); vLLM has no such hook here.
        self.constraint: Callable[[Sequence[int]], Banned | None] | None = None

    def generate(
        self, prompts: Sequence[Sequence[int]], settings: SamplingSettings, seeds: Sequence[int]
    ) -> list[list[Completion]]:
        from lie.engines.sampling import TokenRequest, sample_batch  # lazy: torch, at its top

        requests = plan_requests(prompts, settings, seeds, self.max_model_len)
        greedy = settings.temperature < GREEDY_BELOW
        rows = [
            TokenRequest(
                prompt_ids=list(prompts[r.prompt]),
                max_tokens=r.max_tokens,
                temperature=0.0 if greedy else settings.temperature,
                top_p=settings.top_p,
                seed=r.seed,
            )
            for r in requests
        ]
        rules = [self.constraint(r.prompt_ids) for r in rows] if self.constraint else None
        done = []
        for start in range(0, len(rows), self.batch_size):
            batch = rows[start : start + self.batch_size]
            banned = rules[start : start + self.batch_size] if rules else None
            for request, sample in zip(
                requests[start : start + self.batch_size],
                sample_batch(self.model, batch, self.eos_ids, self.pad_id, banned=banned),
            ):
                text = self.tokenizer.decode(sample.token_ids, skip_special_tokens=True)
                done.append(
                    Completion(sample.token_ids, text, sample.finish_reason, request.max_tokens, request.seed)
                )
        return group_by_prompt(requests, done, len(prompts))


class VLLMEngine:
    """vLLM offline inference; prompts as token ids, one seeded ``n = 1`` request per sample.

    ``batch_invariant=True`` sets ``VLLM_BATCH_INVARIANT=1`` before vLLM loads (vLLM's beta mode
    whose outputs do not depend on the batch; slower).
    """

    def __init__(
        self,
        model_path: str,
        trust_remote_code: bool = False,
        batch_invariant: bool = False,
        **engine_kwargs: Any,
    ):
        if batch_invariant:
            _enable_batch_invariance()
        try:
            from vllm import LLM
            from vllm.platforms import current_platform
        except ImportError:
            raise LieError(
                "engine 'vllm' needs vLLM, which lives in the GPU image (containers/) and, for a CPU, in "
                ".venv-vllm (make venv-vllm; run its bin/lie); or use engine 'hf'"
            ) from None
        if not current_platform.is_cpu():  # vLLM's CPU build needs no driver
            check_driver()  # an old driver otherwise fails deep inside vLLM's engine start
        else:
            # vLLM 0.24's CPU sampler cannot resume a seeded request whose prompt was split over two
            # scheduler steps ("CPU Generator does not use offset"), and every request here is seeded:
            # on the CPU a prompt is scheduled whole (vLLM then raises the step's token budget to at
            # least the context). tests/test_vllm_cpu.py holds the tripwire.
            engine_kwargs.setdefault("enable_chunked_prefill", False)
        if os.path.isdir(model_path):  # before vLLM's engine starts: one line, not a worker's traceback
            check_model_folder(model_path)
            load_tokenizer(model_path, trust_remote_code, chat=True)
        self.llm = LLM(model=model_path, trust_remote_code=trust_remote_code, **engine_kwargs)
        self.tokenizer = self.llm.get_tokenizer()
        # after start-up: vLLM may have fitted max_model_len to the KV cache (core_client.py)
        self.max_model_len = int(self.llm.llm_engine.model_config.max_model_len)
        check_finite_vllm(self.llm, model_path, self.tokenizer.eos_token_id or 0)

    def generate(
        self, prompts: Sequence[Sequence[int]], settings: SamplingSettings, seeds: Sequence[int]
    ) -> list[list[Completion]]:
        from vllm import SamplingParams, TokensPrompt

        requests = plan_requests(prompts, settings, seeds, self.max_model_len)
        params = [
            SamplingParams(
                n=1,
                temperature=settings.temperature,
                top_p=settings.top_p,
                max_tokens=r.max_tokens,
                seed=r.seed,
                skip_special_tokens=True,
            )
            for r in requests
        ]
        inputs = [TokensPrompt(prompt_token_ids=list(prompts[r.prompt])) for r in requests]
        results = self.llm.generate(inputs, params, use_tqdm=False)
        done = []
        for r, result in zip(requests, results, strict=True):
            (o,) = result.outputs
            done.append(
                Completion(list(o.token_ids), o.text, checked_finish(o.finish_reason), r.max_tokens, r.seed)
            )
        return group_by_prompt(requests, done, len(prompts))


def engine_version(kind: str) -> str:
    """The installed distribution that samples for ``kind``: ``vllm`` (GPU image) or ``vllm-cpu``, or transformers."""
    from importlib.metadata import PackageNotFoundError, version

    for name in ("vllm", "vllm-cpu") if kind == "vllm" else ("transformers",):
        try:
            return f"{name}=={version(name)}"
        except PackageNotFoundError:
            continue
    return "not installed"


def batch_invariant_mode(kind: str, engine_kwargs: Mapping[str, Any] | None) -> bool | None:
    """Whether vLLM runs in its batch-invariant mode (an engine argument or the environment)."""
    if kind != "vllm":
        return None
    return bool((engine_kwargs or {}).get("batch_invariant")) or os.environ.get("VLLM_BATCH_INVARIANT") == "1"


def _enable_batch_invariance() -> None:
    """vLLM reads ``VLLM_BATCH_INVARIANT`` when its modules load, so it must be set first."""
    if "vllm" in sys.modules and os.environ.get("VLLM_BATCH_INVARIANT") != "1":
        raise LieError(
            "batch_invariant=true needs VLLM_BATCH_INVARIANT=1 before vLLM is imported, and it already "
            "is: set VLLM_BATCH_INVARIANT=1 in the environment instead"
        )
    os.environ["VLLM_BATCH_INVARIANT"] = "1"


def _context_length(config: Any, model_path: str) -> int:
    for name in ("max_position_embeddings", "n_positions", "max_sequence_length"):
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    raise LieError(
        f"the config of {model_path!r} states no context length; pass --engine-arg max_model_len=N"
    )


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
        unknown = sorted(set(engine_kwargs) - set(HF_ENGINE_ARGS))
        if unknown:
            raise LieError(
                f"engine 'hf' takes no argument {', '.join(unknown)}; its engine arguments: "
                f"{', '.join(HF_ENGINE_ARGS)}"
            )
        return HFEngine(model_path, trust_remote_code=trust_remote_code, **engine_kwargs)
    if kind == "vllm":
        return VLLMEngine(model_path, trust_remote_code=trust_remote_code, **engine_kwargs)
    raise LieError(f"unknown generation engine {kind!r}: use one of {ENGINES}")
