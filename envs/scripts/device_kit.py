"""Build the wheels that verl's trainer needs on a borrowed GPU machine: ``make device-kit``.

Usage: python envs/scripts/device_kit.py [--out .device-kit] [--python-version 3.12] [--cache DIR]

A borrowed machine (tests/device/README.md) has CPython 3.12 with torch, transformers and a few more
(IMAGE) but no verl, Ray, Hydra, math-verify or TRL, and no network; what it lacks travels with the
checkout, at most 64 MiB per call. This builds that folder from the pinned versions (envs/gpu.lock, then
envs/cpu.lock for what the GPU lock lacks), for CPython ``--python-version`` on manylinux x86-64:

- the packages of KIT, each downloaded without its dependencies; the closure is checked instead: every
  requirement of every wheel is in the kit, in the image's packages and what they require (read from the
  running environment's metadata), or in LEFT_OUT with the reason;
- Ray slimmed: its Java jars and the dashboard's web client dropped (a driver that starts Ray without
  the dashboard uses neither), recompressed, its RECORD rewritten so pip installs it;
- lie itself as a wheel: verl loads lie's trainer through its ``verl.plugins`` entry point;
- no TRL: verl 0.9.1 imports a class from TRL whenever TRL is installed, which TRL 1.16 lacks, and the
  patch that works around it on a CPU (lie.engines.verl.cpu.patches) is not loaded on a GPU.

The folder is written beside its final name and renamed when complete (a killed build leaves no kit
that looks whole), with ``kit.json`` listing each wheel, its size and sha256. The last line printed is
``carry: N MiB in F files``: the kit and the checkout's tracked (and untracked, not ignored) files,
what one call to the machine carries.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LOCKS = (REPO / "envs" / "gpu.lock", REPO / "envs" / "cpu.lock")  # the first that pins a name wins
CARRY_LIMIT_MIB = 64  # what one call carries (the tracked tree included)
KIT_LIMIT_MIB = 60  # this kit with the tracked tree, leaving a margin

# What the borrowed machine's image holds (Python 3.12, torch 2.11+cu130, transformers 5.17, ...): these
# and everything they require are never carried.
IMAGE = ("torch", "transformers", "numpy", "pyarrow", "pandas", "pytest", "peft", "accelerate", "aiohttp",
         "grpcio", "protobuf", "msgpack", "psutil")  # fmt: skip

# What verl's main_ppo imports beyond the image on the path lie runs (FSDP actor, lie's trainer, reward
# manager, agent loop and transformers rollout, Ray workers), with what lie's own code needs.
KIT = (
    "verl",  # 0.9.1, without its dependencies: those below are the ones its trainer imports
    "ray",  # plain ray (verl asks ray[default]: the dashboard's extras), slimmed (slim_ray)
    "TransferQueue", "pyzmq", "msgspec",  # verl's v1 trainer moves batches through TransferQueue
    "hydra-core", "omegaconf", "antlr4-python3-runtime",  # main_ppo's config
    "codetiming", "tensordict", "pyvers", "cloudpickle", "orjson", "torchdata",
    "datasets", "dill", "multiprocess", "xxhash",  # verl's RLHFDataset reads the parquet files
    "pillow",  # ... and imports PIL whatever the data (verl/utils/dataset/rl_dataset.py)
    "fastapi", "starlette", "pydantic", "pydantic_core", "annotated-types", "typing-inspection",
    "annotated-doc", "uvicorn", "click",  # verl's rollout server and agent loop
    "cachetools", "pylatexenc", "nvtx",
    "math-verify", "latex2sympy2_extended", "pebble",  # lie's grading
    "jsonschema", "jsonschema-specifications", "referencing", "rpds-py",  # lie's config checks
    "requests", "urllib3", "charset-normalizer",  # Ray's and torchdata's (huggingface_hub 1.x has httpx)
    "importlib_metadata", "zipp", "lazy-importer",  # tensordict's
)  # fmt: skip
# Published as a source archive only: built into a wheel here (pure Python, py3-none-any).
SOURCE_ONLY = ("antlr4-python3-runtime",)

# Requirements of the kit's wheels that are neither carried nor in the image, each with why not.
LEFT_OUT = {
    "wandb": "verl imports it only for trainer.logger wandb (lie's runs log to console and file)",
    "tensorboard": "verl imports it only for trainer.logger tensorboard",
    "pybind11": "a build-time need of verl's C++ extensions, which the FSDP path does not build",
    "trl": "verl 0.9.1 imports a class from TRL that TRL 1.16 lacks whenever TRL is installed",
    "aiohttp-cors": "ray[default]'s dashboard", "colorful": "ray[default]'s dashboard",
    "opencensus": "ray[default]'s metrics agent", "prometheus-client": "ray[default]'s metrics agent",
    "py-spy": "ray[default]'s dashboard profiler", "smart-open": "ray[default]'s dashboard",
    "virtualenv": "ray[default]'s runtime environments", "opentelemetry-sdk": "ray[default]'s metrics",
    "opentelemetry-exporter-prometheus": "ray[default]'s metrics", "opentelemetry-proto": "ray[default]'s metrics",
    "av": "verl's video inputs (verl-core extra)", "torchcodec": "verl's video inputs (verl-core extra)",
}  # fmt: skip

# Ray's parts that verl's trainer never loads: Java workers' jars, the dashboard's web client (Ray starts
# without the dashboard), and Ray's libraries on top of its core (RLlib, Tune, Train, Serve, Data, LLM),
# which neither verl's trainer nor lie imports. Ray's binaries are also stripped of their symbol tables.
RAY_DROPPED = ("ray/jars/", "ray/dashboard/client/build/", "ray/rllib/", "ray/tune/", "ray/train/", "ray/serve/",
               "ray/data/", "ray/llm/")  # fmt: skip
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux_2_5_x86_64",
             "manylinux1_x86_64", "linux_x86_64")  # fmt: skip
MiB = 1024 * 1024


class KitError(Exception):
    """A kit that cannot be built or is not whole: one line for the user."""


def normalize(name: str) -> str:
    """A distribution's name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def pinned_versions(locks: tuple[Path, ...] = LOCKS) -> dict[str, str]:
    """``name -> version`` from the lock files, the first lock that pins a name winning."""
    pins: dict[str, str] = {}
    for lock in locks:
        for number, raw in enumerate(lock.read_text(encoding="utf-8").splitlines(), 1):
            line = raw.split("#", 1)[0].strip()
            if not line or " @ " in line:
                continue
            name, sep, version = line.partition("==")
            if not sep:
                raise KitError(f"{lock}:{number}: not a name==version pin: {raw!r}")
            pins.setdefault(normalize(name), version.strip())
    return pins


