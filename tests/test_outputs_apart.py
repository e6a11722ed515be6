"""Every ``lie`` command that writes keeps its outputs apart from its inputs: one rule, one place.

``lie.formats.outputs.refuse_overlap``: an output is refused if it is, or lies inside, an input file or
folder of the command (model, tokenizer, data, config), or holds one, compared through symlinks. The
CLI applies it to every ``--out*`` against every input flag before a command runs; a command applies it
to what its config places (the run folder, the report's tables, a manifest beside ``--out``).

Each row is one command as a user types it, with an output over one of its inputs; the command must
stop with one line naming both, and leave every file of the row's folder as it was (nothing new,
nothing changed). :func:`test_every_writing_command_has_a_row` keeps the table complete.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
from pathlib import Path
from typing import NamedTuple

import pytest
import yaml

from lie.cli import COMMANDS, main

REPO = Path(__file__).resolve().parents[1]
SMOKE = REPO / "workflow" / "configs" / "smoke.yaml"
# commands that write nothing themselves: plan prints; snakemake writes through the lie commands its jobs run
WRITES_NOTHING = {"plan", "snakemake"}


class Case(NamedTuple):
    id: str
    command: str  # after `lie`; {tmp}: the case folder (c.yaml, m/, in.jsonl)
    says: str  # a fragment of the one error line
    config_at: str = "c.yaml"  # where the config lies under {tmp}


M = "{tmp}/m"  # a model folder: config.json, tokenizer.json, model.safetensors (never loaded: refused first)
CASES = [
    Case("evaluate-scores-in-tokenizer", "evaluate --config {tmp}/c.yaml --gen {tmp}/in.jsonl --tokenizer "
         f"{M} --out-scores {M}/tokenizer.json --out-summary {{tmp}}/s.json",
         f"--out-scores {M}/tokenizer.json is inside the input folder --tokenizer {M}"),
    Case("evaluate-summary-is-config", "evaluate --config {tmp}/c.yaml --gen {tmp}/in.jsonl --tokenizer "
         f"{M} --out-scores {{tmp}}/s.jsonl --out-summary {M}/config.json", "--out-summary {tmp}/m/config.json is"),
    Case("behaviours-judge", f"behaviours --gen {{tmp}}/in.jsonl --judge --model {M} --out {M}/config.json",
         "--out {tmp}/m/config.json is inside the input folder --model {tmp}/m"),
    Case("generate-manifest-is-config", "generate arith-test --config {tmp}/o.manifest.json --model "
         f"{M} --data {{tmp}}/in.jsonl --out {{tmp}}/o.jsonl",
         "the manifest {tmp}/o.manifest.json is the input --config {tmp}/o.manifest.json", "o.manifest.json"),
    Case("generate-in-model", f"generate arith-test --config {{tmp}}/c.yaml --model {M} --data {{tmp}}/in.jsonl "
         f"--out {M}/model.safetensors", "is inside the input folder --model {tmp}/m"),
    Case("reflen-in-model", f"reflen --config {{tmp}}/c.yaml --model {M} --data {{tmp}}/in.jsonl --out {M}/r.parquet",
         "--out {tmp}/m/r.parquet is inside the input folder --model {tmp}/m"),
    Case("reflen-shards-hold-config", f"reflen --config {{tmp}}/o.parquet.shards/c.yaml --model {M} "
         "--data {tmp}/in.jsonl --out {tmp}/o.parquet", "the shard folder {tmp}/o.parquet.shards holds the input",
         "o.parquet.shards/c.yaml"),
    Case("data-config-through-link", "data arith-test --config {tmp}/c.yaml --out {tmp}/link/c.yaml",
         "--out {tmp}/link/c.yaml is the input --config {tmp}/c.yaml"),
    Case("base-model-holds-config", "base-model tiny --config {tmp}/c.yaml --out {tmp}",
         "--out {tmp} holds the input --config {tmp}/c.yaml"),
    Case("base-model-corpus", "base-model tiny --config {tmp}/c.yaml --out {tmp}/b --corpus {tmp}/b/in.jsonl",
         "--out {tmp}/b holds the input --corpus {tmp}/b/in.jsonl", "c.yaml"),
    Case("train-run-folder-holds-config", "train smoke_grpo --config {tmp}/results/runs/smoke_grpo/c.yaml --engine trl",
         "the run folder {tmp}/results/runs/smoke_grpo holds the input --config", "results/runs/smoke_grpo/c.yaml"),
    Case("merge-holds-config", "merge smoke_grpo --config {tmp}/o/c.yaml --out {tmp}/o",
         "--out {tmp}/o holds the input --config {tmp}/o/c.yaml", "o/c.yaml"),
    Case("merge-default-holds-config", "merge smoke_grpo --config {tmp}/results/models/smoke_grpo/c.yaml",
         "the merged model {tmp}/results/models/smoke_grpo holds the input --config", "results/models/smoke_grpo/c.yaml"),
    Case("report-tables-hold-config", "report --config {tmp}/results/tables/c.yaml",
         "the tables {tmp}/results/tables holds the input --config", "results/tables/c.yaml"),
    Case("study-report-figures-hold-config", "study-report --config {tmp}/results/figures/c.yaml",
         "the figures {tmp}/results/figures holds the input --config", "results/figures/c.yaml"),
    Case("study-gates-tables-hold-config", "study-gates --config {tmp}/results/tables/c.yaml",
         "the tables {tmp}/results/tables holds the input --config", "results/tables/c.yaml"),
    Case("study-probe-in-model", f"study-probe --config {{tmp}}/c.yaml --model {M} --data {{tmp}}/in.jsonl "
         f"--out {M}/g.jsonl", "--out {tmp}/m/g.jsonl is inside the input folder --model {tmp}/m"),
    Case("study-responses-in-tokenizer", f"study-responses --config {{tmp}}/c.yaml --gen {{tmp}}/in.jsonl "
         f"--scores {{tmp}}/in.jsonl --data {{tmp}}/in.jsonl --tokenizer {M} --out {M}/tokenizer.json",
         "--out {tmp}/m/tokenizer.json is inside the input folder --tokenizer {tmp}/m"),
    Case("score-knobs", "score --in {tmp}/in.jsonl --knobs {tmp}/c.yaml --out {tmp}/link/c.yaml",
         "--out {tmp}/link/c.yaml is the input --knobs {tmp}/c.yaml"),
    Case("score-in-through-dot-dot", "score --in {tmp}/in.jsonl --out {tmp}/m/../in.jsonl", "is the input --in"),
    Case("grade-config", "grade --in {tmp}/in.jsonl --config {tmp}/c.yaml --out {tmp}/c.yaml",
         "--out {tmp}/c.yaml is the input --config {tmp}/c.yaml"),
    Case("preflight-workdir-holds-config", "preflight --config {tmp}/w/c.yaml --workdir {tmp}/w --device cpu",
         "--workdir {tmp}/w holds the input --config {tmp}/w/c.yaml", "w/c.yaml"),
    Case("preflight-default-workdir", "preflight --config {tmp}/results/preflight/c.yaml --device cpu",
         "--workdir {tmp}/results/preflight holds the input --config", "results/preflight/c.yaml"),
]  # fmt: skip


def _tree(root: Path) -> dict[str, str]:
    """Every path under ``root`` with its content's digest (a folder, a link: their kind)."""
    found = {}
    for path in sorted(root.rglob("*")):
        if path.is_symlink():
            found[str(path)] = "link " + os.readlink(path)
        elif path.is_dir():
            found[str(path)] = "folder"
        else:
            found[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def _setup(tmp: Path, config_at: str) -> None:
    config = yaml.safe_load(SMOKE.read_text(encoding="utf-8"))
    config["outdir"] = str(tmp / "results")
    where = tmp / config_at
    where.parent.mkdir(parents=True, exist_ok=True)
    where.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    (tmp / "m").mkdir()
    (tmp / "m" / "config.json").write_text(json.dumps({"model_type": "qwen3"}))
    (tmp / "m" / "tokenizer.json").write_text("{}")
    (tmp / "m" / "model.safetensors").write_bytes(b"weights")
    (tmp / "in.jsonl").write_text(json.dumps({"response": "r", "correct": True, "num_tokens": 1}) + "\n")
    (tmp / "b").mkdir()
    (tmp / "b" / "in.jsonl").write_text("{}\n")
    (tmp / "link").symlink_to(tmp)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_an_output_over_an_input_is_one_line_and_changes_nothing(case, tmp_path, capsys, monkeypatch):
    _setup(tmp_path, case.config_at)
    before = _tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    argv = [word.replace("{tmp}", str(tmp_path)) for word in shlex.split(case.command)]
    status = main(argv)
    err = capsys.readouterr().err
    assert status == 2, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    assert err.splitlines()[-1:] == [line for line in err.splitlines() if line.startswith(f"lie {argv[0]}:")]
    assert err.splitlines()[-1].startswith(f"lie {argv[0]}: error: "), err[-3000:]
    assert case.says.replace("{tmp}", str(tmp_path)) in err.splitlines()[-1], err[-3000:]
    assert _tree(tmp_path) == before


def test_every_writing_command_has_a_row():
    tried = {case.command.split()[0] for case in CASES}
    assert set(COMMANDS) - WRITES_NOTHING <= tried, set(COMMANDS) - WRITES_NOTHING - tried
    assert not tried & WRITES_NOTHING


def test_the_rule_compares_as_the_system_resolves(tmp_path):
    """``realpath`` on both sides: a symlinked folder, ``..`` through a link, a link to the input itself."""
    from lie.core.errors import LieError
    from lie.formats.outputs import refuse_overlap

    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (tmp_path / "alias").symlink_to(model)
    (tmp_path / "deep").mkdir()
    (tmp_path / "deep" / "up").symlink_to(model / "config.json")
    for out, says in (
        (tmp_path / "alias" / "config.json", "is inside the input folder --model"),
        (tmp_path / "deep" / "up", "is inside the input folder --model"),
        (tmp_path, "holds the input --model"),
    ):
        with pytest.raises(LieError, match=says):
            refuse_overlap({"--out": out}, {"--model": model})
    refuse_overlap({"--out": tmp_path / "model-out"}, {"--model": model})  # a name that only starts alike
    refuse_overlap({"--out": tmp_path / "x.jsonl"}, {"--model": tmp_path / "absent"})
