"""verl's single-turn agent loop, telling the CPU rollout server which sample each request is.

verl's trainer (``verl/trainer/ppo/v1/agent_loop_tq.py``) runs the n samples of a prompt as n agent
loops with ``session_id`` 0..n-1 and the prompt's dataset ``index``, but its single-turn loop sends
neither to the server (the request id is a random ``uuid4``; under ``rollout.full_determinism`` it is
``det-<priority>``, and that trainer sets no priority). Without them the server could only number
the n requests of a prompt by arrival, so two runs gave a group the same responses in another
order. This loop adds ``(index, session_id)`` to the sampling parameters under :data:`SAMPLE_KEY`;
the server (``lie.engines.verl.cpu.rollout``) takes it out and seeds the request with it.
Selected by ``actor_rollout_ref.rollout.agent.default_agent_loop`` in the CPU overrides only: vLLM
would refuse the unknown parameter.
"""

from __future__ import annotations

from typing import Any

from verl.experimental.agent_loop.agent_loop import AgentLoopOutput, register
from verl.experimental.agent_loop.single_turn_agent_loop import SingleTurnAgentLoop

NAME = "lie_single_turn"
SAMPLE_KEY = "lie_sample"  # [dataset index, session id]: which sample of which prompt


def sample_identity(kwargs: dict[str, Any]) -> list[int]:
    """The (dataset index, session id) pair of an agent loop's keyword arguments (0 where absent)."""
    return [int(kwargs.get("index", 0) or 0), int(kwargs.get("session_id", 0) or 0)]


@register(NAME)
class SampleTaggedSingleTurn(SingleTurnAgentLoop):
    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        tagged = {**sampling_params, SAMPLE_KEY: sample_identity(kwargs)}
        return await super().run(tagged, **kwargs)