def kit_pins(pins: dict[str, str]) -> list[str]:
    """``name==version`` of every package of KIT; a package no lock pins stops the build."""
    missing = [name for name in KIT if normalize(name) not in pins]
    if missing:
        raise KitError(f"no version of {', '.join(missing)} in {' or '.join(str(p) for p in LOCKS)}")
    return [f"{name}=={pins[normalize(name)]}" for name in KIT]


def image_closure(environment: dict[str, str]) -> set[str]:
    """IMAGE and every distribution they require, transitively, by name (versions aside), read from this
    environment's installed metadata, markers evaluated for the kit's Python and platform."""
    from importlib import metadata

    from packaging.requirements import Requirement

    seen: set[str] = set()
    todo = [normalize(n) for n in IMAGE]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue  # a need of an image package that this environment lacks: counted by name only
        for text in requires:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({**environment, "extra": ""}):
                todo.append(normalize(req.name))
    return seen


def target_environment(python_version: str) -> dict[str, str]:
    """The marker environment of CPython ``python_version`` on x86-64 Linux."""
    return {"python_version": python_version, "python_full_version": f"{python_version}.0",
            "sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64",
            "os_name": "posix", "implementation_name": "cpython", "platform_python_implementation": "CPython"}  # fmt: skip


def wheel_metadata(path: Path) -> tuple[str, list[str]]:
    """(name, Requires-Dist lines) of a wheel."""
    with zipfile.ZipFile(path) as wheel:
        meta = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA") and n.count("/") == 1)
        text = wheel.read(meta).decode("utf-8")
    headers = text.split("\n\n", 1)[0].splitlines()
    name = next(h.split(":", 1)[1].strip() for h in headers if h.startswith("Name:"))
    return name, [h.split(":", 1)[1].strip() for h in headers if h.startswith("Requires-Dist:")]


def unmet_requirements(wheels: list[Path], image: set[str], environment: dict[str, str]) -> list[str]:
    """Each requirement of a kit wheel (no extras asked) that neither the kit, the image nor LEFT_OUT
    covers, as ``wheel: requirement``."""
    from packaging.requirements import Requirement

    names = {normalize(wheel_metadata(w)[0]) for w in wheels}
    left_out = {normalize(n) for n in LEFT_OUT}
    unmet = []
    for wheel in wheels:
        for text in wheel_metadata(wheel)[1]:
            req = Requirement(text)
            if req.marker is not None and not req.marker.evaluate({**environment, "extra": ""}):
                continue
            name = normalize(req.name)
            if name not in names and name not in image and name not in left_out:
                unmet.append(f"{wheel.name}: {text}")
    return unmet


