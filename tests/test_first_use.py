"""What a first user meets before reading the code: the formats a command's --help promises work as
shown (``lie grade``'s input items, each kind)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent


def test_the_items_lie_grade_help_shows_grade_as_shown(tmp_path):
    help_text = subprocess.run(
        [BIN / "lie", "grade", "--help"], capture_output=True, text=True, check=True
    ).stdout
    flat = re.sub(r"\s*\n\s*", " ", help_text)
    items = [json.loads(m) for m in re.findall(r"\{\"response\".*?\}(?= \(|,| or)", flat)]
    assert [i["kind"] for i in items] == ["math", "choice"], flat
    assert items[1]["choices"] == ["A", "B", "C", "D"]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items), encoding="utf-8")
    subprocess.run(
        [BIN / "lie", "grade", "--in", tmp_path / "in.jsonl", "--out", tmp_path / "out.jsonl", "--workers", "1",
         "--no-progress"],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    graded = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [(g["status"], g["correct"]) for g in graded] == [("ok", True), ("ok", True)], graded


def test_licence_and_citation_agree_with_pyproject_and_readme():
    import tomllib

    import yaml

    repo = Path(__file__).resolve().parents[1]
    licence = (repo / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in licence.splitlines()[0] and "Version 2.0, January 2004" in licence
    assert tomllib.loads((repo / "pyproject.toml").read_text(encoding="utf-8"))["project"]["license"][
        "text"
    ] == ("Apache-2.0")
    cff = yaml.safe_load((repo / "CITATION.cff").read_text(encoding="utf-8"))
    assert cff["cff-version"] == "1.2.0" and cff["license"] == "Apache-2.0"
    paper = cff["preferred-citation"]
    readme = (repo / "README.md").read_text(encoding="utf-8")
    bibtex = re.search(r"```bibtex\n(.*?)```", readme, flags=re.S).group(1)
    assert f"eprint        = {{{paper['url'].rsplit('/', 1)[1]}}}" in bibtex
    authors = " and ".join(f"{a['given-names']} {a['family-names']}" for a in paper["authors"])
    assert f"author        = {{{authors}}}" in bibtex
    assert paper["title"] in bibtex and paper["url"] in readme
    assert cff["references"][0]["repository-code"] in readme


def fake_python(tmp_path: Path, version: tuple[int, int]) -> Path:
    """A ``python`` that runs a script as this one does but reports ``version`` (what make's checks read)."""
    path = tmp_path / f"python{version[0]}.{version[1]}"
    code = (
        f"import runpy, sys; sys.version_info = ({version[0]}, {version[1]}, 0, 'final', 0); "
        "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"
    )
    path.write_text(f'#!/bin/sh\nexec {sys.executable} -c "{code}" "$@"\n', encoding="utf-8")
    path.chmod(0o755)
    return path


def test_make_venv_names_the_python_it_needs_before_building_anything(tmp_path):
    repo = Path(__file__).resolve().parents[1]
    for version, says in (
        ((3, 10), "found 3.10:"),
        ((3, 13), "found 3.13 (verl 0.9.1 requires Python < 3.13):"),
    ):
        venv = tmp_path / f"venv-{version[1]}"
        proc = subprocess.run(
            ["make", "venv", f"PYTHON={fake_python(tmp_path, version)}", f"VENV={venv}"],
            cwd=repo, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert proc.returncode == 2 and not venv.exists(), proc
        first = proc.stderr.splitlines()[0]
        assert first.startswith("make venv: envs/cpu.lock is installable with Python 3.11, 3.12, " + says), (
            first
        )
    proc = subprocess.run(
        [fake_python(tmp_path, (3, 12)), repo / "envs/scripts/python_check.py"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0 and proc.stderr == "", proc


def test_lie_train_names_the_command_that_builds_its_missing_input(tmp_path):
    """Run by hand before its inputs exist, ``lie train`` names one command for the config it was given,
    and that command (dry) plans the job that writes the input."""
    import os

    import yaml

    repo = Path(__file__).resolve().parents[1]
    for name in ("Snakefile", "workflow"):
        os.symlink(repo / name, tmp_path / name)
    config = yaml.safe_load((repo / "workflow/configs/smoke.yaml").read_text(encoding="utf-8"))
    config["outdir"] = "out"
    (tmp_path / "my.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", "HF_HUB_OFFLINE": "1"}
    train = subprocess.run([BIN / "lie", "train", "smoke_grpo", "--config", "my.yaml"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=120)  # fmt: skip
    assert train.returncode == 2, train
    hint = re.search(r"build it first: (lie snakemake .*)$", train.stderr.strip())
    assert hint and hint.group(1) == (
        "lie snakemake --configfile my.yaml --cores 2 out/data/arith-train.tiny.reflen.parquet"
    ), train.stderr
    plan = subprocess.run([*hint.group(1).split(), "-n"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert plan.returncode == 0, plan.stdout[-2000:] + plan.stderr[-2000:]
    assert re.search(r"^reflen\s+1$", plan.stdout, flags=re.M), plan.stdout[-2000:]
