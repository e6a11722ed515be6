"""Config strings reach the jobs' shell as data, never as code: every rule quotes what it substitutes.

An outdir with a space, both quotes, ``$(...)``, backticks and ``;`` is planned by the real Snakemake
(through ``lie snakemake``) into commands whose words are exactly the paths, and (heavy) its jobs run
and write there while no command of the path runs. The rule itself is checked on the rule files: a
placeholder in a rule's ``shell:`` without ``:q`` fails :func:`test_every_substituted_value_is_quoted`.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
SMOKE = REPO / "workflow" / "configs" / "smoke.yaml"
# shell assignments built and quoted by the rule's own function (common.smk's train_env, shlex.quote)
PRE_QUOTED = {"resources.train_env"}


def _shell_templates() -> dict[str, str]:
    """Each rule's shell command as written: rule name -> the concatenated string literals."""
    found = {}
    for path in sorted((REPO / "workflow" / "rules").glob("*.smk")):
        for match in re.finditer(r"^rule (\w+):\n(.*?)(?=^rule |\Z)", path.read_text(), re.M | re.S):
            body = match.group(2).split("\n    shell:\n", 1)
            if len(body) == 2:
                literals = re.findall(r'^\s+"((?:[^"\\]|\\.)*)"', body[1], re.M)
                found[match.group(1)] = "".join(literals)
    return found


def test_every_substituted_value_is_quoted():
    templates = _shell_templates()
    assert {"data", "base_model", "reflen", "train", "merge", "generate", "evaluate", "report"} <= set(
        templates
    )
    bare = {
        (rule, field)
        for rule, text in templates.items()
        for field in re.findall(r"(?<!\{)\{([^{}]+)\}(?!\})", text)
        if not field.endswith(":q") and field not in PRE_QUOTED
    }
    assert not bare, f"placeholders without :q: {sorted(bare)}"


HOSTILE = "out dir 'q\" $(touch {tmp}/PWNED) `touch {tmp}/PWNED2`; touch {tmp}/PWNED3"
ENGINE_ARG = "1; touch {tmp}/PWNED4"


def _workdir(tmp: Path) -> tuple[Path, str]:
    """A workflow folder (links to the checkout's) whose config's outdir is :data:`HOSTILE`."""
    for name in ("Snakefile", "workflow"):
        (tmp / name).symlink_to(REPO / name)
    config = yaml.safe_load(SMOKE.read_text(encoding="utf-8"))
    outdir = str(tmp / HOSTILE.format(tmp=tmp))
    config["outdir"] = outdir
    config["engines"]["vllm_cpu"]["engine_args"]["x"] = ENGINE_ARG.format(tmp=tmp)
    (tmp / "c.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return tmp, outdir


def _lie_snakemake(workdir: Path, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    return subprocess.run([str(bin_dir / "lie"), "snakemake", "--configfile", "c.yaml", *args], cwd=workdir,
                          env=env, capture_output=True, text=True, timeout=timeout)  # fmt: skip


def _nothing_ran(tmp: Path) -> None:
    assert not [p.name for p in tmp.iterdir() if p.name.startswith("PWNED")]


@pytest.mark.heavy
def test_a_hostile_outdir_is_planned_word_for_word(tmp_path):
    """A dry run (10-17 s on a 2-vCPU VM: heavy; make test keeps the check of the rule files)."""
    workdir, outdir = _workdir(tmp_path)
    proc = _lie_snakemake(workdir, "-n", "-p", "-c1")
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    commands = [line.removeprefix("Shell command: ") for line in proc.stdout.splitlines()
                if line.startswith("Shell command: ")]  # fmt: skip
    assert len(commands) >= 8
    for command in commands:
        words = shlex.split(command)
        if "--config" in words:
            assert words[words.index("--config") + 1] == f"{outdir}/config.yaml", command
        if ">" in words:  # the job's log, one word
            assert words[words.index(">") + 1].startswith(f"{outdir}/logs/"), command
    # smoke_grpo's own job (generate_by: vLLM, with its engine args), not smoke_grpo_lie's: by its output
    generate = next(c for c in commands if " generate arith-test " in c and "/generations/smoke_grpo/" in c)
    words = shlex.split(generate)
    assert f"x={ENGINE_ARG.format(tmp=tmp_path)}" in words, generate
    assert words[words.index("--out") + 1] == f"{outdir}/generations/smoke_grpo/arith-test.jsonl"
    _nothing_ran(tmp_path)


@pytest.mark.heavy
def test_jobs_run_in_a_hostile_outdir_and_no_part_of_it_runs(tmp_path):
    """The data and base-model jobs of the smoke config (about 45 s on a 2-vCPU VM)."""
    workdir, outdir = _workdir(tmp_path)
    targets = [f"{outdir}/base/tiny", f"{outdir}/data/arith-test.parquet"]
    proc = _lie_snakemake(workdir, "-c2", *targets, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (Path(outdir) / "base" / "tiny" / "model.safetensors").is_file()
    assert (Path(outdir) / "data" / "arith-test.parquet").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["Snakefile", "workflow", "c.yaml", ".snakemake", Path(outdir).relative_to(tmp_path).parts[0]]
    )
    _nothing_ran(tmp_path)
