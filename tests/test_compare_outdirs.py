"""benchmarks/compare_outdirs.py: the check behind "outputs unchanged" claims names what differs."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from safetensors.torch import save_file

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "compare_outdirs.py"


def _load():
    spec = importlib.util.spec_from_file_location("compare_outdirs", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tree(root: Path, variant: int) -> None:
    (root / "runs" / "r").mkdir(parents=True)
    (root / "same.txt").write_text("one\ntwo\n")
    relative = "/".join(root.parts[-2:])  # the outdir as a config names it
    (root / "path.json").write_text(json.dumps({"out": f"{root}/runs/r", "model": f"{relative}/m", "n": 1}))
    (root / "run.json").write_text(json.dumps({"seed": 0, "seconds": 10 + variant, "steps": [{"loss": 1.0}]}))
    lines = [{"step": 1, "acc": 0.5}, {"step": 2, "acc": 0.5 + variant}]
    (root / "runs" / "r" / "m.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    pq.write_table(pa.table({"a": [1, 2], "b": [3, 4 + variant]}), root / "t.parquet")
    save_file({"w": torch.ones(2) * (1 + variant), "v": torch.zeros(2)}, str(root / "model.safetensors"))
    save_file({"w": torch.ones(2 + variant)}, str(root / "resized.safetensors"))
    (root / ("gone.csv" if variant == 0 else "new.csv")).write_text("x\n")
    (root / "runs" / "r" / f"launch-{100 + variant}.jsonl").write_text('{"step": 1}\n')  # named by time
    (root / "runs" / "r" / f"rollouts-{7 + 3 * variant}.jsonl").write_text(f'{{"pid": {variant}}}\n')


def test_equal_files_and_folder_paths_count_as_identical_and_differences_are_named(tmp_path, capsys):
    before, after = tmp_path / "before" / "results" / "out", tmp_path / "after" / "results" / "out"
    _tree(before, 0)
    _tree(after, 1)
    assert _load().main([str(before), str(after)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "differs:     run.json: keys seconds" in out
    assert "differs:     runs/r/m.jsonl: 1 of 2 lines differ; keys acc" in out
    assert "differs:     t.parquet: columns b" in out
    assert "differs:     model.safetensors: 1 of 2 tensors differ, largest |diff| 1" in out
    assert (
        "differs:     resized.safetensors: 1 of 1 tensors differ (1 missing on one side or of another shape)"
        in out
    )
    assert (
        "differs:     runs/r/rollouts-7.jsonl -> runs/r/rollouts-10.jsonl: 1 of 1 lines differ; keys pid"
        in out
    )
    assert "only before: gone.csv" in out and "only after:  new.csv" in out
    assert out[-1] == (
        "3 identical, 6 differ, 1 only before, 1 only after (2 pairs matched by name pattern; "
        "10 files before, 10 after)"
    )


def test_ignored_globs_are_left_out(tmp_path, capsys):
    before, after = tmp_path / "before" / "results" / "out", tmp_path / "after" / "results" / "out"
    _tree(before, 0)
    _tree(after, 0)
    (after / "run.json").write_text("{}")
    _load().main([str(before), str(after), "--ignore", "run.json", "--ignore", "*.csv"])
    assert capsys.readouterr().out.splitlines() == [
        "8 identical, 0 differ, 0 only before, 0 only after (0 pairs matched by name pattern; "
        "8 files before, 8 after)"
    ]


def test_a_missing_folder_is_named_not_read_as_empty(tmp_path, capsys):
    (tmp_path / "before").mkdir()
    with pytest.raises(SystemExit) as stop:
        _load().main([str(tmp_path / "before"), str(tmp_path / "typo")])
    assert stop.value.code == 2
    assert f"{tmp_path / 'typo'} is not a folder" in capsys.readouterr().err
