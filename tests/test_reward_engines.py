"""Both training engines reward the same rows alike: verl's reward manager, built by verl's own
``RewardLoopWorker`` from the config ``lie train`` composes and fed rows as verl's ``RLHFDataset``
reads them, and TRL's reward function, fed the columns of the rows ``load_rows`` makes from the
same parquet file (as ``GRPOTrainer`` passes them), give identical rewards and breakdowns for math
rows (authors' DAPO rows) and multiple-choice rows (hand-labelled answers that name the option's
text, not its letter: they are right only if the grader sees the option texts)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
import yaml
from small import REPO, paper_config

pytest.importorskip("verl")
pytest.importorskip("trl")

from lie.config import Config, RunSettings, grading_limits  # noqa: E402
from lie.core.reward import BREAKDOWN_KEYS  # noqa: E402
from lie.engines.rewarding import Rewarder  # noqa: E402
from lie.engines.verl import overrides as verl_overrides  # noqa: E402

CONFIG = paper_config()
RUN = "qwen3-4b-base_dapo_gspo_lie"  # GSPO with both LIE terms (L_ref + 500)


def _choice_rows() -> list[tuple[dict, str]]:
    """Rows of ``lie data`` for the labelled option-text answers of tests/data/choice_labels.yaml."""
    from lie.formats.rows import Item, make_row

    cases = yaml.safe_load((REPO / "tests/data/choice_labels.yaml").read_text(encoding="utf-8"))["cases"]
    out = []
    for i, case in enumerate(c for c in cases if c["class"] == "option_text" and c["expected"]):
        item = Item(f"Question {i}?", case["expected"], tuple(case["options"]))
        row = make_row("gpqa-d", "choice", "train", i, item, CONFIG["prompt"]["choice"])
        row["reward_model"]["num_tokens"] = 40 + 10 * i
        out.append((row, case["response"]))
    return out


def _math_rows() -> list[tuple[dict, str]]:
    """Authors' DAPO training rows (with their L_ref) and a right, a wrong and a looping answer each."""
    import pyarrow.parquet as pq
    from conftest import data_file

    rows = pq.read_table(data_file("lie-authors/dapo-math-17k_llama-add1k.parquet")).to_pylist()[:3]
    loop = " ".join(["so the next step is the same as before"] * 12)
    out = []
    for row in rows:
        gold = row["reward_model"]["ground_truth"]
        for text in (
            f"So the answer is \\boxed{{{gold}}}.",
            f"It is \\boxed{{{gold}1}}.",
            f"{loop} \\boxed{{{gold}}}",
        ):
            out.append((copy.deepcopy(row), text))
    return out


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """One parquet file of math and choice rows in one schema, a tokenizer, and the responses."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from lie.stages.tiny import build_tokenizer

    root = tmp_path_factory.mktemp("engines")
    cases = _math_rows() + _choice_rows()
    rows = []
    for i, (row, _) in enumerate(cases):  # the row schema of `lie reflen`, one index per row
        extra = row.get("extra_info") or {}
        rows.append(
            {
                "data_source": row["data_source"],
                "prompt": row["prompt"],
                "ability": row["ability"],
                "reward_model": {
                    k: row["reward_model"].get(k) for k in ("ground_truth", "style", "num_tokens")
                },
                "extra_info": {
                    "index": i,
                    "kind": extra.get("kind") or "math",
                    "letters": list(extra.get("letters") or []),
                    "choices": list(extra.get("choices") or []),
                },
            }
        )
    path = root / "train.reflen.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    texts = [m["content"] for r in rows for m in r["prompt"]] + [text for _, text in cases]
    tokenizer = build_tokenizer(texts, vocab_size=600)
    model_dir = root / "tokenizer"
    tokenizer.save_pretrained(model_dir)
    responses = [
        tokenizer(text, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id] for _, text in cases
    ]
    return path, model_dir, tokenizer, responses, root


def _verl(setup) -> list[dict]:
    """verl's side: the rows as RLHFDataset reads them, scored by the manager RewardLoopWorker builds."""
    from tensordict import TensorDict
    from verl import DataProto
    from verl.experimental.reward_loop.reward_loop import RewardLoopWorker
    from verl.utils.dataset.rl_dataset import RLHFDataset

    path, model_dir, tokenizer, responses, root = setup
    inputs = verl_overrides.VerlInputs(str(path), (str(path),), str(model_dir))
    overrides = verl_overrides.overrides(
        Config.of(CONFIG), RunSettings.of(Config.of(CONFIG), RUN), inputs, device="cpu"
    )
    overrides = [o for o in overrides if not o.startswith("+reward.reward_kwargs.log_dir=")]
    cfg = verl_overrides.compose(
        [*overrides, f"+reward.reward_kwargs.log_dir='{root / 'verl' / 'rollouts'}'"]
    )
    dataset = RLHFDataset(str(path), tokenizer, cfg.data)
    assert len(dataset) == len(responses)
    items = []
    for i, response in enumerate(responses):
        row = dataset[i]
        resp = torch.tensor(response)
        prompt = torch.tensor([1, 2, 3])
        ids = torch.cat([prompt, resp])
        items.append(
            DataProto(
                batch=TensorDict(
                    {
                        "prompts": prompt[None],
                        "responses": resp[None],
                        "attention_mask": torch.ones_like(ids)[None],
                        "input_ids": ids[None],
                        "position_ids": torch.arange(len(ids))[None],
                    },
                    batch_size=1,
                ),  # fmt: skip
                non_tensor_batch={
                    **{
                        k: np.array([row[k]], dtype=object)
                        for k in ("data_source", "ability", "reward_model", "extra_info", "index")
                    },
                    "uid": np.array([f"prompt-{i}"], dtype=object),
                    "session_id": np.array([0]),
                    "global_steps": np.array([1]),
                },
            )
        )
    worker = RewardLoopWorker(cfg)
    return [worker.loop.run_until_complete(worker.compute_score(item)) for item in items]


