"""Every command README.md shows, in its shell blocks and quoted in its prose, walked as written.

Each command is run here when it is cheap (`lie plan`, `lie --help`, `make dry-run`, `make lint`),
as a dry run when it would book a cluster (the Slurm launches, with `-n`), or, when it is a long
target that another test runs through the same door, checked with `make -n` (its recipe resolves)
and named with that test. A `lie` command quoted in the prose that runs for minutes on a GPU node
(`lie preflight --fetch`) is parsed by that command's own parser (the command and each flag exist)
and named with the test that runs it; `apptainer`, not installable here, has the files it names
checked. A command the README gains without a way here fails the walk.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from small import site_file_of_the_docs

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

# long make targets: run by another test through the same door (or by CI itself); here `make -n`
ELSEWHERE = {
    "smoke": "tests/test_smoke_e2e.py (the smoke DAG, once per pytest run)",
    "test": "CI (.ci/run runs make test)",
    "test-all": "make test plus the heavy mark",
    "study": "tests/test_study.py and tests/test_study_v3.py (the third registration's DAG, its pipeline shrunk)",
    "bench": "tests/test_bench_fallback.py (make bench BENCH_ARGS=--quick)",
    "report": "tests/test_make_report.py (make report on the smoke DAG)",
    "check-gpu-env": "needs the package index (a pip dry run over envs/gpu.lock)",
    "venv": "builds .venv (make test's first step)",
}
RUN_HERE = {"dry-run", "lint"}
ELSEWHERE_PROSE = {  # further make targets README names in its prose
    "venv-vllm": "builds .venv-vllm (make test's first step)",
    "study-full": "the study's full registration (hours; tests/test_study.py runs its DAG shrunk)",
    "study-v2": "the second registration (40 min; tests/test_study.py runs its DAG shrunk)",
    "study-pilot": "the closing pilot (~30 CPU-minutes; tests/test_study_replay.py runs its recipe)",
    "coverage": "make test under coverage.py (docs/coverage.md)",
    "check-sky": "builds .venv-sky and reads the task with SkyPilot's parser (tests/test_sky_task.py, heavy)",
    "device-kit": "downloads the GPU machine's wheels (tests/test_device_kit.py builds its parts; heavy: the kit)",
}
# lie commands README quotes in its prose that only parse here: where they run
PARSED = {
    "preflight": "tests/test_preflight.py (the CPU rows; the whole CPU preflight under the heavy mark)",
    "train": "the smoke DAG (tests/test_smoke_e2e.py, tests/test_verl_main_ppo.py)",
    "generate": "the smoke DAG (tests/test_smoke_e2e.py)",
    "data": "the smoke DAG (tests/test_smoke_e2e.py), tests/test_data_*.py",
    "reflen": "the smoke DAG (tests/test_smoke_e2e.py), tests/test_reflen.py",
}


def readme_commands() -> list[str]:
    """The commands of README's ```bash blocks, in order: comments dropped, continued lines joined."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    commands = []
    for block in re.findall(r"^```bash\n(.*?)^```", text, flags=re.S | re.M):
        joined = re.sub(r"\\\n\s*", "", block)
        for line in joined.splitlines():
            command = re.sub(r"\s+#.*$", "", line).strip()
            if command and not command.startswith("#"):
                commands.append(command)
    return commands


def readme_prose_commands() -> list[str]:
    """The commands README quotes inline outside its code blocks (`lie ...`, `make ...`, `apptainer ...`,
    `snakemake ...`; a bare name such as `snakemake` is a name, not a command)."""
    text = re.sub(r"^```.*?^```", "", (REPO / "README.md").read_text(encoding="utf-8"), flags=re.S | re.M)
    spans = re.findall(r"`([^`\n]+)`", text)
    return list(dict.fromkeys(s for s in spans if re.match(r"(lie|make|apptainer|snakemake) [\w-]", s)))


