"""Every command docs/cluster.md's SkyPilot section shows, in its shell block and quoted in its prose, walked as
written, the way tests/test_readme_commands.py walks README's.

Without a cloud, a docker daemon or credentials here: `lie plan` is run; a make target is resolved with
`make -n` and named with the test that runs it; `docker build/push` has the file and tag it names checked
against the task file; each `sky ...` command is parsed by SkyPilot's own command-line parser (click, in
.venv-sky: the command, its subcommand and every option exist and take what is given; heavy, as .venv-sky
is built by make venv-sky), and its `--env` names are the task's envs; the `pip install` of SkyPilot's cloud
extras names the locked version and extras the locked wheel declares. A command the section gains without
a way here fails the walk.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
TASK = "cloud/skypilot/lie.yaml"
HEADING = "## On rented GPUs: SkyPilot"

MAKE_ELSEWHERE = {
    "venv-sky": "tests/test_sky_task.py (make check-sky builds it first)",
    "check-sky": "tests/test_sky_task.py::test_make_check_sky_accepts_the_task_and_refuses_a_misspelt_key",
}


def section() -> str:
    text = (REPO / "docs" / "cluster.md").read_text(encoding="utf-8")
    start = text.index(HEADING)
    end = text.find("\n## ", start + len(HEADING))
    return text[start : end if end > 0 else None]


def block_commands() -> list[str]:
    """The commands of the section's ```bash block: comments dropped, continued lines joined, `&&` split."""
    (block,) = re.findall(r"^```bash\n(.*?)^```", section(), flags=re.S | re.M)
    commands = []
    for line in re.sub(r"\\\n\s*", "", block).splitlines():
        line = re.sub(r"\s+#.*$", "", line).strip()
        commands += [part.strip() for part in line.split("&&") if part.strip()]
    return commands


def prose_commands() -> list[str]:
    """The `sky ...`, `lie ...` and `make ...` commands the section quotes outside its block."""
    text = re.sub(r"^```.*?^```", "", section(), flags=re.S | re.M)
    spans = re.findall(r"`([^`\n]+)`", text)
    return list(dict.fromkeys(s for s in spans if re.match(r"(sky|lie|make) [\w-]", s)))


def sky_commands() -> list[list[str]]:
    """Every `sky` command of the section, as its arguments after `sky`."""
    found = [c for c in block_commands() if c.startswith(".venv-sky/bin/sky ")]
    found += [f".venv-sky/bin/{c}" for c in prose_commands() if c.startswith("sky ")]
    return [shlex.split(c)[1:] for c in found]


def task() -> dict:
    return yaml.safe_load((REPO / TASK).read_text(encoding="utf-8"))


def test_every_command_of_the_section_has_a_way_here():
    ways = []
    for command in block_commands() + prose_commands():
        if re.match(r"(\.venv-sky/bin/)?sky ", command):
            ways.append("parsed by SkyPilot (heavy)")
        elif command.startswith("make "):
            target = command.split()[1]
            assert target in MAKE_ELSEWHERE, f"docs/cluster.md: make {target} has no way in this walk"
            ways.append(MAKE_ELSEWHERE[target])
        elif command.startswith((".venv/bin/lie plan", "lie plan")):
            ways.append("run")
        elif command.startswith(("docker build", "docker push", ".venv-sky/bin/pip install")):
            ways.append("its file, tag or pin checked")
        elif command.startswith("lie preflight"):
            ways.append("tests/test_shared_outdir.py (its row)")
        elif command.startswith("lie merge"):
            ways.append("the smoke DAG (tests/test_smoke_e2e.py)")
        else:
            pytest.fail(f"docs/cluster.md's SkyPilot section: no way to walk `{command}`")
    assert len(ways) >= 8  # the block's nine commands, at least


