"""The engines' reward on the smoke run's real rollouts equals the authors' reward code on the same responses.

The smoke DAG (tests/smoke_run.py) trains GSPO+LIE with verl (and, in ``make test-all``, its continual
child); every training sample's reward, as our verl reward manager returned it, is in the run's rollouts
with the response's text and token count. The same responses go to TRL's reward function
(``lie.engines.trl.train.LIEReward``, as GRPOTrainer calls it) and to the authors' own reward manager:
``LengthDAPORewardManager`` of LINs-lab/LIE @ 1b3bb02 (tests/data/lie-authors/length_dapo.py, with their
``repetition.py``, checked by git blob id), imported as a module under verl 0.9.1 and called as their
trainer calls it, with the ``+reward.*`` flags of their GSPO+LIE script (tests/data/lie-authors/lie_gspo.sh).
The rollouts keep no token ids, so both are handed the recorded text and count (:class:`RecordedTexts`).
The tiny model's samples are all wrong and none loops: a right answer, a wrong one and a looping right
one on the run's own rows (real token ids) cover the other terms.

What stands in for the authors' environment, each named: their ``compute_score_no_add_think`` goes
through deepscaler's ``RewardMathFn`` to ``labeling_responses`` (math_verify_reward.py); deepscaler is not
installed, so their ``labeling_responses`` is taken from the file's syntax tree and called as that
chain calls it (one response, the label ``is True`` -> 1.0). Their manager's two other imports
(semantic repetition, the truncated-answer bonus) are off under the script's flags and stand in as
functions that fail if called. Two changes for the smoke's scale: their hard-coded 500-token tolerance
(``z_min = num_tokens - 500``) is the smoke config's ``reward.tolerance``, replaced in their function's
syntax tree, and ``extra_tokens`` is the run's; their manager asserts 8 samples a prompt (SPEC 1's
watch-out) where the smoke samples 4, so the samples go to it 8 to a ``uid`` (the group statistics it
computes from the uids feed nothing under the script's flags).
"""

from __future__ import annotations

import ast
import json
import shlex
import sys
import types
from pathlib import Path

import pytest
import yaml
from smoke_run import CHILD, PARENT

pytest.importorskip("verl")

from lie.config import Config, grading_limits  # noqa: E402
from lie.config.layout import Layout  # noqa: E402
from lie.engines.rewarding import Rewarder  # noqa: E402
from lie.formats.runs import RunDir, read_rollouts  # noqa: E402
from lie.stages.data.sources import git_blob_sha1  # noqa: E402

pytestmark = pytest.mark.slow  # the first test to ask for `smoke` builds the DAG (tests/conftest.py)

AUTHORS = Path(__file__).parent / "data" / "lie-authors"
# LINs-lab/LIE @ 1b3bb02, byte for byte (tests/data/README.md): file -> git blob id
PINNED = {
    "length_dapo.py": "0c11b7346d5ffe2431dde32e967478410d302cdb",
    "repetition.py": "c19de179121571009b9d0f93a5a0e5d5a7f9c45b",
    "math_verify_reward.py": "7c886cb6a7dd2eacaaa9032d013bb7a8891c4d46",
    "lie_gspo.sh": "82cc88f5c08e749b1ab6a84fa2cb846e70a00122",
}
GROUP = 8  # the authors' manager asserts 8 samples a uid
FLOAT32 = 1e-6  # their reward tensor is float32


def test_the_authors_files_are_the_pinned_ones():
    assert {name: git_blob_sha1((AUTHORS / name).read_bytes()) for name in PINNED} == PINNED


def script_flags(script: Path) -> dict:
    """The ``+reward.KEY=VALUE`` flags of the authors' training script, as Hydra reads their values."""
    words = shlex.split(script.read_text(encoding="utf-8").replace("\\\n", " "), comments=True)
    return {
        word.split("=", 1)[0].removeprefix("+reward."): yaml.safe_load(word.split("=", 1)[1])
        for word in words
        if word.startswith("+reward.")
    }


