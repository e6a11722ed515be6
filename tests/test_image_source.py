"""The image runs the checkout's code: the train job's entry into the image refuses another `lie`.

The image's installed copy is simulated by the `lie` this environment imports (the editable install
of this repository); the checkout is a copy of src/ in a temporary tree, edited or not. The path is
the real one: workflow/scripts/train_job.sh -> apptainer exec (a stand-in that runs the command
with the `--env` settings it is given) -> workflow/scripts/in_image.sh -> `lie train` (a stand-in).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from standins import write_tools

REPO = Path(__file__).resolve().parents[1]

APPTAINER = """shift  # exec
while [[ "$1" == --* ]]; do case "$1" in --env) export "$2"; shift 2;; --bind) shift 2;; *) shift;; esac; done
shift  # the image
exec "$@"
"""
LIE = 'echo "TRAINING with $*"\n'


def _tree(tmp_path: Path, edit: bool) -> tuple[Path, dict[str, str]]:
    tree = tmp_path / "tree"
    shutil.copytree(REPO / "src" / "lie", tree / "src" / "lie", ignore=shutil.ignore_patterns("__pycache__"))
    os.symlink(REPO / "workflow", tree / "workflow")
    if edit:  # a reward edited after the image was built
        reward = tree / "src" / "lie" / "core" / "reward.py"
        reward.write_text(reward.read_text() + "\n# edited after the build\n")
    bin_dir = write_tools(tmp_path / "bin", {"apptainer": APPTAINER, "lie": LIE})
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "PYTHONPATH"))}
    env.update(
        {"PATH": f"{bin_dir}:{Path(sys.executable).parent}:{os.environ['PATH']}", "LIE_IMAGE": "lie-gpu.sif"}
    )
    return tree, env


def _train_job(tree: Path, env: dict[str, str], **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["workflow/scripts/train_job.sh", "verl", "run1", "--config", "c.yaml"],
        cwd=tree, env={**env, **extra}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_an_image_whose_lie_differs_from_the_tree_is_refused_in_one_line(tmp_path):
    tree, env = _tree(tmp_path, edit=True)
    proc = _train_job(tree, env, LIE_APPTAINER_ARGS="--nv --bind /x")  # no --env PYTHONPATH: the image's copy
    assert proc.returncode == 1
    assert "TRAINING" not in proc.stdout
    (line,) = [x for x in proc.stderr.splitlines() if x.strip()]
    assert line.startswith("lie: the image runs its own copy of lie") and str(tree / "src" / "lie") in line
    assert line.endswith("apptainer build --force containers/lie-gpu.sif containers/lie-gpu.def")


@pytest.mark.parametrize("edit", [True, False])
def test_the_launchers_default_runs_the_trees_code(tmp_path, edit):
    """The default apptainer arguments put the tree's src/ first, so an edit needs no rebuild."""
    tree, env = _tree(tmp_path, edit=edit)
    proc = _train_job(tree, env)
    assert proc.returncode == 0, proc.stderr
    assert "TRAINING with train run1 --engine verl --config c.yaml" in proc.stdout
    assert "lie: running the tree's own src/" in proc.stderr


def test_an_image_built_from_this_tree_passes_without_the_bind(tmp_path):
    tree, env = _tree(tmp_path, edit=False)
    proc = _train_job(tree, env, LIE_APPTAINER_ARGS="--nv")
    assert proc.returncode == 0, proc.stderr
    assert "identical to the tree's src/" in proc.stderr
