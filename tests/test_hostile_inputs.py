"""Hostile inputs, one row each: a file (or a setup), the command as a user types it, the line it must give.

Issue 33 and the cases earlier sessions fixed (tests/test_bad_input.py, tests/test_data_safety.py)
that need no model and no training. Every row runs the real entry point (``lie.cli.main``) in this
process and asserts exit status 2, exactly one line ``lie COMMAND: error: ...`` on standard error
holding the row's fragment, and no traceback. A new case is one row of :data:`ROWS`.

In a row, ``{tmp}`` is the row's own folder (in the command, the fragment and file contents) and
``{smoke}`` the smoke config; ``in.jsonl`` (one good row for ``lie score``) and ``gen.jsonl`` (one
generation) are always there. A row with ``model`` gets ``{tmp}/m``, a copy of the tiny model
(tests/conftest.py's ``arith_tiny``, built once per pytest run) spoiled by that function, beside
``test.parquet``, ``train.parquet`` (the smoke data sets) and ``tiny-gen.jsonl`` (generations of the
intact model), made once per module. Model folders that need a slow run (a full disk while training
or building a model) are in tests/test_models.py.

Issue 33's cases that are not an input and a one-line answer have tests of their own: the report's
all-or-none moves, its symlinked target and a summary's values and shape (tests/test_report.py); an
output inside an input folder, sample counts, files of the user in lie's folders, concurrent builds,
torn swaps, manifests and seals at the shard level (tests/test_data_safety.py); a run resumed on
another training file (tests/test_reruns.py); TRL's resume in its second epoch (tests/test_train_trl.py);
NaN weights under vLLM (tests/test_vllm_cpu.py); verl's own merger on a full disk
(tests/test_verl_main_ppo.py); a user file in a preflight trial folder (tests/test_preflight.py);
`lie snakemake`'s exit statuses and the config checks (tests/test_config_checks.py).
"""

from __future__ import annotations

import errno
import io
import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import yaml

from lie.cli import main
from lie.config import Config

REPO = Path(__file__).resolve().parents[1]
SMOKE = REPO / "workflow" / "configs" / "smoke.yaml"
ROW = {"response": "short", "correct": False, "num_tokens": 1, "ref_len": 3000}
GEN = {"bench": "b", "index": 0, "sample": 0, "text": "Wait, that is wrong."}


class Row(NamedTuple):
    id: str
    command: str  # as typed after `lie`
    says: str  # a fragment of the one error line
    files: dict[str, str | bytes] = {}  # written under {tmp} before the command
    setup: Callable[[Path, pytest.MonkeyPatch], None] | None = None
    model: Callable[[Path], Any] | None = None  # spoils {tmp}/m, a copy of the tiny model


def smoke(edit: Callable[[dict[str, Any]], Any] | None = None) -> str:
    """The smoke config as YAML text, its outdir under the row's folder, changed by ``edit``."""
    config = yaml.safe_load(SMOKE.read_text(encoding="utf-8"))
    config["outdir"] = "{tmp}/results"
    if edit is not None:
        edit(config)
    return yaml.safe_dump(config, sort_keys=False)


def laughs(levels: int) -> str:
    lines = ['l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"l{k}: &l{k} [" + ",".join([f"*l{k - 1}"] * 10) + "]" for k in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


def patterns(*texts: str) -> dict[str, str]:
    """A ``--patterns`` file with one behaviour of these patterns (YAML single-quoted)."""
    quoted = ", ".join("'" + t.replace("'", "''") + "'" for t in texts)
    return {"p.yaml": f"behaviours:\n  mine: {{description: x, patterns: [{quoted}]}}\n"}


def jsonl(line: str | bytes) -> dict[str, bytes]:
    """``in.jsonl`` of a good line, ``line``, a good line: the error names line 2."""
    good = json.dumps(ROW).encode()
    return {"in.jsonl": b"\n".join([good, line if isinstance(line, bytes) else line.encode(), good]) + b"\n"}


def fifo(name: str) -> Callable[[Path, pytest.MonkeyPatch], None]:
    return lambda tmp, _: os.mkfifo(tmp / name)


def sparse(name: str, size: int) -> Callable[[Path, pytest.MonkeyPatch], None]:
    """A regular file of ``size`` zero bytes that takes no disk (a file that never ends, made finite)."""

    def make(tmp: Path, _: pytest.MonkeyPatch) -> None:
        with open(tmp / name, "wb") as handle:
            handle.truncate(size)

    return make


def stdin_from(path: str) -> Callable[[Path, pytest.MonkeyPatch], None]:
    """Standard input read from ``path`` (``lie score --in - < /dev/zero``)."""

    def redirect(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        handle = open(path, "rb")  # noqa: SIM115 (closed with the row's folder: a device holds nothing)
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(handle))

    return redirect


def unreadable(name: str) -> Callable[[Path, pytest.MonkeyPatch], None]:
    """``chmod 000 name``; as root (who reads it anyway) ``open`` answers as the kernel does a user
    (the real kernel's answer: test_an_unreadable_input_says_permission_denied)."""

    def deny(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        target = tmp / name
        target.chmod(0)
        if os.geteuid() != 0:
            return

        def as_a_user(real: Callable[..., Any]) -> Callable[..., Any]:
            def opener(path: Any, *args: Any, **kwargs: Any) -> Any:
                if not isinstance(path, int) and os.path.realpath(path) == str(target.resolve()):
                    raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(path))
                return real(path, *args, **kwargs)

            return opener

        monkeypatch.setattr(os, "open", as_a_user(os.open))
        monkeypatch.setattr(io, "open", as_a_user(io.open))
        monkeypatch.setattr("builtins.open", as_a_user(open))

    return deny


def spoil(name: str, content: str | bytes | None) -> Callable[[Path], Any]:
    """The model folder's file ``name`` replaced by ``content`` (None: removed)."""

    def change(model: Path) -> None:
        path = model / name
        if content is None:
            path.unlink()
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")

    return change


def truncated(model: Path) -> None:
    weights = model / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])