class _Tolerance(ast.NodeTransformer):
    """Their ``get_delta_linear_remove_upper_refined_additive`` with its constant 500 (the tolerance)
    replaced by ``tolerance``."""

    def __init__(self, tolerance: int):
        self.tolerance, self.replaced = tolerance, 0

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        if node.name == "get_delta_linear_remove_upper_refined_additive":
            for child in ast.walk(node):
                if isinstance(child, ast.Constant) and child.value == 500:
                    child.value, self.replaced = self.tolerance, self.replaced + 1
        return node


def _unused(name: str):
    def fail(*args, **kwargs):
        raise AssertionError(f"the authors' {name} ran: it is off under their script's flags")

    return fail


def _module(name: str, **attrs) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__dict__.update(attrs)
    return module


def their_compute_score():
    """``compute_score_no_add_think`` of math_verify_reward.py: their ``labeling_responses`` and its import
    of math-verify (both taken from the file) on the whole response, 1.0 when its label is True."""
    path = AUTHORS / "math_verify_reward.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    taken = [n for n in tree.body if (isinstance(n, ast.ImportFrom) and n.module == "math_verify")
             or (isinstance(n, ast.FunctionDef) and n.name == "labeling_responses")]  # fmt: skip
    assert len(taken) == 2
    namespace: dict = {}
    exec(compile(ast.Module(taken, []), str(path), "exec"), namespace)

    def compute_score(data_source, solution_str, ground_truth, extra_info=None):
        return 1.0 if namespace["labeling_responses"]([solution_str], ground_truth)[0] is True else 0.0

    return compute_score


@pytest.fixture
def authors_manager(monkeypatch):
    """``load(tolerance)``: their ``LengthDAPORewardManager`` class, loaded under verl 0.9.1 with
    ``tolerance`` in place of 500."""
    from verl.workers.reward_manager import registry

    repetition = _module("recipe.reward_ours.repetition")
    exec(
        compile((AUTHORS / "repetition.py").read_text(encoding="utf-8"), "repetition.py", "exec"),
        repetition.__dict__,
    )
    for name, module in {
        "recipe": _module("recipe", __path__=[]),
        "recipe.reward_ours": _module("recipe.reward_ours", __path__=[]),
        "recipe.reward_ours.repetition": repetition,
        "recipe.reward_ours.semantic_repetition": _module(
            "s", calculate_semantic_repetition=_unused("semantic repetition")
        ),
        "recipe.reward_ours.math_verify_reward_new": _module(
            "m", reward_fn_math_verify_no_think=_unused("truncated bonus")
        ),
    }.items():
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setattr(registry, "REWARD_MANAGER_REGISTRY", {})  # their @register("length_dapo")

    def load(tolerance: int) -> type:
        tree = _Tolerance(tolerance)
        module = tree.visit(ast.parse((AUTHORS / "length_dapo.py").read_text(encoding="utf-8")))
        assert tree.replaced == 2  # z_max and z_min
        namespace: dict = {"__name__": "length_dapo"}
        exec(compile(ast.fix_missing_locations(module), str(AUTHORS / "length_dapo.py"), "exec"), namespace)
        return namespace["LengthDAPORewardManager"]

    return load


def _their_batch(ids: list[list[int]], samples: list[dict], rows: dict, pad: int) -> object:
    """The samples as their trainer hands them to the manager: a prompt and the response ids (right-padded,
    the attention mask marking the valid tokens), the row's reward_model and data source, and a uid."""
    import numpy as np
    import torch
    from tensordict import TensorDict
    from verl import DataProto

    width = max(map(len, ids))
    prompts = torch.tensor([[pad]] * len(ids))  # one token: their manager only decodes it to print it
    responses = torch.tensor([r + [pad] * (width - len(r)) for r in ids])
    mask = torch.tensor([[1] + [1] * len(r) + [0] * (width - len(r)) for r in ids])
    row_of = [json.loads(rows[s["prompt_index"]]["row"]) for s in samples]
    batch = TensorDict(
        {"prompts": prompts, "responses": responses, "attention_mask": mask}, batch_size=len(ids)
    )
    return DataProto(
        batch=batch,
        non_tensor_batch={
            "reward_model": np.array([r["reward_model"] for r in row_of], dtype=object),
            "data_source": np.array([r["data_source"] for r in row_of], dtype=object),
            "extra_info": np.array([r["extra_info"] for r in row_of], dtype=object),
            "uid": np.array([f"group-{i // GROUP}" for i in range(len(ids))], dtype=object),
        },
        meta_info={},
    )


