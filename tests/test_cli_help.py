"""What ``lie``, ``lie --help`` and each command's ``--help`` print (#34, item 9), through the real entry point.

``lie`` alone prints the help, grouped, on standard error, and exits 2 (argparse's status for a usage
error; ``lie --help`` asked for it: standard output, status 0). The commands are listed one a line under
three headings; a command's options show their defaults; ``lie snakemake --help`` is plain text.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from lie.cli import COMMANDS, main

REPO = Path(__file__).resolve().parents[1]
LIE = Path(sys.executable).parent / "lie"  # the console script of this environment (pyproject.toml)
HEADINGS = ("pipeline steps", "study", "tools")


def _lie(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(LIE), *args], cwd=REPO, capture_output=True, text=True, timeout=120)


def _listing(text: str) -> dict[str, list[str]]:
    """heading -> the commands listed under it, one a line (``  NAME  one-line help``)."""
    groups: dict[str, list[str]] = {}
    heading = None
    for line in text.splitlines():
        if line and not line.startswith(" ") and line.rstrip().endswith(":"):
            heading = next((h for h in HEADINGS if line.startswith(h)), None)
            if heading:
                groups[heading] = []
        elif heading and line.startswith("  ") and line.split():
            name = line.split()[0]
            assert name in COMMANDS, f"not a command: {line!r}"
            assert line.split(None, 1)[1] == COMMANDS[name][1], line  # its one-line help, whole
            assert len(line) <= 80, f"longer than a terminal: {line!r}"
            groups[heading].append(name)
        elif not line.strip():
            heading = None
    return groups


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def test_help_lists_every_command_once_on_its_own_line_in_three_groups():
    proc = _lie("--help")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    groups = _listing(proc.stdout)
    assert list(groups) == list(HEADINGS), proc.stdout
    listed = [name for names in groups.values() for name in names]
    assert sorted(listed) == sorted(COMMANDS) and len(listed) == len(set(listed)), groups
    assert groups["pipeline steps"][:3] == ["data", "base-model", "reflen"]  # the DAG's order
    assert all(name.startswith("study-") for name in groups["study"])
    assert proc.stdout.startswith("usage: lie [-h] [--version] COMMAND [ARGS...]\n"), proc.stdout[:200]


def test_lie_alone_prints_the_grouped_help_and_exits_2():
    proc = _lie()
    assert proc.returncode == 2 and proc.stdout == ""
    assert list(_listing(proc.stderr)) == list(HEADINGS), proc.stderr
    assert proc.stderr == _lie("--help").stdout  # the whole help, not just an error line


def test_an_unknown_command_is_a_usage_error_naming_it():
    proc = _lie("trian")
    assert proc.returncode == 2 and proc.stdout == ""
    assert "usage: lie [-h] [--version] COMMAND [ARGS...]" in proc.stderr
    assert "invalid choice: 'trian'" in proc.stderr


def test_plan_help_shows_its_defaults_and_what_group_does():
    from lie.stages.plan import GEN_TOKENS_PER_S_4B, MFU

    proc = _lie("plan", "--help")
    assert proc.returncode == 0, proc.stderr
    text = _flat(proc.stdout)
    for option, default in (
        ("--gen-tps GEN_TPS", GEN_TOKENS_PER_S_4B),
        ("--mfu MFU", MFU),
        ("--config CONFIG", "config.yaml"),
        ("--log-level LOG_LEVEL", "INFO"),
    ):
        (help_,) = re.findall(rf"{re.escape(option)} ((?:(?! --).)*)", text)  # up to the next option
        assert help_.strip().endswith(f"(default: {default})"), (option, help_)
    assert "add the runs" not in text
    assert re.search(
        r"--group GROUP plan the runs of an optional group .*instead of the config's runs", text
    ), text


def test_group_plans_that_group_instead_of_the_configs_runs():
    """What --group's help says: the sensitivity runs alone, not the paper's main runs (config.yaml)."""
    proc = _lie("plan", "--group", "sensitivity")
    assert proc.returncode == 0, proc.stderr
    runs = [
        line.split()[0]
        for line in proc.stdout.splitlines()
        if line.startswith("qwen") or line.startswith("octo")
    ]
    assert runs and all("_lie_" in run for run in runs), runs  # theta5, n20, e0, ...
    assert "qwen3-4b-base_dapo_gspo" not in runs and "qwen3-4b-base_dapo_gspo_lie" not in runs


@pytest.mark.parametrize("name", sorted(set(COMMANDS) - {"snakemake"}))
def test_no_command_help_shows_an_empty_or_repeated_default(name, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([name, "--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    assert text.startswith(f"usage: lie {name} ")
    for empty in ("(default: None)", "(default: [])", "(default: False)", "(default: )"):
        assert empty not in text, (empty, text)
    for block in re.split(r"\n  (?=-)", text):  # one option's help each
        assert _flat(block).lower().count("default") <= 1, block


def test_snakemake_help_is_plain_text():
    proc = _lie("snakemake", "--help")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: lie snakemake [SNAKEMAKE ARGUMENTS...]\n"), proc.stdout[:200]
    assert "`" not in proc.stdout  # no reStructuredText markup
    assert "lie snakemake --configfile workflow/configs/smoke.yaml" in proc.stdout
