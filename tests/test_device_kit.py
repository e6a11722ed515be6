"""`make device-kit` (envs/scripts/device_kit.py): the wheels a borrowed GPU machine needs for verl's trainer.

The cheap checks here build real wheels (lie's own, and small Ray-shaped ones) and install them with pip:
the pins come from the locks without TRL, a slimmed Ray keeps a RECORD pip accepts and binaries that still
run, a broken kit is named line by line, and the size line counts the kit and the checkout. The whole kit,
installed into an environment holding only the image's packages and running a verl step, is the heavy
test tests/test_device_kit_run.py.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("device_kit", REPO / "envs" / "scripts" / "device_kit.py")
assert _spec and _spec.loader
kit = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kit)


def make_wheel(
    folder: Path, name: str, version: str, files: dict[str, bytes], requires=(), entry_points=""
) -> Path:
    """A wheel as pip builds them: the files, METADATA, WHEEL, entry points and a RECORD with their hashes."""
    info = f"{name}-{version}.dist-info"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires
    )
    files = {**files, f"{info}/METADATA": meta.encode(),
             f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: py3-none-any\n"}  # fmt: skip
    if entry_points:
        files[f"{info}/entry_points.txt"] = entry_points.encode()
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files.items():
            entry = zipfile.ZipInfo(path)
            entry.external_attr = (0o100755 if path.endswith("/bin/true") else 0o100644) << 16
            z.writestr(entry, data)
        z.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return wheel


def unstripped_program(folder: Path) -> bytes:
    """An ELF executable with its symbol table and debug sections, as Ray ships its binaries (exits 0)."""
    source = folder / "prog.c"
    source.write_text("int answer(void) { return 0; }\nint main(void) { return answer(); }\n")
    subprocess.run(["cc", "-g", "-o", str(folder / "prog"), str(source)], check=True)
    return (folder / "prog").read_bytes()


def ray_shaped(folder: Path) -> Path:
    """A wheel named ray with what slimming drops (Java jars, the dashboard's web client, RLlib) and keeps
    (Python, a real ELF executable with its symbol table)."""
    folder.mkdir(parents=True, exist_ok=True)
    return make_wheel(folder, "ray", "2.60.0", {
        "ray/__init__.py": b"VERSION = '2.60.0'\n",
        "ray/jars/ray_dist.jar": b"PK" + b"\0" * 4000,
        "ray/dashboard/client/build/index.html": b"<html></html>",
        "ray/rllib/__init__.py": b"",
        "ray/core/bin/true": unstripped_program(folder),
    })  # fmt: skip


def test_the_kit_pins_every_package_from_the_locks_and_leaves_trl_out():
    pins = dict(p.split("==") for p in kit.kit_pins(kit.pinned_versions()))
    assert pins["verl"] == "0.9.1" and pins["ray"] == "2.60.0"
    assert not {"trl", "wandb", "vllm", "torch", "transformers"} & {kit.normalize(n) for n in pins}
    # versions come from the GPU lock first: fastapi differs between the two locks
    gpu = kit.pinned_versions((REPO / "envs" / "gpu.lock",))
    assert pins["fastapi"] == gpu["fastapi"] != kit.pinned_versions((REPO / "envs" / "cpu.lock",))["fastapi"]


def test_a_lock_line_that_is_not_a_pin_is_named(tmp_path):
    lock = tmp_path / "bad.lock"
    lock.write_text("# a comment\nverl==0.9.1\nray>=2\n")
    with pytest.raises(kit.KitError, match=r"bad.lock:3: not a name==version pin: 'ray>=2'"):
        kit.pinned_versions((lock,))


def test_a_slimmed_ray_installs_with_pip_and_its_stripped_binary_runs(tmp_path):
    source = ray_shaped(tmp_path / "src")
    slim = kit.slim_ray(source, tmp_path)
    with zipfile.ZipFile(slim) as z, zipfile.ZipFile(source) as original:
        names = z.namelist()
        binary, unstripped = z.read("ray/core/bin/true"), original.read("ray/core/bin/true")
    assert not [n for n in names if n.startswith(kit.RAY_DROPPED)]
    assert len(binary) < len(unstripped)  # its symbol table and debug sections went
    assert kit.record_problems(slim) == []
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps", "--target",
                    str(site), str(slim)], check=True)  # fmt: skip
    assert (site / "ray" / "__init__.py").is_file() and not (site / "ray" / "jars").exists()
    assert subprocess.run([str(site / "ray/core/bin/true")]).returncode == 0


def test_a_record_that_does_not_match_its_wheel_is_named(tmp_path):
    wheel = ray_shaped(tmp_path)
    with zipfile.ZipFile(wheel, "a") as z:
        z.writestr("ray/extra.py", b"x = 1\n")  # a file RECORD does not list
    assert kit.record_problems(wheel) == [f"{wheel.name}: ray/extra.py is not in RECORD"]


@pytest.fixture(scope="module")
def lie_wheel(tmp_path_factory) -> Path:
    return kit.build_lie(tmp_path_factory.mktemp("lie"))


def write_kit(folder: Path, wheels: list[Path]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for wheel in wheels:
        if wheel.parent != folder:
            shutil.copy2(wheel, folder / wheel.name)
    kit.write_manifest(folder, "3.12")
    return folder


def test_lies_wheel_registers_the_trainer_plugin_verl_loads(lie_wheel):
    points = kit.entry_points(lie_wheel)
    assert re.search(r"\[verl\.plugins\]\s*\nlie = lie\.engines\.verl\.trainer", points), points
    with zipfile.ZipFile(lie_wheel) as z:
        assert "lie/engines/verl/lie_trainer.yaml" in z.namelist()  # package data travels too


def test_a_broken_kit_is_named_line_by_line(tmp_path, lie_wheel):
    slim = kit.slim_ray(ray_shaped(tmp_path / "ray"), tmp_path)
    good = write_kit(tmp_path / "good", [lie_wheel, slim])
    assert kit.kit_problems(good) == []

    with_trl = write_kit(
        tmp_path / "trl", [lie_wheel, slim, make_wheel(tmp_path, "trl", "1.16.0", {"trl/__init__.py": b""})]
    )
    assert kit.kit_problems(with_trl) == [
        "trl-1.16.0-py3-none-any.whl: TRL in the kit (verl 0.9.1 fails to build an actor with it)"
    ]

    fat = write_kit(tmp_path / "fat", [lie_wheel, ray_shaped(tmp_path / "fat")])
    assert [p.split(":")[1].strip() for p in kit.kit_problems(fat)] == [
        "it holds ray/jars/ray_dist.jar and 2 more"
    ]

    plain_lie = make_wheel(
        tmp_path / "plain",
        "lie",
        "0.1.0",
        {"lie/__init__.py": b""},
        entry_points="[console_scripts]\nlie = lie.cli:main\n",
    )
    no_plugin = write_kit(tmp_path / "plain", [plain_lie, slim])
    assert kit.kit_problems(no_plugin) == [
        "lie-0.1.0-py3-none-any.whl lacks the verl.plugins entry point 'lie = lie.engines.verl.trainer'"
    ]

    (good / "stray-1.0-py3-none-any.whl").write_bytes((with_trl / "trl-1.16.0-py3-none-any.whl").read_bytes())
    assert kit.kit_problems(good)[0] == "kit.json lists ['stray-1.0-py3-none-any.whl'] unlike the folder"
    (good / "kit.json").unlink()
    assert kit.kit_problems(good) == [f"{good}: no kit.json (not a kit, or a build that did not finish)"]


def test_a_requirement_outside_the_kit_and_the_image_is_named(tmp_path):
    wheel = make_wheel(tmp_path, "verl", "0.9.1", {"verl/__init__.py": b""},
                       requires=["numpy>=2", "wandb", "left-pad==1.0", 'uvloop; sys_platform == "win32"'])  # fmt: skip
    environment = kit.target_environment("3.12")
    image = kit.image_closure(environment)
    assert {
        "torch",
        "numpy",
        "filelock",
        "huggingface-hub",
        "yarl",
    } <= image  # the image's names and their needs
    assert "ray" not in image and "verl" not in image
    assert kit.unmet_requirements([wheel], image, environment) == [
        "verl-0.9.1-py3-none-any.whl: left-pad==1.0"
    ]


def test_the_carry_line_counts_the_kit_and_the_checkout(tmp_path):
    folder = tmp_path / "kit"
    folder.mkdir()
    (folder / "a-1-py3-none-any.whl").write_bytes(b"\0" * (3 * kit.MiB))
    (folder / "kit.json").write_text("{}")
    tree_bytes, tree_files = kit.tracked_tree()
    assert tree_files > 100 and tree_bytes > 1_000_000  # the checkout's files, not nothing
    line = kit.carry_line(folder)
    match = re.match(r"carry: ([\d.]+) MiB in (\d+) files \(", line)
    assert match, line
    assert float(match.group(1)) == pytest.approx((3 * kit.MiB + 2 + tree_bytes) / kit.MiB, abs=0.06)
    assert int(match.group(2)) == 2 + tree_files