class RecordedTexts:
    """The tokenizer both rewards decode with, for the smoke's recorded samples: a run's rollouts keep each
    response's decoded text and its token count, not its token ids, and the ids are not the tokenizer's
    own segmentation of the text (the tiny model samples token sequences that re-encode otherwise: 54
    tokens for a 41-token sample), so sample ``k`` is handed over as ``num_tokens`` ids ``k``, which
    decode to its recorded text. Both rewards then read what verl's manager read: the text and the count."""

    def __init__(self, samples: list[dict], tokenizer):
        self.texts = [s["response"] for s in samples]
        self.eos_token, self.eos_token_id, self.pad_token_id = tokenizer.eos_token, len(samples), len(samples)

    def ids(self, k: int, count: int) -> list[int]:
        return [k] * count

    def decode(self, ids, skip_special_tokens: bool = False) -> str:
        ids = [int(i) for i in ids]
        if not ids or ids == [self.eos_token_id]:  # a sample of no tokens; the one-token prompt
            return ""
        assert len(set(ids)) == 1 and skip_special_tokens, ids  # one sample's ids, decoded as both engines do
        return self.texts[ids[0]]


def their_rewards(load, samples: list[dict], ids: list[list[int]], tokenizer, settings, rows) -> dict:
    """Their manager's reward and terms for each sample (their tensors hold them on its last valid
    token), called with their script's flags, the run's e and eta, and no overlong buffer (their script's
    ``enable_overlong_buffer=False``)."""
    knobs = settings.reward
    flags = {**script_flags(AUTHORS / "lie_gspo.sh"), "extra_tokens": knobs.extra_tokens, "alpha": knobs.eta}
    assert (flags["length_penalty_type"], flags["repetition_penalty"], flags["skip_right_sample"]) == (
        "remove_upper_refined_plus", True, True,
    )  # fmt: skip
    manager = load(knobs.tolerance)(
        tokenizer, num_examine=0, compute_score=their_compute_score(), max_resp_len=settings.max_response_length,
        overlong_buffer_cfg=types.SimpleNamespace(enable=False),
    )  # fmt: skip
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    out = manager(_their_batch(ids, samples, rows, pad), return_dict=True, reward_config=flags)
    names = {"reward": "reward_tensor", "acc": "correctness_tensor", "r_len": "length_tensor",
             "r_red": "repetition_tensor"}  # fmt: skip
    return {
        ours: [float(out[theirs][i, len(r) - 1]) for i, r in enumerate(ids)] for ours, theirs in names.items()
    }


def trl_rewards(
    config, settings, tokenizer, samples, ids, rows, folder: Path
) -> tuple[list[float], list[dict]]:
    """TRL's reward function on the samples, called as GRPOTrainer calls it: its rewards and the rollout
    records it writes (the breakdown)."""
    from lie.engines.trl import train as trl_train

    row = [rows[s["prompt_index"]] for s in samples]
    with Rewarder(*grading_limits(config)) as rewarder:
        reward = trl_train.LIEReward(
            settings.reward, tokenizer, RunDir(folder, "trl"), trl_train.Schedule(1, 1, 1), rewarder
        )
        rewards = reward(
            prompts=[r["prompt"] for r in row],
            completions=[tokenizer.decode(r, skip_special_tokens=True) for r in ids],
            completion_ids=ids,
            row=[r["row"] for r in row],
            where=[r["where"] for r in row],
            prompt_index=[s["prompt_index"] for s in samples],
        )
    return rewards, read_rollouts(RunDir(folder, "trl"))