# ---- fetching and building -------------------------------------------------------------------------


def _pip(args: list[str], what: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "pip", *args, "--disable-pip-version-check"],
                          capture_output=True, text=True)  # fmt: skip
    if proc.returncode != 0:
        lines = [x for x in (proc.stderr + proc.stdout).splitlines() if x.strip()] or [
            f"exit {proc.returncode}"
        ]
        errors = [x for x in lines if "ERROR" in x] or lines
        raise KitError(f"{what} failed: {errors[-1].strip()}")


def fetch(pins: list[str], python_version: str, cache: Path) -> list[Path]:
    """The wheels of ``pins`` for CPython ``python_version`` (downloaded into ``cache`` once; a source-only
    package built into a wheel with this interpreter's pip)."""
    cache.mkdir(parents=True, exist_ok=True)
    abi = "cp" + python_version.replace(".", "")
    binary = [p for p in pins if normalize(p.split("==")[0]) not in {normalize(n) for n in SOURCE_ONLY}]
    source = [p for p in pins if p not in binary]
    platforms = [arg for platform in PLATFORMS for arg in ("--platform", platform)]
    _pip(["download", "--quiet", "--no-deps", "--only-binary=:all:", "--python-version", python_version,
          "--implementation", "cp", "--abi", abi, "--abi", "abi3", "--abi", "none", *platforms,
          "-d", str(cache), *binary], f"pip download for CPython {python_version}")  # fmt: skip
    for pin in source:
        _pip(
            ["wheel", "--quiet", "--no-deps", "--no-binary", ":all:", "-w", str(cache), pin],
            f"pip wheel {pin}",
        )
    found = []
    for pin in pins:
        name, version = pin.split("==")
        found.append(_find_wheel(cache, name, version, abi))
    return found


def _find_wheel(folder: Path, name: str, version: str, abi: str) -> Path:
    """The wheel of ``name`` ``version`` in ``folder`` that fits the ABI (a cp311 wheel beside a cp312 one
    in the cache is not it)."""
    prefix = normalize(name).replace("-", "_")
    candidates = []
    for path in folder.glob("*.whl"):
        parts = path.name[: -len(".whl")].split("-")
        if normalize(parts[0]).replace("-", "_") == prefix and parts[1] == version:
            python_tag, abi_tag = parts[-3], parts[-2]
            if abi_tag in (abi, "none", "abi3") and (
                abi_tag != "none" or python_tag.startswith("py") or python_tag == abi
            ):
                candidates.append(path)
    if not candidates:
        raise KitError(f"no wheel of {name}=={version} for {abi} in {folder}")
    return sorted(candidates)[0]


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def stripped(data: bytes) -> bytes:
    """An ELF binary without its symbol tables and debug sections (``strip --strip-unneeded``: what the
    dynamic linker needs stays); anything else as it is."""
    if not data.startswith(b"\x7fELF"):
        return data
    tool = shutil.which("strip")
    if tool is None:
        raise KitError("strip (GNU binutils) is not installed: it shrinks Ray's binaries to fit one call")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "binary"
        path.write_bytes(data)
        proc = subprocess.run([tool, "--strip-unneeded", str(path)], capture_output=True, text=True)
        if proc.returncode != 0:
            raise KitError(f"strip failed on a Ray binary: {proc.stderr.strip().splitlines()[-1:]}")
        return path.read_bytes()


def slim_ray(source: Path, out_dir: Path) -> Path:
    """Ray's wheel without RAY_DROPPED, its binaries stripped, every file deflated at the highest level,
    RECORD listing exactly the files kept (with their new hashes): a wheel pip installs as Ray's own."""
    target = out_dir / source.name
    if target.resolve() == source.resolve():
        raise KitError(f"slimming {source} would overwrite it: write it to another folder")
    with (
        zipfile.ZipFile(source) as wheel,
        zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as slim,
    ):
        names = [n for n in wheel.namelist() if not n.startswith(RAY_DROPPED)]
        record = next(n for n in names if n.endswith(".dist-info/RECORD") and n.count("/") == 1)
        lines = []
        for name in names:
            if name == record or name.endswith("/"):
                continue
            data = stripped(wheel.read(name))
            info = wheel.getinfo(name)
            entry = zipfile.ZipInfo(name, date_time=info.date_time)
            entry.external_attr, entry.compress_type = info.external_attr, zipfile.ZIP_DEFLATED
            slim.writestr(entry, data, compresslevel=9)
            lines.append(_record_line(name, data))
        lines.append(f"{record},,")
        slim.writestr(record, "\n".join(lines) + "\n", compresslevel=9)
    return target


