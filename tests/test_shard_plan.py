"""Shards sized by expected tokens (lie.formats.resumable.assign_shards, lie.stages.sample_shards).

One engine call waits for its longest sample, so the plan puts samples of about the same expected
length together and gives each shard about the same expected tokens; the plan depends on the
inputs alone, every unit is in exactly one shard, a killed run resumes to the same files, and the
rows come back in unit order whatever the plan.
"""

from __future__ import annotations

import json
import random

import pytest

from lie.core.errors import LieError
from lie.engines.generation import SamplingSettings
from lie.formats.resumable import assign_shards, iter_assigned, run_assigned, shard_ranges
from lie.stages.sample_shards import Draw, Prompt, expected_tokens, shard_assignment


def heavy_tailed(count: int, seed: int = 0, cap: int = 8192) -> list[int]:
    """Response lengths as a reasoning model's on a benchmark: most short, a long tail cut at ``cap``."""
    rng = random.Random(seed)
    return [max(1, min(cap, round(rng.lognormvariate(6.5, 1.0)))) for _ in range(count)]


def loads(plan, weights):
    return [sum(weights[u] for u in shard) for shard in plan]


def test_every_unit_is_in_exactly_one_shard_and_the_plan_is_deterministic():
    weights = heavy_tailed(12_032)  # MMLU-Pro's size
    plan = assign_shards(weights, 256)
    units = [u for shard in plan for u in shard]
    assert sorted(units) == list(range(len(weights)))
    assert all(shard == sorted(shard) for shard in plan)  # each shard in unit order
    assert assign_shards(list(weights), 256) == plan  # the inputs alone decide it
    assert plan != [list(r) for r in shard_ranges(len(weights), 256)]


def test_shards_group_similar_lengths_and_give_short_samples_bigger_shards():
    weights = heavy_tailed(12_032)
    plan = assign_shards(weights, 256)
    budget = 256 * sum(weights) / len(weights)
    got = loads(plan, weights)
    sizes = [len(s) for s in plan]
    assert all(size >= 256 for size in sizes[:-1])  # a call runs as many samples at once as before
    assert max(sizes) <= 4 * 256 and min(sizes[:-1]) == 256 < max(sizes)
    # a shard grows past 256 samples only while under 256 x the mean expected tokens
    assert all(load <= budget for load, size in zip(got, sizes) if size > 256)
    assert len(plan) <= len(weights) / 256 + 1  # never more calls than the old chunks
    # a call lasts about as long as its longest sample: similar lengths together waste far less
    # than the old contiguous chunks of 256
    old = [list(r) for r in shard_ranges(len(weights), 256)]

    def waste(p):
        return sum(len(s) * max(weights[u] for u in s) - sum(weights[u] for u in s) for s in p)

    assert waste(plan) < waste(old) / 5


def test_with_min_units_one_the_shards_hold_equal_expected_tokens():
    weights = heavy_tailed(12_032)
    plan = assign_shards(weights, 256, min_units=1)
    budget = 256 * sum(weights) / len(weights)
    got = loads(plan, weights)
    assert sorted(u for s in plan for u in s) == list(range(len(weights)))
    assert max(got) <= budget
    # a shard closes only when the next unit would not fit, or at the cap of 4 x 256 short samples
    assert all(load >= budget - max(weights) or len(s) == 1024 for load, s in zip(got[:-1], plan))
    assert min(len(s) for s in plan) < 256  # the longest samples in small shards


def test_equal_weights_give_the_old_chunks_and_one_heavy_unit_stands_alone():
    assert assign_shards([5] * 10, 3) == [list(r) for r in shard_ranges(10, 3)]
    plan = assign_shards([1, 1, 1000, 1, 1, 1], 2)
    assert plan == [[0, 2], [1, 3, 4, 5]]  # the heavy one with a light one, the rest together
    assert assign_shards([1] * 20, 2, min_units=1) == [list(r) for r in shard_ranges(20, 2)]
    for bad_size, bad_weights in ((0, [1]), (2, [0, 1]), (2, [1.5])):
        with pytest.raises(LieError):
            assign_shards(bad_weights, bad_size)


def test_the_expected_length_is_the_reference_where_every_prompt_has_one():
    def prompt(i, text, expected=None):
        return Prompt(i, [{"role": "user", "content": text}], f"p{i}", expected)

    with_refs = [prompt(0, "a", 100.4), prompt(1, "bb", 50_000.0)]
    assert expected_tokens(with_refs, 8192) == [100, 8192]  # capped at the budget
    mixed = [prompt(0, "a", 100.0), prompt(1, "bbb")]
    assert expected_tokens(mixed, 8192) == [1, 3]  # not all known: prompt characters for all
    draw = Draw(SamplingSettings(n=2, max_tokens=64), seed=0)
    plan = shard_assignment([prompt(0, "x" * 10), prompt(1, "x" * 30), prompt(2, "x" * 20)], draw, 2)
    # units (prompt, sample) in flat order: 0-1 prompt 0, 2-3 prompt 1, 4-5 prompt 2; longest first
    assert plan == [[2, 3], [4, 5], [0, 1]]


def _rows(shard):
    return [{"unit": u, "square": u * u} for u in shard]


def test_a_killed_planned_run_resumes_to_the_same_files_and_reads_back_in_unit_order(tmp_path):
    weights = heavy_tailed(40, seed=3)
    plan = assign_shards(weights, 4)
    clean = tmp_path / "clean"
    clean_paths = run_assigned(plan, clean, {"s": 1}, _rows, progress=False)
    assert [r["unit"] for r in iter_assigned(clean_paths, plan)] == list(range(40))

    work = tmp_path / "work"
    done: list[list[int]] = []

    def dying(shard):
        if len(done) == 3:
            raise KeyboardInterrupt("killed")
        done.append(list(shard))
        return _rows(shard)

    with pytest.raises(KeyboardInterrupt):
        run_assigned(plan, work, {"s": 1}, dying, progress=False)
    again: list[list[int]] = []
    paths = run_assigned(plan, work, {"s": 1}, lambda s: again.append(list(s)) or _rows(s), progress=False)
    assert done + again == [list(s) for s in plan]  # each shard computed once, in plan order
    assert [p.read_bytes() for p in paths] == [p.read_bytes() for p in clean_paths]
    assert list(iter_assigned(paths, plan)) == list(iter_assigned(clean_paths, plan))


def test_a_shard_with_a_missing_row_is_named(tmp_path):
    plan = [[1, 2], [0]]
    paths = run_assigned(plan, tmp_path / "w", {"s": 1}, _rows, progress=False)
    paths[0].write_text(json.dumps({"unit": 1}) + "\n")
    with pytest.raises(LieError, match="shard-00000.jsonl: 1 rows for 2 units"):
        list(iter_assigned(paths, plan))