def _setting(smoke, run: str):
    """The run's config, settings, tokenizer and training rows (``load_rows``, by prompt index)."""
    from transformers import AutoTokenizer

    from lie.engines.trl.train import load_rows

    config = Config.of(smoke.config)
    settings, layout = config.run(run), Layout(config)
    tokenizer = AutoTokenizer.from_pretrained(layout.init_model(run))
    path = layout.reflen_file(settings.data, settings.model)
    rows = {r["prompt_index"]: r for r in load_rows(path, settings.max_prompt_length, tokenizer, False)}
    return config, settings, tokenizer, rows


def rollouts_alike(smoke, run: str, load, folder: Path) -> list[dict]:
    """The run's samples, as verl's manager rewarded them, rewarded again by TRL's reward function
    and by the authors' manager on the same texts and token counts (:class:`RecordedTexts`)."""
    config, settings, tokenizer, rows = _setting(smoke, run)
    samples = read_rollouts(RunDir(smoke.out, run))  # what verl's manager returned, sample by sample
    assert len(samples) == 4 * 4 * 4 and len(samples) % GROUP == 0
    texts = RecordedTexts(samples, tokenizer)
    ids = [texts.ids(k, s["num_tokens"]) for k, s in enumerate(samples)]
    trl, _ = trl_rewards(config, settings, texts, samples, ids, rows, folder)
    assert trl == [s["reward"] for s in samples]  # both engines, one core: equal to the bit
    theirs = their_rewards(load, samples, ids, texts, settings, rows)
    for key, values in theirs.items():
        assert [s[key] for s in samples] == pytest.approx(values, abs=FLOAT32), key
    return samples


def test_verl_trl_and_the_authors_code_reward_the_smoke_rollouts_alike(smoke, authors_manager, tmp_path):
    samples = rollouts_alike(smoke, PARENT, authors_manager, tmp_path)
    # what the tiny model's samples cover: wrong answers, most too short for their L_ref, some long enough
    assert sum(s["r_len"] < 0 for s in samples) >= len(samples) // 4 and any(s["r_len"] == 0 for s in samples)


@pytest.mark.heavy
def test_verl_trl_and_the_authors_code_reward_the_continual_runs_rollouts_alike(
    smoke_child, authors_manager, tmp_path
):
    rollouts_alike(smoke_child, CHILD, authors_manager, tmp_path)


def test_trl_and_the_authors_code_reward_right_and_looping_answers_to_the_smoke_rows_alike(
    smoke, authors_manager, tmp_path
):
    """None of the tiny model's samples is right or loops: on 8 of the run's training rows, a right
    answer, a wrong one and a right one in a loop (real token ids of the run's tokenizer, ending in its
    end-of-sequence token), TRL's reward function and the authors' manager agree too."""
    config, settings, tokenizer, rows = _setting(smoke, PARENT)
    loop = " ".join(["so the next step is the same as before"] * 12)
    samples, ids = [], []
    for index in sorted(rows)[:GROUP]:
        gold = json.loads(rows[index]["row"])["reward_model"]["ground_truth"]
        for text in (
            f"So the answer is \\boxed{{{gold}}}.",
            f"It is \\boxed{{{gold}1}}.",
            f"{loop} \\boxed{{{gold}}}",
        ):
            samples.append({"prompt_index": index})
            ids.append(tokenizer(text, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id])
    trl, records = trl_rewards(config, settings, tokenizer, samples, ids, rows, tmp_path)
    theirs = their_rewards(authors_manager, samples, ids, tokenizer, settings, rows)
    assert trl == pytest.approx(theirs["reward"], abs=FLOAT32)
    for key in ("acc", "r_len", "r_red"):
        assert [r[key] for r in records] == pytest.approx(theirs[key], abs=FLOAT32), key
    assert {r["acc"] for r in records} == {0.0, 1.0} and any(r["r_red"] < 0 and r["acc"] for r in records)
    assert any(r["r_len"] < 0 for r in records)
