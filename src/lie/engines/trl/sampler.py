"""The prompt order of a TRL run as a pure function of (seed, epoch), so that a resume draws it again.

TRL 1.16's ``RepeatSampler`` (``trl/trainer/utils.py:925-933``) seeds one ``torch.Generator`` when it is
built and draws a new permutation from it at each pass: epoch e of an uninterrupted run is the
generator's (e+1)-th draw. A resumed run builds a fresh sampler, and transformers' ``Trainer`` neither
replays the epochs before the checkpoint (``trainer.py:1513``, ``for epoch in range(epochs_trained,
...)``) nor saves the generator (``rng_state.pth`` holds the global generators only), so every
resumed epoch, and the batches ``skip_first_batches`` skips in it (``trainer.py:1685-1692``), got the
first epoch's order. The Trainer does call ``set_epoch(epoch)`` on its data loader before each pass
(``trainer.py:1694``), which accelerate hands down to the sampler (``accelerate/data_loader.py:622-635``):
:class:`EpochSampler` takes it and replays the sampler's earlier passes from its seed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from torch.utils.data import Sampler


class EpochSampler(Sampler):
    """A seeded sampler (``generator`` and ``seed``, as TRL's ``RepeatSampler``) whose pass in epoch e
    is the base's (e+1)-th pass since its seeding, whatever passes came before in this process."""

    def __init__(self, base: Any):
        self.base = base
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return len(self.base)

    def __iter__(self) -> Iterator[int]:
        generator, seed = getattr(self.base, "generator", None), getattr(self.base, "seed", None)
        if generator is not None and seed is not None:  # not shuffled, or unseeded: the base as it is
            generator.manual_seed(seed)
            for _ in range(self.epoch):
                for _ in self.base:  # each pass draws what it draws in an uninterrupted run
                    pass
        yield from self.base