def _trl(setup) -> list[dict]:
    """TRL's side: ``load_rows`` of the same file, its columns passed to the reward function as
    GRPOTrainer passes a batch's (every column but the prompt, one value per completion)."""
    from datasets import Dataset

    from lie.engines.trl import train as trl_train
    from lie.formats.runs import RunDir, read_rollouts

    path, _, tokenizer, responses, root = setup
    rows = trl_train.load_rows(path, 512, tokenizer, None)
    inputs = list(Dataset.from_list(rows))
    columns = {key: [row[key] for row in inputs] for key in inputs[0] if key != "prompt"}
    rundir = RunDir(root / "trl", RUN)
    knobs = RunSettings.of(Config.of(CONFIG), RUN).reward  # the knobs trl_train.train hands the reward
    with Rewarder(*grading_limits(Config.of(CONFIG))) as rewarder:  # as trl_train.train sizes it
        reward = trl_train.LIEReward(knobs, tokenizer, rundir, trl_train.Schedule(1, 1, 1), rewarder)
        rewards = reward(
            prompts=[row["prompt"] for row in inputs],
            completions=[tokenizer.decode(r, skip_special_tokens=True) for r in responses],
            completion_ids=responses,
            **columns,
        )
    records = {int(r["uid"].rsplit("-", 1)[1]): r for r in read_rollouts(rundir)}  # <step>-<prompt>-<i>
    return rewards, [records[i] for i in range(len(records))]


def test_verl_and_trl_reward_math_and_choice_rows_alike(setup):
    from lie.formats.runs import read_rollouts

    verl = _verl(setup)
    verl_records = {r["prompt_index"]: r for r in read_rollouts(setup[4] / "verl")}
    trl_rewards, trl_records = _trl(setup)
    math_cases = len(_math_rows())
    assert len(verl) == len(verl_records) == len(trl_rewards) == len(trl_records) > math_cases
    for i, (out, reward, record) in enumerate(zip(verl, trl_rewards, trl_records)):
        kind = "math" if i < math_cases else "choice"
        info = out["reward_extra_info"]
        assert (out["reward_score"], kind) == (reward, kind)
        assert ({k: info[k] for k in BREAKDOWN_KEYS}, kind) == ({k: record[k] for k in BREAKDOWN_KEYS}, kind)
        logged = verl_records[i]  # verl's own rollout line of the sample: the same response and grade
        assert (logged["response"], logged["grade_status"]) == (record["response"], record["grade_status"])
    # the cases say something: every labelled choice answer is right, the math ones mixed, a loop penalised
    assert [out["reward_extra_info"]["acc"] for out in verl[math_cases:]] == [1.0] * (len(verl) - math_cases)
    assert sorted({out["reward_extra_info"]["acc"] for out in verl[:math_cases]}) == [0.0, 1.0]
    assert any(out["reward_extra_info"]["r_red"] < 0 for out in verl[:math_cases])
    assert any(out["reward_extra_info"]["r_len"] != 0 for out in verl)
    # SPEC 1's R_len written out: L is the response's token count (its valid token ids), not its words
    knobs = RunSettings.of(Config.of(CONFIG), RUN).reward
    rows = [row for row, _ in _math_rows() + _choice_rows()]
    for out, response, row in zip(verl, setup[3], rows, strict=True):
        info, ref = out["reward_extra_info"], row["reward_model"]["num_tokens"]
        gap = max(0, ref - knobs.tolerance - len(response))
        expected = 0.0 if info["acc"] else -knobs.eta * (1 + knobs.extra_tokens / ref) * gap
        assert (info["num_tokens"], info["r_len"]) == (
            len(response),
            pytest.approx(expected, rel=1e-12, abs=1e-15),
        )
    assert any(len(text.split()) != len(ids) for (_, text), ids in zip(_math_rows(), setup[3]))


@pytest.mark.parametrize("nnodes, managers", [(1, 8), (2, 4)])
def test_verl_managers_share_a_nodes_cores_when_grade_workers_is_zero(setup, nnodes, managers):
    """The paper's config grades with one worker per core (``grade_workers: 0``); verl starts
    ``reward.num_workers`` (8) managers over the nodes, so each manager RewardLoopWorker builds takes
    its share of the node's cores rather than all of them (8 x 32 grading processes on 32 cores)."""
    import dataclasses

    from verl.experimental.reward_loop.reward_loop import RewardLoopWorker

    from lie.grading.executor import default_workers

    path, model_dir, _, _, root = setup
    assert grading_limits(Config.of(CONFIG))[1] == 0
    settings = dataclasses.replace(RunSettings.of(Config.of(CONFIG), RUN), nnodes=nnodes)
    inputs = verl_overrides.VerlInputs(str(path), (str(path),), str(model_dir))
    overrides = verl_overrides.overrides(
        Config.of(CONFIG), settings, inputs
    )  # the GPU composition: verl's 8 managers
    cfg = verl_overrides.compose(overrides)
    assert (cfg.reward.num_workers, cfg.trainer.nnodes) == (8, nnodes)
    worker = RewardLoopWorker(cfg)
    try:
        assert worker.reward_manager.rewarder.grader.workers == max(1, default_workers() // managers)
    finally:
        worker.reward_manager.rewarder.close()