def test_the_make_targets_it_names_resolve():
    for target in MAKE_ELSEWHERE:
        proc = subprocess.run(["make", "-n", target], cwd=REPO, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
    assert (
        TASK in subprocess.run(["make", "-n", "check-sky"], cwd=REPO, capture_output=True, text=True).stdout
    )


def test_lie_plan_prints_the_gpu_hours_and_disk_the_section_prices(tmp_path):
    (command,) = [c for c in block_commands() if " plan " in c]
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(["bash", "-c", command.replace(".venv/bin/lie", str(BIN / "lie"))], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    header = next(line for line in proc.stdout.splitlines() if line.startswith("run "))
    assert "GPU-h" in header and "disk GB" in header
    total = next(line for line in proc.stdout.splitlines() if line.startswith("total"))
    gpu_h = total[header.index("GPU-h") - 6 : header.index("GPU-h") + 5].split()  # right-aligned under it
    assert len(gpu_h) == 1 and f"{gpu_h[0]} GPU-h in all" in section(), (total, gpu_h)  # the figure quoted


def test_docker_and_pip_name_the_task_image_and_the_locked_skypilot():
    build = next(c for c in block_commands() if c.startswith("docker build"))
    push = next(c for c in block_commands() if c.startswith("docker push"))
    tag = shlex.split(build)[shlex.split(build).index("-t") + 1]
    assert (REPO / shlex.split(build)[shlex.split(build).index("-f") + 1]).is_file()
    assert push == f"docker push {tag}" and tag.startswith("REGISTRY/")
    assert task()["resources"]["image_id"] == f"docker:{tag.removeprefix('REGISTRY/')}"  # the same tag
    for launch in (c for c in block_commands() if " launch " in c):
        assert f"--image-id docker:{tag}" in launch
    (pip,) = [c for c in block_commands() if "pip install" in c]
    locked = re.search(r"^skypilot==(\S+)$", (REPO / "envs/sky.lock").read_text(), flags=re.M)
    assert locked and f"=={locked.group(1)}" in pip


def test_the_launch_commands_set_every_env_the_task_leaves_unset():
    unset = {k for k, v in task()["envs"].items() if v is None}
    assert unset == {"LIE_BUCKET"}
    for args in (shlex.split(c)[1:] for c in block_commands() if c.startswith(".venv-sky/bin/sky ")):
        if "launch" in args[:2]:
            given = {a.split("=")[0] for a, b in zip(args, args[1:]) if a == "--env" for a in [b]}
            assert unset <= given, args
            assert TASK in args


SKY_PARSE = r"""
import json, sys
from sky.client.cli import command
results = []
for args in json.loads(sys.argv[1]):
    group, ctx, rest, names = command.cli, None, list(args), []
    try:
        while True:
            ctx = group.make_context(names[-1] if names else "sky", rest, parent=ctx)
            if not hasattr(group, "resolve_command"):
                break
            name, group, rest = group.resolve_command(ctx, ctx.protected_args + ctx.args)
            names.append(name)
        results.append(["ok", " ".join(names), sorted(k for k, v in ctx.params.items() if v not in (None, False, (), []))])
    except Exception as exc:
        results.append(["error", " ".join(names), f"{type(exc).__name__}: {exc}"])
print(json.dumps(results))
"""


@pytest.mark.heavy  # .venv-sky (make venv-sky) and SkyPilot's import: ~20 s
def test_skypilots_own_parser_takes_every_sky_command_of_the_section():
    from test_sky_task import _sky_python

    commands = sky_commands()
    assert {" ".join(a[:2]) for a in commands} >= {"launch -c", "logs lie", "down lie", "jobs launch"}
    proc = subprocess.run([str(_sky_python()), "-c", SKY_PARSE, json.dumps(commands)], capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    for args, (status, _, detail) in zip(commands, results):
        assert status == "ok", f"sky {shlex.join(args)}: {detail}"
    by_command = {" ".join(args): (name, detail) for args, (_, name, detail) in zip(commands, results)}
    launch = next(v for k, v in by_command.items() if k.startswith("launch "))
    assert launch[0] == "launch" and {"cluster", "num_nodes", "env", "image_id"} <= set(launch[1])
    jobs = next(v for k, v in by_command.items() if k.startswith("jobs launch"))
    assert jobs[0] == "jobs launch" and {"use_spot", "num_nodes", "env", "image_id"} <= set(jobs[1])
    # the cloud extras the pip line names are extras of the locked SkyPilot
    (pip,) = [line for line in section().splitlines() if "pip install" in line]  # with its comment
    named = set(re.findall(r"\[(\w+)\]", pip))
    extras = subprocess.run([str(_sky_python()), "-c", "import importlib.metadata as m; "
                             "print(' '.join(m.metadata('skypilot').get_all('Provides-Extra')))"],
                            capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
    assert named and named <= set(extras), named - set(extras)
