"""Decision-masked replay in the supervised stage's shallow phase (lie.stages.sft_replay): full solutions
whose step starts are trained conditional on going on, so that the later steps are rehearsed while the
stop habit is learnt from the shallow examples alone (the fourth attempt's pilot, docs/study.md)."""

from __future__ import annotations

import pytest
from test_study_task import SFT, build_tokenizer_for_tests

from lie.core.errors import LieError
from lie.tasks import chain as C


def test_a_replayed_full_solution_marks_every_step_start_and_the_answer_opens_with_the_stop_tokens():
    from lie.stages.sft_replay import replay_examples

    tok = build_tokenizer_for_tests()
    problems = C.generate(40, 3, 1, 3)
    examples, stops = replay_examples(tok, C, problems)
    stop_texts = {tok.decode([t]).strip() for t in stops}
    assert stop_texts == {"The"}  # "The answer is ...", at the start and after a step
    for problem, example in zip(problems, examples):
        assert example.target[-1] == tok.eos_token_id
        assert tok.decode(example.target[:-1]) == problem.solution()
        assert len(example.decisions) == problem.depth  # before each step, none after the last
        steps = problem.steps()
        for j, d in enumerate(example.decisions):  # the chosen token opens step j + 1
            assert steps[j].startswith(tok.decode([example.target[d]]).strip())
            prefix = tok.decode(example.target[:d])
            assert prefix.strip() == " ".join(f"{s}." for s in steps[:j])


def test_the_masked_loss_leaves_the_stop_logits_out_at_decisions_only():
    import torch

    from lie.stages.sft_replay import masked_loss

    torch.manual_seed(0)
    logits = torch.randn(2, 5, 7, requires_grad=True)
    labels = torch.tensor([[-100, 3, 4, 2, -100], [-100, -100, 1, 5, 6]])
    none = torch.zeros(2, 5, dtype=torch.bool)
    plain = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, 7), labels[:, 1:].reshape(-1))
    assert masked_loss(logits, labels, none, [0, 6]).item() == pytest.approx(plain.item(), rel=1e-6)
    decisions = none.clone()
    decisions[0, 2] = True  # the label at position 2 (token 4) is predicted by the logits at position 1
    loss = masked_loss(logits, labels, decisions, [0, 6])
    loss.backward()
    grad = logits.grad
    assert grad[0, 1, 0] == 0 and grad[0, 1, 6] == 0  # stop tokens: no push either way at the decision
    assert grad[0, 1, 1] != 0 and grad[0, 0, 0] != 0 and grad[1, 3, 6] != 0  # elsewhere trained as usual
    assert loss.item() < plain.item()  # the target's share of a smaller softmax


def test_a_shallow_phase_with_replay_draws_half_its_batch_from_full_solutions():
    from lie.config.supervised import SFTSettings
    from lie.stages.sft import run_sft
    from lie.stages.tiny import build_model

    tok = build_tokenizer_for_tests()
    settings = SFTSettings.from_mapping({**SFT, "steps": 5, "full_steps": 3, "replay": 0.5}, "sft")
    model = build_model(len(tok), tok.eos_token_id, tok.pad_token_id, 0, 16, 1)
    record = run_sft(model, tok, settings, "{question}")
    assert record["shallow_phase"]["examples"] == 2 * 2  # 2 shallow steps x half of 4
    assert record["replay"]["examples"] == 2 * 2 and record["replay"]["share"] == 0.5
    assert sorted(record["replay"]["stop_tokens"]) == [" The", "The"]  # at the start, after a step
    assert record["settings"]["replay"] == 0.5
    without = SFTSettings.from_mapping(SFT, "sft")
    assert without.replay == 0.0 and "replay" not in run_sft(
        build_model(len(tok), tok.eos_token_id, tok.pad_token_id, 0, 16, 1), tok, without, "{question}"
    )


@pytest.mark.parametrize("value", [1.0, -0.1, "half"])
def test_a_bad_replay_share_is_named(value):
    from lie.config.supervised import SFTSettings

    with pytest.raises(LieError, match="models.tiny.sft.replay must be"):
        SFTSettings.from_mapping({**SFT, "replay": value}, "models.tiny.sft")