def emptied(model: Path) -> None:
    for path in model.iterdir():
        path.unlink()


def nan_weights(model: Path) -> None:
    from safetensors.torch import load_file, save_file

    tensors = {k: v.clone().fill_(float("nan")) for k, v in load_file(model / "model.safetensors").items()}
    save_file(tensors, model / "model.safetensors", metadata={"format": "pt"})


def renamed_weights(
    keep: Callable[[str], bool], rename: Callable[[str], str] = lambda n: n
) -> Callable[[Path], Any]:
    """The weights rewritten with only the tensors ``keep`` accepts, each under ``rename(name)``."""

    def change(model: Path) -> None:
        from safetensors.torch import load_file, save_file

        tensors = load_file(model / "model.safetensors")
        kept = {rename(k): v for k, v in tensors.items() if keep(k)}
        save_file(kept, model / "model.safetensors", metadata={"format": "pt"})

    return change


def config_says(**changes: Any) -> Callable[[Path], Any]:
    def change(model: Path) -> None:
        config = json.loads((model / "config.json").read_text(encoding="utf-8"))
        (model / "config.json").write_text(json.dumps({**config, **changes}), encoding="utf-8")

    return change


def merger_says(*lines: str) -> Callable[[Path, pytest.MonkeyPatch], None]:
    """A verl run whose final checkpoint verl's merger fails on, its error output ending in ``lines``."""

    def setup(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        step = tmp / RUNDIR / "checkpoints" / "global_step_1"
        (step / "actor").mkdir(parents=True)
        (step / "data.pt").write_text("x")
        (step / "actor" / "model_world_size_1_rank_0.pt").write_text("x")
        (tmp / RUNDIR / "final.json").write_text(
            json.dumps({"engine": "verl", "checkpoint": str(step), "step": 1})
        )
        merger = tmp / "merger"
        text = "\n".join(["Traceback (most recent call last):", *(_fill(line, tmp) for line in lines)])
        merger.write_text(f"#!/bin/sh\ncat >&2 <<'END'\n{text}\nEND\nexit 1\n")
        merger.chmod(0o755)
        monkeypatch.setattr("lie.stages.merge._merger_python", lambda config, rundir: str(merger))

    return setup


def nan_parquet(name: str) -> Callable[[Path, pytest.MonkeyPatch], None]:
    """A local parquet whose second answer is NaN (a float column, as pandas writes a missing value)."""

    def make(tmp: Path, _: pytest.MonkeyPatch) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.table({"problem": ["1 + 1", "2 + 2"], "answer": [2.0, float("nan")]}), tmp / name)

    return make


def local_data(name: str) -> Callable[[dict[str, Any]], Any]:
    """The smoke config with evaluation set arith-test read from ``{tmp}/name``."""
    return lambda c: c["datasets"]["eval"]["arith-test"].update(local="{tmp}/" + name, synthetic=None)


