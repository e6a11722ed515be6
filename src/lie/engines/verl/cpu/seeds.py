"""Per-sample seeds for a rollout server on the CPU, so that a run's samples do not depend on timing.

verl's agent loop sends no seed; drawn from one generator, a sample's tokens would depend on which
requests arrived together. Both CPU rollouts (transformers, ``lie.engines.verl.cpu.rollout``; verl's
vLLM server, ``lie.engines.verl.cpu.vllm_rollout``) seed each request by (rollout seed, step, the
request's prompt and settings, the sample it is, the k-th such request of the step).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from lie.engines.generation import sample_seed


class SampleSeeds:
    """The seeds of one server's requests, counted per step."""

    def __init__(self, rollout_seed: int) -> None:
        self.rollout_seed = int(rollout_seed)
        self.arrivals: dict[tuple[str, tuple[int, ...]], int] = {}  # this step's requests so far
        self.step: int | None = None

    def seed(self, step: int | None, key: Any, sample: Sequence[int] | None = None) -> int:
        """A seed below 2**63 (vLLM's int64) for a request of ``key`` (its prompt and settings) at
        ``step``, the step of the last weight sync (step k's rollouts follow the sync of step k - 1, in
        a clean run as after a resume). ``sample`` is the (dataset index, session id) pair our agent
        loop adds, so sample j of a prompt gets the same seed in every run; k counts this step's earlier
        requests with the same key and sample (0 unless a prompt repeats with one index; untagged
        requests are numbered by arrival alone, so a group's order may follow it)."""
        step = int(step or 0)
        if step != self.step:
            self.arrivals, self.step = {}, step
        text = repr(key)
        tag = tuple(int(v) for v in sample) if sample is not None else ()
        count = self.arrivals.get((text, tag), 0)
        self.arrivals[(text, tag)] = count + 1
        digest = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big") >> 1
        return sample_seed(self.rollout_seed, step, digest, *tag, count)