def build_lie(out_dir: Path) -> Path:
    """lie as a wheel (its entry points: the ``lie`` command and verl's plugin), from this checkout."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "lie"  # a copy: setuptools writes build/ and *.egg-info into the tree it builds
        shutil.copytree(
            REPO / "src", work / "src", ignore=shutil.ignore_patterns("*.egg-info", "__pycache__")
        )
        for name in ("pyproject.toml", "README.md"):
            shutil.copy2(REPO / name, work / name)
        _pip(
            ["wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", str(out_dir), str(work)],
            "building lie's wheel",
        )
    wheels = sorted(out_dir.glob("lie-*.whl"))
    if len(wheels) != 1:
        raise KitError(f"building lie's wheel left {len(wheels)} lie wheels in {out_dir}")
    return wheels[0]


def entry_points(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as z:
        name = next((n for n in z.namelist() if n.endswith(".dist-info/entry_points.txt")), None)
        return z.read(name).decode() if name else ""


TRAINER_PLUGIN = "lie = lie.engines.verl.trainer"  # pyproject.toml's verl.plugins entry point


def record_problems(wheel: Path) -> list[str]:
    """What is wrong with a wheel's RECORD: a file it lacks, lists twice or hashes wrongly."""
    with zipfile.ZipFile(wheel) as z:
        names = [n for n in z.namelist() if not n.endswith("/")]
        record = next((n for n in names if n.endswith(".dist-info/RECORD") and n.count("/") == 1), None)
        if record is None:
            return [f"{wheel.name}: no RECORD"]
        rows = [line.split(",") for line in z.read(record).decode().splitlines() if line.strip()]
        listed = [row[0] for row in rows]
        problems = [
            f"{wheel.name}: RECORD lists {n} twice" for n in {n for n in listed if listed.count(n) > 1}
        ]
        problems += [f"{wheel.name}: {n} is not in RECORD" for n in sorted(set(names) - set(listed))]
        problems += [
            f"{wheel.name}: RECORD lists {n}, which the wheel lacks" for n in sorted(set(listed) - set(names))
        ]
        for name, digest, _size in (row[:3] for row in rows if len(row) >= 3 and row[1]):
            if name in names and _record_line(name, z.read(name)).split(",")[1] != digest:
                problems.append(f"{wheel.name}: {name}'s hash differs from RECORD's")
        return problems[:5] + (
            [f"{wheel.name}: {len(problems) - 5} more RECORD problems"] if len(problems) > 5 else []
        )


def kit_problems(folder: Path) -> list[str]:
    """Why ``folder`` is not a kit a borrowed machine can use; empty when it is: its manifest lists exactly
    its wheels (by sha256), no TRL, lie's wheel registers the trainer plugin, Ray is slimmed with a
    RECORD pip accepts."""
    manifest_file = folder / "kit.json"
    if not manifest_file.is_file():
        return [f"{folder}: no kit.json (not a kit, or a build that did not finish)"]
    manifest = json.loads(manifest_file.read_text(encoding="utf-8"))
    wheels = sorted(folder.glob("*.whl"))
    problems = []
    listed = {w["file"]: w for w in manifest["wheels"]}
    if set(listed) != {w.name for w in wheels}:
        problems.append(f"kit.json lists {sorted(set(listed) ^ {w.name for w in wheels})} unlike the folder")
    for wheel in wheels:
        entry = listed.get(wheel.name)
        if entry and entry["sha256"] != hashlib.sha256(wheel.read_bytes()).hexdigest():
            problems.append(f"{wheel.name} differs from kit.json's sha256")
    names = {normalize(wheel_metadata(w)[0]): w for w in wheels}
    if "trl" in names:
        problems.append(f"{names['trl'].name}: TRL in the kit (verl 0.9.1 fails to build an actor with it)")
    if "lie" not in names:
        problems.append("no lie wheel")
    elif TRAINER_PLUGIN not in entry_points(names["lie"]).replace("\n[", "\n\n["):
        problems.append(f"{names['lie'].name} lacks the verl.plugins entry point {TRAINER_PLUGIN!r}")
    if "ray" not in names:
        problems.append("no ray wheel")
    else:
        with zipfile.ZipFile(names["ray"]) as z:
            kept = [n for n in z.namelist() if n.startswith(RAY_DROPPED)]
        if kept:
            problems.append(
                f"{names['ray'].name} is not slimmed: it holds {kept[0]} and {len(kept) - 1} more"
            )
        problems += record_problems(names["ray"])
    return problems