def json_array_over(limit: int) -> Callable[[Path, pytest.MonkeyPatch], None]:
    """``d.json``, a JSON array larger than the bound, lowered to ``limit`` bytes for the test."""

    def setup(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr("lie.formats.sources.MAX_JSON_ARRAY_BYTES", limit)
        row = json.dumps({"problem": "1 + 1", "answer": "2"})
        (tmp / "d.json").write_text("[" + ",".join([row] * (limit // len(row) + 1)) + "]")

    return setup


SCORE = "score --in {tmp}/in.jsonl --out {tmp}/out.jsonl"
DEEP_JSON = '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}"
RUNDIR = "results/runs/smoke_grpo"
MERGE = "merge smoke_grpo --config {tmp}/c.yaml --out {tmp}/merged"
MODEL_COMMANDS = {
    "generate": "generate arith-test --config {smoke} --model {tmp}/m --data {tmp}/test.parquet --out {tmp}/o.jsonl "
    "--engine hf --limit 1 --no-progress",
    "reflen": "reflen --config {smoke} --model {tmp}/m --data {tmp}/train.parquet --out {tmp}/r.parquet --engine hf "
    "--limit 1 --no-progress",
    "evaluate": "evaluate --config {smoke} --gen {tmp}/tiny-gen.jsonl --tokenizer {tmp}/m --out-scores {tmp}/s.jsonl "
    "--out-summary {tmp}/s.json --no-progress",
    "train": "train smoke_grpo --config {smoke} --engine trl --model {tmp}/m --train-file {tmp}/train.parquet",
    "judge": "behaviours --gen {tmp}/tiny-gen.jsonl --judge --engine hf --model {tmp}/m --limit 1",
    "train-verl": "train smoke_gspo_lie --config {smoke} --engine verl --model {tmp}/m --train-file "
    "{tmp}/train.parquet --val-file {tmp}/test.parquet --device cpu",
}

ROWS: list[Row] = [
    # reward knobs (issue 33: keys that are not strings, values of the wrong type)
    Row("knob-int-key", SCORE + " --knobs {tmp}/k.yaml", "reward key 1 (int) is not a knob name",
        {"k.yaml": "reward:\n  1: 2\n"}),
    Row("knob-null-key", SCORE + " --knobs {tmp}/k.yaml", "reward key None (NoneType) is not a knob name",
        {"k.yaml": "reward:\n  null: 2\n  eta: 0.0001\n"}),
    Row("knob-mixed-keys-flat", SCORE + " --knobs {tmp}/k.yaml", "reward key 1 (int) is not a knob name",
        {"k.yaml": "nope: 3\n1: 2\n"}),
    Row("knob-float-key", SCORE + " --knobs {tmp}/k.yaml", "reward key 1.5 (float)", {"k.yaml": "1.5: 2\n"}),
    Row("knob-bool-key", SCORE + " --knobs {tmp}/k.yaml", "reward key True (bool)",
        {"k.yaml": "reward:\n  true: 2\n"}),
    Row("knob-list-key", SCORE + " --knobs {tmp}/k.yaml", "k.yaml line 2: not valid YAML: found unhashable key",
        {"k.yaml": "reward:\n  ? [a, b]\n  : 1\n"}),
    Row("knob-list-value", SCORE + " --knobs {tmp}/k.yaml", "reward key 'n' must be int, got [1]",
        {"k.yaml": "reward:\n  n: [1]\n"}),
    Row("knob-mapping-value", SCORE + " --knobs {tmp}/k.yaml", "reward key 'variant' must be str",
        {"k.yaml": "reward:\n  variant: {a: 1}\n"}),
    Row("knob-string-bool", SCORE + " --set red_on_correct=maybe", "reward key 'red_on_correct' must be bool"),
    Row("knob-fraction-int", SCORE + " --set n=2.5", "reward key 'n' must be int, got 2.5"),
    Row("knob-nan", SCORE + " --set eta=nan", "reward key 'eta' must be a finite number"),
    Row("knob-overflow", SCORE + " --set eta=1e308", "--set: reward key 'eta' must lie in 0..0.1 (the config's bounds)"),
    Row("knob-unknown", SCORE + " --set nope=1", "unknown reward key(s) nope"),
    # endless or special files as config or input (issue 33)
    Row("config-dev-zero", "plan --config /dev/zero", "cannot read /dev/zero: it is a character device"),
    Row("config-dev-urandom", "plan --config /dev/urandom", "cannot read /dev/urandom: it is a character device"),
    Row("config-fifo", "plan --config {tmp}/fifo", "cannot read {tmp}/fifo: it is a named pipe (FIFO)",
        setup=fifo("fifo")),
    Row("config-folder", "plan --config {tmp}", "cannot read {tmp}: it is a folder"),
    Row("config-huge", "plan --config {tmp}/big.yaml", "{tmp}/big.yaml: larger than 16,777,216 bytes",
        setup=sparse("big.yaml", 17 << 20)),
    Row("knobs-dev-zero", SCORE + " --knobs /dev/zero", "cannot read /dev/zero: it is a character device"),
    Row("patterns-dev-urandom", "behaviours --gen {tmp}/gen.jsonl --patterns /dev/urandom",
        "cannot read behaviour patterns /dev/urandom: it is a character device"),
    Row("configfile-dev-zero", "snakemake --configfile /dev/zero -n",
        "cannot read config file /dev/zero: it is a character device"),
    Row("in-dev-zero", "score --in /dev/zero --out {tmp}/out.jsonl", "cannot read /dev/zero: it is a character device"),
    Row("gen-dev-urandom", "behaviours --gen /dev/urandom", "cannot read /dev/urandom: it is a character device"),
    Row("grade-in-fifo", "grade --in {tmp}/fifo --out {tmp}/out.jsonl", "it is a named pipe (FIFO)",
        setup=fifo("fifo")),
    Row("stdin-dev-zero", "score --in - --out {tmp}/out.jsonl",
        "<stdin> line 1: longer than 67,108,864 bytes without a line break", setup=stdin_from("/dev/zero")),
    Row("in-one-endless-line", SCORE, "{tmp}/in.jsonl line 1: longer than 67,108,864 bytes",
        setup=sparse("in.jsonl", (64 << 20) + 10)),
    Row("in-unreadable", SCORE, "cannot read {tmp}/in.jsonl: Permission denied", setup=unreadable("in.jsonl")),
    Row("config-unreadable", "plan --config {tmp}/c.yaml", "cannot read {tmp}/c.yaml: Permission denied",
        {"c.yaml": smoke()}, unreadable("c.yaml")),
    # behaviour patterns (issue 33): bounded before the regex engine compiles them
    Row("pattern-huge-count", "behaviours --gen {tmp}/gen.jsonl --patterns {tmp}/p.yaml",
        "behaviours.mine.patterns[0] 'a{1000000000}': the repetition {1000000000} is more than 1000 times",
        patterns("a{1000000000}")),
    Row("pattern-recursion", "behaviours --gen {tmp}/gen.jsonl --patterns {tmp}/p.yaml",
        "patterns[1] '(?R)?x': (?R) is a recursive call", patterns("wait", "(?R)?x")),
    Row("pattern-nested-counts", "behaviours --gen {tmp}/gen.jsonl --patterns {tmp}/p.yaml",
        "expand to more than 100,000 items", patterns("(?:(?:ab){200}c){1000}")),
    Row("pattern-long", "behaviours --gen {tmp}/gen.jsonl --patterns {tmp}/p.yaml",
        "longer than 1000 characters", patterns("x" * 1001)),
    Row("pattern-syntax", "behaviours --gen {tmp}/gen.jsonl --patterns {tmp}/p.yaml",
        "behaviours.mine.patterns[0] '(wait': missing )", patterns("(wait")),
    # JSON lines (issue 13, 21)
    Row("json-latin1", SCORE, "{tmp}/in.jsonl line 2: not valid UTF-8", jsonl(b'{"response": "caf\xe9"}')),
    Row("json-surrogate", SCORE, "line 2: a lone surrogate", jsonl('{"response": "\\ud800"}')),
    Row("json-long-int", SCORE, "line 2: an integer of 5001 digits", jsonl('{"w": 1' + "0" * 5000 + "}")),
    Row("json-overflow", SCORE, "line 2: the number 1e999 overflows", jsonl('{"w": 1e999}')),
    Row("json-nan", SCORE, "line 2: NaN is not a finite number", jsonl('{"w": NaN}')),
    Row("json-not-object", SCORE, "line 2: expected a JSON object, got list", jsonl("[1, 2]")),
    Row("json-deep-score", SCORE, "line 2: JSON nested deeper than 100", jsonl(DEEP_JSON)),
    Row("json-deep-grade", "grade --in {tmp}/in.jsonl --out {tmp}/o.jsonl", "line 1: JSON nested deeper than",
        {"in.jsonl": DEEP_JSON}),
    Row("json-deep-behaviours", "behaviours --gen {tmp}/gen.jsonl", "line 1: JSON nested deeper than",
        {"gen.jsonl": DEEP_JSON}),
    # YAML configs (issue 21)
    Row("yaml-deep-list", "plan --config {tmp}/c.yaml", "c.yaml line 1: not valid YAML: nested deeper than 64",
        {"c.yaml": "a: " + "[" * 2000 + "]" * 2000}),
    Row("yaml-deep-map", "plan --config {tmp}/c.yaml", "nested deeper than 64",
        {"c.yaml": "".join("  " * i + f"k{i}:\n" for i in range(2000)) + "  " * 2000 + "x: 1\n"}),
    Row("yaml-long-int", "plan --config {tmp}/c.yaml", "an integer of more than 100 digits",
        {"c.yaml": "a: 1" + "0" * 5000}),
    Row("yaml-laughs", "plan --config {tmp}/c.yaml", "once its aliases are expanded", {"c.yaml": laughs(10)}),
    Row("yaml-recursive", "plan --config {tmp}/c.yaml", "recursive alias", {"c.yaml": "a: &a [*a]"}),
    Row("yaml-key-twice", "plan --config {tmp}/c.yaml", "key 'a' appears twice", {"c.yaml": "a: 1\na: 2\n"}),
    Row("yaml-latin1", "plan --config {tmp}/c.yaml", "c.yaml: not valid UTF-8", {"c.yaml": b"a: caf\xe9\n"}),
    Row("yaml-not-mapping", "plan --config {tmp}/c.yaml", "expected a mapping at the top level, got list",
        {"c.yaml": "- 1\n"}),
    Row("configfile-laughs", "snakemake --configfile {tmp}/c.yaml -n", "once its aliases are expanded",
        {"c.yaml": laughs(10)}),
    Row("configfile-long-int", "snakemake -n --configfile={tmp}/c.yaml", "c.yaml line 1",
        {"c.yaml": "a: 1" + "0" * 5000}),
    # config values (issue 21, 33)
    Row("config-surrogate", "plan --config {tmp}/c.yaml", "surrogate",
        {"c.yaml": smoke(lambda c: c["prompt"].update(math="\ud800 {question}"))}),
    Row("config-beta", "plan --config {tmp}/c.yaml", "key 'reward.beta'", {"c.yaml": smoke(lambda c: c["reward"].update(beta=5))}),
    Row("config-eta", "plan --config {tmp}/c.yaml", "key 'reward.eta'",
        {"c.yaml": smoke(lambda c: c["reward"].update(eta=1e300))}),
    Row("config-runs-twice", "plan --config {tmp}/c.yaml", "key 'runs'",
        {"c.yaml": smoke(lambda c: c.update(runs=["smoke_grpo", "smoke_grpo"]))}),
    Row("config-max-steps", "plan --config {tmp}/c.yaml", "key 'training.max_steps'",
        {"c.yaml": smoke(lambda c: c["training"].update(max_steps=10**30))}),
    Row("config-name-newline", "plan --config {tmp}/c.yaml", "key 'name'",
        {"c.yaml": smoke(lambda c: c.update(name="smoke\n"))}),
    Row("config-int-model-name", "plan --config {tmp}/c.yaml", "the name 1 is not allowed",
        {"c.yaml": smoke(lambda c: c["models"].update({1: c["models"]["tiny"]}))}),
    Row("config-template-attribute", "plan --config {tmp}/c.yaml", "'{question.x}' is not a field",
        {"c.yaml": smoke(lambda c: c["prompt"].update(math="{question} {question.x}"))}),
    Row("config-missing", "plan --config {tmp}/nope.yaml", "cannot read {tmp}/nope.yaml: No such file"),
    Row("config-outdir-braces", "plan --config {tmp}/c.yaml", "key 'outdir'",
        {"c.yaml": smoke(lambda c: c.update(outdir="{tmp}/{run}"))}),
    Row("config-outdir-newline", "plan --config {tmp}/c.yaml", "key 'outdir'",
        {"c.yaml": smoke(lambda c: c.update(outdir="{tmp}/x\nrm -rf y"))}),
    Row("config-engine-arg-key", "plan --config {tmp}/c.yaml", "key 'engines.vllm_cpu.engine_args'",
        {"c.yaml": smoke(lambda c: c["engines"]["vllm_cpu"]["engine_args"].update({"x=1 --y": 2}))}),
    Row("config-vllm-env-key", "plan --config {tmp}/c.yaml", "key 'engines.vllm_cpu.env'",
        {"c.yaml": smoke(lambda c: c["engines"]["vllm_cpu"]["env"].update({"A;B": 1}))}),
    # flags (issue 13, 21)
    Row("flag-nan", "grade --in {tmp}/in.jsonl --out {tmp}/o.jsonl --timeout nan", "not a finite number"),
    Row("flag-mfu-inf", "plan --mfu inf", "argument --mfu: inf is not a finite number"),
    Row("flag-nnodes", "train smoke_grpo --config {smoke} --nnodes -2", "argument --nnodes: expected an integer >= 1"),
    Row("flag-engine-arg-nan", "generate arith-test --config {smoke} --model m --data d --out {tmp}/o "
        "--engine-arg temperature=.nan", "not a finite number"),
    Row("flag-set-twice-key", SCORE + " --set 'eta={a: 1, a: 2}'", "key 'a' appears twice"),
    # outputs (issue 13, 21, 33)
    Row("out-folder", "score --in {tmp}/in.jsonl --out {tmp}", "--out {tmp} holds the input --in {tmp}/in.jsonl"),
    Row("out-under-file", "score --in {tmp}/in.jsonl --out {tmp}/in.jsonl/o", "cannot write {tmp}/in.jsonl/o"),
    Row("out-is-input", "score --in {tmp}/in.jsonl --out {tmp}/sub/../in.jsonl", "is the input --in"),
    Row("out-device", "score --in {tmp}/in.jsonl --out /dev/null", "it is a device"),
    Row("out-dash-generate", "generate arith-test --config {tmp}/c.yaml --model tiny --data d.parquet --out -",
        "--out - is standard output", {"c.yaml": smoke()}),
    # issue 50: values past any real count, a log level that is another attribute of logging
    Row("score-ref-len-401-digits", SCORE, "{tmp}/in.jsonl line 2: field 'ref_len' must be an integer >= 1 (at most 2147483647), "
        "got an integer of 401 digits", jsonl('{"response": "r", "correct": true, "num_tokens": 1, "ref_len": 1'
                                              + "0" * 400 + "}")),
    Row("score-extra-tokens-401-digits", SCORE, "line 2: field 'extra_tokens' must be an integer >= 0 (at most 2147483647)",
        jsonl('{"response": "r", "correct": true, "num_tokens": 1, "ref_len": 3, "extra_tokens": 9' + "9" * 400 + "}")),
    Row("log-level-basic-format", SCORE + " --log-level BASIC_FORMAT",
        "argument --log-level: expected one of DEBUG, INFO, WARNING, ERROR, CRITICAL, got 'BASIC_FORMAT'"),
    # issue 50: silent bad values
    Row("local-parquet-nan-answer", "data arith-test --config {tmp}/c.yaml --out {tmp}/o.parquet",
        "datasets.eval.arith-test: {tmp}/d.parquet row 2: column 'answer' is nan, not a finite number",
        {"c.yaml": smoke(local_data("d.parquet"))}, nan_parquet("d.parquet")),
    Row("config-head-dim-huge", "plan --config {tmp}/c.yaml", "key 'models.tiny.tiny.head_dim'",
        {"c.yaml": smoke(lambda c: c["models"]["tiny"]["tiny"].update(head_dim=10**30))}),
    Row("config-synthetic-count-huge", "plan --config {tmp}/c.yaml", "key 'datasets.eval.arith-test.synthetic.count'",
        {"c.yaml": smoke(lambda c: c["datasets"]["eval"]["arith-test"]["synthetic"].update(count=10**30))}),
    Row("config-expected-rows-huge", "plan --config {tmp}/c.yaml", "expected_rows",
        {"c.yaml": smoke(lambda c: c["datasets"]["eval"]["arith-test"].update(expected_rows=10**30))}),
    Row("knob-set-over-bound", SCORE + " --set eta=0.2", "--set: reward key 'eta' must lie in 0..0.1"),
    Row("knob-set-quoted-number", SCORE + " --set \"eta='0.1'\"",
        "--set: reward key 'eta' must be a number, got the string '0.1'"),
    Row("knob-file-over-bound", SCORE + " --knobs {tmp}/k.yaml", "k.yaml: reward key 'beta' must lie in 0..1",
        {"k.yaml": "reward:\n  beta: 3\n"}),
    Row("json-key-twice", SCORE, "{tmp}/in.jsonl line 2: key 'correct' appears twice in one object",
        jsonl('{"response": "r", "correct": false, "correct": true, "num_tokens": 1, "ref_len": 3}')),
    Row("behaviours-chunk-chars-0", "behaviours --gen {tmp}/gen.jsonl --chunk-chars 0",
        "argument --chunk-chars: expected an integer >= 1, got 0"),
    Row("behaviours-max-tokens-negative", "behaviours --gen {tmp}/gen.jsonl --max-tokens -5",
        "argument --max-tokens: expected an integer >= 1, got -5"),
    Row("plan-mfu-tiny", "plan --mfu 1e-300", "argument --mfu: expected a number in 0.001..1, got 1e-300"),
    Row("plan-gen-tps-tiny", "plan --gen-tps 1e-300", "argument --gen-tps: expected a number in 0.001..1e+09"),
    # a run's final.json (issue 21)
    *(Row(f"merge-final-{name}", MERGE, says, {"c.yaml": smoke(), f"{RUNDIR}/final.json": text})
      for name, text, says in (
          ("truncated", '{"engine": "trl", "checkp', "not valid JSON"),
          ("missing-key", '{"engine": "trl"}', "'engine' and 'checkpoint'"),
          ("list", '["trl", "x"]', "'engine' and 'checkpoint'"),
          ("etc", '{"engine": "trl", "checkpoint": "/etc", "step": 1}', "is not a checkpoint under"),
          ("dot-dot", '{"engine": "verl", "checkpoint": "{tmp}/results/runs/smoke_grpo/checkpoints/../../../.."}',
           "is not a checkpoint under"),
      )),
    # model folders (issue 33): checked file by file before a library loads them, one line naming the file
    *(Row(f"model-{name}-{cmd}", command, says, model=change)
      for name, change, says, cmds in (
          ("weights-truncated", truncated, "{tmp}/m/model.safetensors: not a readable safetensors file",
           ("generate", "reflen", "train", "train-verl")),
          ("weights-empty", spoil("model.safetensors", b""), "{tmp}/m/model.safetensors: 0 bytes", ("generate",)),
          ("weights-garbage", spoil("model.safetensors", b"\xff" * 4096), "its header claims", ("generate", "train")),
          ("weights-missing", spoil("model.safetensors", None), "model folder {tmp}/m: no weights", ("generate",)),
          ("config-list", spoil("config.json", "[]"), "{tmp}/m/config.json: holds a JSON list, not an object",
           ("generate", "evaluate", "train")),
          ("config-deep", spoil("config.json", DEEP_JSON), "{tmp}/m/config.json: JSON nested deeper than 100",
           ("generate", "evaluate")),
          ("config-missing", spoil("config.json", None), "model folder {tmp}/m: config.json is missing",
           ("generate", "reflen", "train")),
          ("config-no-type", spoil("config.json", '{"vocab_size": 300}'), "config.json: names no model_type",
           ("generate", "evaluate")),
          ("tokenizer-bytes", spoil("tokenizer.json", b"\x9c\xac" * 500), "{tmp}/m/tokenizer.json: not valid UTF-8",
           ("generate", "evaluate", "train")),
          ("tokenizer-keys", spoil("tokenizer.json", '{"model": 1}'),
           "cannot load a tokenizer from '{tmp}/m' (tokenizer.json, tokenizer_config.json): ", ("generate", "evaluate")),
          ("tokenizer-config", spoil("tokenizer_config.json", "{nope"), "{tmp}/m/tokenizer_config.json: not valid JSON",
           ("generate", "evaluate")),
          ("template-raises", spoil("chat_template.jinja", "{{ raise_exception('no chat here') }}"),
           "model folder {tmp}/m: the chat template does not render a user message (TemplateError: no chat here)",
           ("generate", "reflen", "train")),
          ("template-syntax", spoil("chat_template.jinja", "{% if %}"), "(TemplateSyntaxError: ", ("generate",)),
          ("template-endless", spoil("chat_template.jinja", "{% for i in range(99999) %}{% for j in range(99999) %}"
                                     "{% endfor %}{% endfor %}"),
           "model folder {tmp}/m: the chat template did not render a user message within 1 s", ("generate",)),
          ("template-undefined", spoil("chat_template.jinja", "{{ messages[0].nope.deeper }}"), "(UndefinedError: ",
           ("generate",)),
          ("empty", emptied, "model folder {tmp}/m is empty", ("generate", "evaluate", "train", "train-verl")),
          ("nan", nan_weights, "the model's logits are NaN or infinite", ("generate", "reflen", "train")),
          ("weights-one-tensor", renamed_weights(lambda n: n == "model.embed_tokens.weight"),
           "model folder {tmp}/m: the weights (model.safetensors) do not match config.json's qwen3 architecture: "
           "23 parameter(s) missing (model.layers.0.input_layernorm.weight, ", ("generate", "judge")),
          ("weights-layer-missing", renamed_weights(lambda n: ".layers.1." not in n),
           "11 parameter(s) missing (model.layers.1.input_layernorm.weight, ", ("train-verl",)),
          ("weights-prefixed", renamed_weights(lambda n: True, lambda n: "foo." + n),
           "24 parameter(s) missing (model.embed_tokens.weight, model.layers.0.input_layernorm.weight, "
           "model.layers.0.mlp.down_proj.weight and 21 more); 24 unexpected (foo.model.embed_tokens.weight, ",
           ("generate",)),
          ("weights-extra", renamed_weights(lambda n: True, lambda n: n.replace("model.norm.", "model.norm2.")),
           "1 parameter(s) missing (model.norm.weight); 1 unexpected (model.norm2.weight)", ("generate",)),
          ("config-llama-over-qwen", config_says(model_type="llama", architectures=["LlamaForCausalLM"]),
           "do not match config.json's llama architecture: 4 unexpected (model.layers.0.self_attn.k_norm.weight, ",
           ("reflen", "train")),
          ("config-wrong-type", config_says(vocab_size="abc"),
           "{tmp}/m/config.json: transformers cannot read it (TypeError: Field 'vocab_size' expected int, got str",
           ("generate", "evaluate")),
          ("config-wider", config_says(intermediate_size=256),
           "6 of another shape (model.layers.0.mlp.down_proj.weight [64, 128] (expected [64, 256]), ", ("generate",)),
      )
      for cmd in cmds
      for command in [MODEL_COMMANDS[cmd]]),
    # verl's merger on a full disk (issue 33): its error output's last line, the file it was writing
    Row("merge-verl-disk-full", MERGE, "cannot write {tmp}/.merged.partial/model-00001-of-00002.safetensors "
        "(No space left on device): verl.model_merger stopped (status 1)", {"c.yaml": smoke()},
        merger_says("OSError: [Errno 28] No space left on device: '{tmp}/.merged.partial/model-00001-of-00002.safetensors'")),
    Row("merge-verl-file-limit", MERGE, "cannot write {tmp}/.merged.partial/model.safetensors (File too large)",
        {"c.yaml": smoke()},
        merger_says("safetensors_rust.SafetensorError: Error while serializing: I/O error: File too large (os error 27)")),
    Row("merge-verl-fails", MERGE, "verl.model_merger failed on {tmp}/results/runs/smoke_grpo/checkpoints/global_step_1 "
        "(status 1): ValueError: no actor", {"c.yaml": smoke()}, merger_says("ValueError: no actor")),
    # local data sets (issue 33): the strict readers, bounded
    Row("local-json-array-huge", "data arith-test --config {tmp}/c.yaml --out {tmp}/o.parquet",
        "datasets.eval.arith-test: {tmp}/d.json: larger than 1,000 bytes", {"c.yaml": smoke(local_data("d.json"))},
        json_array_over(1000)),
    Row("local-jsonl-endless-line", "data arith-test --config {tmp}/c.yaml --out {tmp}/o.parquet",
        "{tmp}/d.jsonl line 1: longer than 67,108,864 bytes", {"c.yaml": smoke(local_data("d.jsonl"))},
        sparse("d.jsonl", (64 << 20) + 10)),
    Row("local-jsonl-not-utf8", "data arith-test --config {tmp}/c.yaml --out {tmp}/o.parquet",
        "datasets.eval.arith-test: {tmp}/d.jsonl line 1: not valid UTF-8",
        {"c.yaml": smoke(local_data("d.jsonl")), "d.jsonl": b"\xff\xfe{}\n"}),
    Row("local-jsonl-deep", "data arith-test --config {tmp}/c.yaml --out {tmp}/o.parquet",
        "datasets.eval.arith-test: {tmp}/d.jsonl: JSON nested deeper than",
        {"c.yaml": smoke(local_data("d.jsonl")), "d.jsonl": "[" * 5000 + "]" * 5000 + "\n"}),
    Row("local-jsonl-huge-number", "data arith-test --config {tmp}/c.yaml --out {tmp}/o.parquet",
        "datasets.eval.arith-test: {tmp}/d.jsonl line 1: ",
        {"c.yaml": smoke(local_data("d.jsonl")), "d.jsonl": '{"problem": "x", "answer": ' + "9" * 5000 + "}\n"}),
    # resume state lie did not write (issue 33): a manifest in the output's shard folder, through lie generate
    *(Row(f"manifest-{name}", MODEL_COMMANDS["generate"],
          "{tmp}/o.jsonl.shards/manifest.json: not a manifest lie wrote",
          {"o.jsonl.shards/manifest.json": text}, model=lambda m: None)
      for name, text in [("list", "[]"), ("number", "3"), ("deep", "[" * 5000 + "]" * 5000),
                         ("truncated", '{"s": 1'), ("nan", '{"s": NaN}'), ("not-utf8", b"\xff{}")]),
    # a prompt template whose width would fill the memory (issue 33)
    Row("config-template-width", "plan --config {tmp}/c.yaml", "'{question:99999999999}' is not a field",
        {"c.yaml": smoke(lambda c: c["prompt"].update(math="{question} {question:99999999999}"))}),
    Row("local-json-nan", "data arith-test --config {tmp}/c.yaml --out {tmp}/o.parquet",
        "datasets.eval.arith-test: {tmp}/d.jsonl line 1: NaN is not a finite number",
        {"c.yaml": smoke(local_data("d.jsonl")), "d.jsonl": '{"problem": "x", "answer": NaN}\n'}),
]  # fmt: skip


def _fill(text: str, tmp: Path) -> str:
    return text.replace("{tmp}", str(tmp)).replace("{smoke}", str(SMOKE))


@pytest.fixture(scope="module")
def model_inputs(request, tmp_path_factory) -> Path:
    """The tiny model, the smoke data sets it reads and its generations (rows with ``model``)."""
    from lie.stages.data.build import build_dataset

    tiny = request.getfixturevalue("arith_tiny")
    folder = tmp_path_factory.mktemp("model-inputs")
    config = yaml.safe_load(SMOKE.read_text(encoding="utf-8"))
    for name in ("test", "train"):
        build_dataset(Config.of(config), f"arith-{name}", folder / f"{name}.parquet", progress=False)
    generate = MODEL_COMMANDS["generate"].replace("{smoke}", str(SMOKE)).replace("{tmp}/m", str(tiny))
    assert (
        main(
            shlex.split(
                generate.replace("{tmp}/o.jsonl", "{tmp}/tiny-gen.jsonl").replace("{tmp}", str(folder))
            )
        )
        == 0
    )
    (folder / "tiny-gen.manifest.json").unlink(missing_ok=True)
    shutil.copytree(tiny, folder / "m", ignore=shutil.ignore_patterns(".*", "lie_output.json"))
    return folder


@pytest.mark.parametrize("row", ROWS, ids=[row.id for row in ROWS])
def test_a_hostile_input_is_one_line(row: Row, tmp_path: Path, capsys, monkeypatch, request):
    if row.model is not None:
        inputs = request.getfixturevalue("model_inputs")
        for name in ("test.parquet", "train.parquet", "tiny-gen.jsonl"):
            shutil.copy(inputs / name, tmp_path / name)
        shutil.copytree(inputs / "m", tmp_path / "m")
        row.model(tmp_path / "m")
    (tmp_path / "in.jsonl").write_text(json.dumps(ROW) + "\n")
    (tmp_path / "gen.jsonl").write_text(json.dumps(GEN) + "\n")
    for name, content in row.files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(_fill(content, tmp_path), encoding="utf-8")
    if row.setup is not None:
        row.setup(tmp_path, monkeypatch)
    monkeypatch.setattr(
        "lie.formats.prompts.RENDER_LIMIT_S", 1.0, raising=False
    )  # a template without end: 1 s
    argv = [_fill(word, tmp_path) for word in shlex.split(row.command)]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(os, "execv", lambda *a: pytest.fail(f"lie {row.command} started {a[0]}"))
    try:
        status = main(argv)
    except SystemExit as stop:  # argparse's usage errors
        status = stop.code
    err = capsys.readouterr().err
    assert status == 2, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    mine = [line for line in err.splitlines() if line.startswith(f"lie {argv[0]}:")]
    assert len(mine) == 1 and mine[0].startswith(f"lie {argv[0]}: error: "), err[-3000:]
    assert _fill(row.says, tmp_path) in mine[0], mine[0]


def test_every_row_has_its_own_name():
    names = [row.id for row in ROWS]
    assert len(names) == len(set(names))


def test_special_files_are_never_opened_blocking(tmp_path):
    """The FIFO row would hang in ``open`` if the reader opened it blocking: the kind is read first."""
    from lie.core.errors import LieError
    from lie.formats.jsonl import open_input

    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(LieError, match="named pipe"):
        open_input(tmp_path / "fifo")
    assert stat.S_ISFIFO(os.stat(tmp_path / "fifo").st_mode)


def test_a_snakemake_config_override_is_blamed_on_config_not_the_file():
    """Issue 33 (minor): ``snakemake --config name=<5000 digits>`` (Snakemake reads it as infinity)
    was blamed on the config file."""
    from lie.config import validate_workflow
    from lie.core.errors import LieError

    config = yaml.safe_load(SMOKE.read_text(encoding="utf-8"))
    config["name"] = float("1" + "0" * 5000)  # Snakemake's parse_config: int() refuses, float() gives inf
    with pytest.raises(LieError) as error:
        validate_workflow(config, [SMOKE])
    assert str(error.value).startswith("--config: key 'name': inf is not a finite number"), error.value
    config["name"] = 12345
    with pytest.raises(LieError, match=r"^--config: key 'name': 12345 is not of type 'string'"):
        validate_workflow(config, [SMOKE])
    config["name"] = yaml.safe_load(SMOKE.read_text(encoding="utf-8"))["name"]  # the file's again
    config["runs"] = ["nope"]  # a reference that fails only with the files: both named
    with pytest.raises(LieError, match=rf"^{SMOKE} with --config runs: runs names 'nope'"):
        validate_workflow(config, [SMOKE])


def test_an_unreadable_input_says_permission_denied(tmp_path):
    """Issue 33 (minor): a chmod-000 input, as the kernel answers a user (root runs without its
    override of file modes, ``setpriv``): ``Permission denied`` naming the file, never "No such file"."""
    config = tmp_path / "c.yaml"
    config.write_text(SMOKE.read_text(encoding="utf-8"))
    rows = tmp_path / "in.jsonl"
    rows.write_text(json.dumps(ROW) + "\n")
    for path in (config, rows):
        path.chmod(0)
    user = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--inh-caps", "-all"]
    lie = [*(user if os.geteuid() == 0 else []), str(Path(sys.executable).parent / "lie")]
    for args, path in ((["plan", "--config", str(config)], config),
                       (["score", "--in", str(rows), "--out", str(tmp_path / "o.jsonl")], rows)):  # fmt: skip
        proc = subprocess.run([*lie, *args], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2, proc.stderr[-3000:]
        assert proc.stderr.splitlines() == [f"lie {args[0]}: error: cannot read {path}: Permission denied"]


def test_a_models_own_code_runs_only_where_the_config_turns_trust_remote_code_on(model_inputs, tmp_path):
    """A model folder may ship Python (``config.json``'s ``auto_map``): ``lie generate`` loads the
    library's own class unless the config's ``trust_remote_code`` is true (its one reader,
    lie.config.sections.trusts_remote_code), and only then runs the folder's code."""
    import subprocess
    import sys

    model = tmp_path / "m"
    shutil.copytree(model_inputs / "m", model)
    config = json.loads((model / "config.json").read_text(encoding="utf-8"))
    real = config["architectures"][0]
    config["auto_map"] = {"AutoModelForCausalLM": f"shipped.{real}"}
    (model / "config.json").write_text(json.dumps(config), encoding="utf-8")
    (model / "shipped.py").write_text(
        "import os, pathlib\n"
        "pathlib.Path(os.environ['LIE_TEST_MARK']).write_text('ran')\n"
        f"from transformers import {real}\n",
        encoding="utf-8",
    )
    base = yaml.safe_load(SMOKE.read_text(encoding="utf-8"))
    assert base["trust_remote_code"] is False
    for trust in (False, True):
        mark = tmp_path / f"ran-{trust}"
        conf = tmp_path / f"c-{trust}.yaml"
        conf.write_text(yaml.safe_dump({**base, "trust_remote_code": trust}), encoding="utf-8")
        command = (
            MODEL_COMMANDS["generate"].replace("{smoke}", str(conf)).replace("o.jsonl", f"o-{trust}.jsonl")
        )
        shutil.copy(model_inputs / "test.parquet", tmp_path / "test.parquet")
        env = {**os.environ, "LIE_TEST_MARK": str(mark), "HF_MODULES_CACHE": str(tmp_path / "modules"),
               "HF_HUB_OFFLINE": "1"}  # fmt: skip
        proc = subprocess.run([sys.executable, "-m", "lie", *shlex.split(_fill(command, tmp_path))], env=env,
                              capture_output=True, text=True, timeout=300)  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert mark.exists() == trust, f"trust_remote_code={trust}: the folder's code ran: {mark.exists()}"