def shell(command: str, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", "PWD": str(REPO), "HF_HUB_OFFLINE": "1"}
    return subprocess.run(["bash", "-c", command], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=timeout)  # fmt: skip


def how(command: str) -> tuple[str, str]:
    """How the walk runs ``command``: (the shell command it runs, what that proves)."""
    make = re.fullmatch(r"make ([\w-]+)", command)
    if make:
        target = make.group(1)
        if target in RUN_HERE:
            return command, "run as written"
        if target in ELSEWHERE:
            return f"make -n {target}", f"recipe resolves; run by {ELSEWHERE[target]}"
    if re.fullmatch(r"\.venv/bin/lie (plan|--help)", command):
        return command, "run as written"
    if " lie snakemake --profile profiles/slurm" in command:
        return f"{command} -n", "a dry run of the Slurm launch"
    raise AssertionError(f"README shows `{command}`, which this walk has no way to run: add one")


def how_prose(command: str) -> tuple[str, str]:
    """How the walk checks a command quoted in README's prose: ("run", shell command), ("parse", the
    arguments after ``lie``) or ("files", the paths it names), with what that proves."""
    words = command.split()
    if words[0] == "make" and len(words) == 2 and words[1] in ELSEWHERE_PROSE:
        return ("run", f"make -n {words[1]}"), f"recipe resolves; {ELSEWHERE_PROSE[words[1]]}"
    if words[0] == "make" or re.fullmatch(r"lie (plan|--help)", command):
        run, proves = how(command.replace("lie ", ".venv/bin/lie ", 1))
        return ("run", run), proves
    if words[:2] == ["lie", "snakemake"]:
        if "--profile" not in words:
            return ("run", ".venv/bin/lie snakemake --help"), "the launcher exists"
        dry = " ".join(words[1:]).replace("gpus=N", "gpus=1")  # README's placeholder N
        dry = re.sub(r"(?<=\s)site\.yaml\b", "{site}", dry)  # the user's site file: docs/cluster.md's
        return ("run", f".venv/bin/lie {dry}{'' if '-n' in words else ' -n'}"), "a dry run of the launch"
    if words[0] == "lie" and words[1] in PARSED:
        return ("parse", " ".join(words[1:])), f"command and flags exist; run by {PARSED[words[1]]}"
    if words[0] == "apptainer" and words[1] in ("build", "test"):
        named = [w for w in words[2:] if w.startswith("containers/")] or ["containers/lie-gpu.def"]  # `...`
        return ("files", " ".join(named)), "apptainer is not installable here: the files it names"
    raise AssertionError(f"README quotes `{command}`, which this walk has no way to check: add one")


def test_the_readme_shows_the_commands_this_walk_knows():
    commands = readme_commands()
    assert commands[:2] == ["make smoke", "make test"]  # the two commands README starts with
    for command in commands:
        how(command)


@pytest.mark.parametrize("command", readme_commands())
def test_each_readme_command_runs_as_written(command):
    run, proves = how(command)
    proc = shell(run)
    assert proc.returncode == 0, f"{run} ({proves}):\n{(proc.stdout + proc.stderr)[-3000:]}"
    assert "Traceback" not in proc.stderr
    if "lie snakemake" in run:
        assert "train" in proc.stdout and "Job stats" in proc.stdout, proc.stdout[-2000:]


def test_the_walk_knows_every_command_readme_quotes_in_its_prose():
    commands = readme_prose_commands()
    assert "lie preflight --fetch" in commands and "make report" in commands, commands
    for command in commands:
        how_prose(command)


@pytest.mark.parametrize("command", readme_prose_commands())
def test_each_command_quoted_in_readme_prose_works_as_written(command, tmp_path):
    (kind, what), proves = how_prose(command)
    if kind == "parse":
        from lie.cli import command_parser

        name, *args = what.split()
        parser = command_parser(name)  # a KeyError for a command lie does not have
        if args:  # a whole command line (a bare name in the prose only names the command)
            try:
                parser.parse_args(args)
            except SystemExit as exc:  # argparse's answer to an unknown flag or a missing argument
                pytest.fail(f"`{command}`: lie {name} refuses it (exit {exc.code}; {proves})")
    elif kind == "files":
        definition = REPO / "containers" / "lie-gpu.def"
        for path in what.split():
            assert path.endswith(".sif") or (REPO / path).is_file(), f"{command}: {path} is missing"
        sections = re.findall(r"^%(\w+)", definition.read_text(encoding="utf-8"), flags=re.M)
        assert "post" in sections and ("test" in sections or "build" in command.split()), sections
    else:
        site = tmp_path / "site.yaml"
        site.write_text(site_file_of_the_docs(), encoding="utf-8")  # a first user's, as docs/cluster.md shows
        proc = shell(what.replace("{site}", str(site)))
        assert proc.returncode == 0, f"{what} ({proves}):\n{(proc.stdout + proc.stderr)[-3000:]}"
        assert "Traceback" not in proc.stderr
