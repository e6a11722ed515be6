"""The supervised stage's cached full-solution state (config ``sft_cache``) is keyed on the code that
computes it: the loop, the task's generator, the prompt's rendering, the tiny architecture. A state
computed by older code is never restored by newer code (lie.stages.sft.full_phase_key)."""

from __future__ import annotations

from pathlib import Path

from test_study_task import SFT

REPO = Path(__file__).resolve().parents[1]


def _tokenizer():
    """A real fast tokenizer of three words (the key reads its vocabulary)."""
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer(models.WordLevel({"a": 0, "b": 1, "[UNK]": 2}, "[UNK]"))
    )


def test_the_key_covers_the_loop_and_the_task_generator_by_content(tmp_path, monkeypatch):
    import torch

    import lie.stages.sft as sft
    from lie.config.supervised import SFTSettings

    files = {p.relative_to(REPO / "src").as_posix() for p in sft.code_files(SFT["task"])}
    assert {"lie/stages/sft.py", f"lie/tasks/{SFT['task']}.py", "lie/formats/prompts.py"} <= files
    tok = _tokenizer()
    model = torch.nn.Linear(4, 4)  # the key reads its weights; the supervised loop is not run here
    settings = SFTSettings.from_mapping(SFT, "sft")
    key = sft.full_phase_key(model, tok, settings, "{question}")
    assert sft.full_phase_key(model, tok, settings, "{question}") == key  # stable
    real = sft.code_files(SFT["task"])
    for changed in range(len(real)):  # one file's code edited: another key
        copies = []
        for i, path in enumerate(real):
            copy = tmp_path / f"{i}-{path.name}"
            copy.write_bytes(path.read_bytes() + (b"\n# edited\n" if i == changed else b""))
            copies.append(copy)
        monkeypatch.setattr(sft, "code_files", lambda task, copies=copies: copies)
        assert sft.full_phase_key(model, tok, settings, "{question}") != key, real[changed].name


def test_a_relative_sft_cache_is_the_checkouts_wherever_lie_runs(tmp_path, monkeypatch):
    """``sft_cache: results/sft-cache`` (the study's configs) names the checkout's folder, as a relative
    ``engines.vllm_cpu.venv`` does, whatever the working directory of the process that reads the config
    (a job, ``lie base-model`` run by hand elsewhere); an absolute path is kept as written."""
    from lie.config import load_config

    config_file = REPO / "workflow" / "configs" / "study-v3.yaml"
    monkeypatch.chdir(tmp_path)
    assert load_config(config_file).sft_cache == REPO / "results" / "sft-cache"
    elsewhere = tmp_path / "config.yaml"
    text = config_file.read_text(encoding="utf-8").replace(
        "sft_cache: results/sft-cache", f"sft_cache: {tmp_path}"
    )
    elsewhere.write_text(text, encoding="utf-8")
    assert load_config(elsewhere).sft_cache == tmp_path