def tracked_tree() -> tuple[int, int]:
    """(bytes, files) of what a call carries from the checkout: tracked files and untracked ones git does
    not ignore."""
    proc = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                          capture_output=True, check=True)  # fmt: skip
    paths = {p for p in proc.stdout.decode().split("\0") if p}
    files = [REPO / p for p in paths if (REPO / p).is_file() and not (REPO / p).is_symlink()]
    return sum(f.stat().st_size for f in files), len(files)


def write_manifest(folder: Path, python_version: str) -> dict:
    """``kit.json``: each wheel of ``folder`` with its size and sha256, and what the kit leaves out."""
    manifest = {
        "python": python_version,
        "image": list(IMAGE),
        "left_out": LEFT_OUT,
        "ray_dropped": list(RAY_DROPPED),
        "wheels": [
            {"file": w.name, "bytes": w.stat().st_size, "sha256": hashlib.sha256(w.read_bytes()).hexdigest()}
            for w in sorted(folder.glob("*.whl"))
        ],  # fmt: skip
    }
    (folder / "kit.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest


def build(out: Path, python_version: str, cache: Path) -> dict:
    """The kit at ``out`` (replaced only once the new one is whole); its manifest."""
    environment = target_environment(python_version)
    pins = kit_pins(pinned_versions())
    if any(normalize(p.split("==")[0]) == "trl" for p in pins):
        raise KitError("TRL is in the kit: verl 0.9.1 fails to build an actor whenever TRL is installed")
    fetched = fetch(pins, python_version, cache)
    partial = out.with_name(out.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    wheels = []
    for wheel in fetched:
        if normalize(wheel.name.split("-")[0]) == "ray":
            wheels.append(slim_ray(wheel, partial))
        else:
            wheels.append(Path(shutil.copy2(wheel, partial / wheel.name)))
    lie_wheel = build_lie(partial)
    if "verl.plugins" not in entry_points(lie_wheel):
        raise KitError(f"{lie_wheel.name} has no verl.plugins entry point: verl would not find lie's trainer")
    wheels.append(lie_wheel)
    unmet = unmet_requirements(wheels, image_closure(environment), environment)
    if unmet:
        raise KitError(f"the kit is not closed over the image: {'; '.join(unmet)}")
    manifest = write_manifest(partial, python_version)
    problems = kit_problems(partial)
    if problems:
        raise KitError(f"the kit built in {partial} is not whole: {'; '.join(problems)}")
    if out.exists():
        if not (out / "kit.json").is_file():
            raise KitError(f"{out} exists and is not a kit (no kit.json): move it away first")
        shutil.rmtree(out)
    partial.rename(out)
    return manifest


def carry_line(out: Path) -> str:
    """``carry: N MiB in F files``: the kit and the checkout, as one call carries them."""
    kit_files = [f for f in out.rglob("*") if f.is_file()]
    kit_bytes = sum(f.stat().st_size for f in kit_files)
    tree_bytes, tree_files = tracked_tree()
    total = kit_bytes + tree_bytes
    return (f"carry: {total / MiB:.1f} MiB in {len(kit_files) + tree_files} files (kit {kit_bytes / MiB:.1f} MiB "
            f"in {len(kit_files)} files, checkout {tree_bytes / MiB:.1f} MiB in {tree_files}; a call carries at "
            f"most {CARRY_LIMIT_MIB} MiB)")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out", type=Path, default=REPO / ".device-kit", help="the kit's folder (git-ignored)"
    )
    parser.add_argument("--python-version", default="3.12", help="the borrowed machine's CPython (3.12)")
    parser.add_argument("--cache", type=Path, default=REPO / ".device-kit-cache",
                        help="downloaded wheels, kept for the next build (git-ignored)")  # fmt: skip
    args = parser.parse_args(argv)
    if not re.fullmatch(r"3\.\d+", args.python_version):
        print(f"device-kit: --python-version {args.python_version!r} is not 3.N", file=sys.stderr)
        return 2
    try:
        build(args.out.resolve(), args.python_version, args.cache.resolve())
    except KitError as exc:
        print(f"device-kit: {exc}", file=sys.stderr)
        return 1
    line = carry_line(args.out)
    print(line)
    size = float(line.split()[1])
    if size > KIT_LIMIT_MIB:
        print(f"device-kit: {size:.1f} MiB is over {KIT_LIMIT_MIB} MiB with the checkout", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PIP_DISABLE_PIP_VERSION_CHECK", "1")
    sys.exit(main())
