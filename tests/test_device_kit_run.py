"""The device kit runs verl where only the borrowed machine's image packages are (make test-all).

A borrowed GPU machine holds Python 3.12 with torch, transformers 5.17 and a few more (IMAGE in
envs/scripts/device_kit.py) and nothing else. This builds the kit exactly as ``make device-kit`` does, for
this interpreter's Python (3.11: the CPU torch wheel the CPU environment pins is a cp311 one), installs it
with ``pip --no-index --no-deps --target`` beside a fresh virtual environment that holds only the image's
package names (transformers at the image's 5.17.0, CPU torch), and runs tests/device/verl_run.py there on
verl's CPU backend: the preflight trial's 4 steps with a tiny model, killed in step 3, resumed, merged,
lie imported from the kit's wheel (not the checkout). Minutes, and the package index for the downloads.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("device_kit", REPO / "envs" / "scripts" / "device_kit.py")
assert _spec and _spec.loader
kit = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kit)

IMAGE_TRANSFORMERS = "5.17.0"  # the borrowed machine's (docs/cluster.md, "What has run on a GPU")
IMAGE_ENV = REPO / ".venv-device-image"  # kept between runs (git-ignored), rebuilt when IMAGE changes


def image_environment() -> Path:
    """A virtual environment with the image's package names only (and what pip resolves for them)."""
    python = IMAGE_ENV / "bin" / "python"
    wanted = " ".join([*kit.IMAGE, f"transformers=={IMAGE_TRANSFORMERS}"])
    stamp = IMAGE_ENV / ".image"
    if stamp.exists() and stamp.read_text() == wanted and python.exists():
        return python
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(IMAGE_ENV)], check=True)
    # the CPU lock's versions, but transformers at the image's (and what it needs newer)
    moved = {"transformers", "tokenizers", "huggingface-hub", "safetensors", "hf-xet"}
    pins = [
        line
        for line in (REPO / "envs" / "cpu.lock").read_text().splitlines()
        if line and not line.startswith("#") and kit.normalize(line.split("==")[0]) not in moved
    ]
    constraints = IMAGE_ENV / "constraints.txt"
    constraints.write_text("\n".join(pins) + "\n")
    names = [n for n in kit.IMAGE if n != "transformers"] + [f"transformers=={IMAGE_TRANSFORMERS}"]
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *names,
                    "-c", str(constraints), "-c", str(REPO / "envs" / "constraints-cpu.txt")], check=True)  # fmt: skip
    stamp.write_text(wanted)
    return python


@pytest.mark.heavy
@pytest.mark.timeout(3000)  # the kit, the environment (once) and two verl launches on a loaded 2-core VM
def test_the_kit_runs_verls_trainer_beside_the_image_packages_only(tmp_path):
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    kit.build(tmp_path / "kit", version, REPO / ".device-kit-cache")
    assert kit.kit_problems(tmp_path / "kit") == []
    python = image_environment()
    site = tmp_path / "site"
    wheels = sorted(str(w) for w in (tmp_path / "kit").glob("*.whl"))
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-index", "--no-deps", "--no-compile",
                    "--target", str(site), *wheels], check=True)  # fmt: skip
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "VIRTUAL_ENV", "COVERAGE_PROCESS_START")
    }
    env.update(PYTHONPATH=str(site), PATH=f"{python.parent}:{env['PATH']}")
    # what the image lacks comes from the kit, lie from its wheel, and TRL from nowhere
    probe = (
        "import importlib.util as u, importlib.metadata as m, lie, verl, ray, transformers; "
        "print(lie.__file__); print(transformers.__version__); print(u.find_spec('trl')); "
        "print([e.value for e in m.entry_points(group='verl.plugins')])"
    )
    lines = subprocess.run(
        [str(python), "-c", probe], env=env, capture_output=True, text=True, check=True
    ).stdout
    file, transformers, trl, plugins = lines.splitlines()
    assert file.startswith(str(site)) and transformers == IMAGE_TRANSFORMERS and trl == "None"
    assert plugins == "['lie.engines.verl.trainer']"

    out = tmp_path / "rows.json"
    run = subprocess.run([str(python), str(REPO / "tests" / "device" / "verl_run.py"), "--device", "cpu",
                          "--workdir", str(tmp_path / "trial"), "--out", str(out)],
                         env=env, capture_output=True, text=True, timeout=1800)  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    rows = {r["name"]: r for r in json.loads(out.read_text())}
    assert rows["kill in step 3"]["status"] == "pass"
    assert rows["4-step verl run, resumed from step 2"]["status"] == "pass"
    assert rows["lie merge"]["status"] == "pass"
    assert all(r["status"] == "pass" for r in rows.values()), rows
