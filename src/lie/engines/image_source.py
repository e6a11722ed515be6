"""Does the image run this checkout's code? The entry check of every process a train job starts in it.

The image installs a copy of ``lie`` when it is built (containers/lie-gpu.def); a reward edited
afterwards would train with the old copy. The launchers therefore put the checkout's ``src/`` first
on the image's ``PYTHONPATH`` (``--env PYTHONPATH=$PWD/src``), and ``workflow/scripts/in_image.sh``
runs ``python -m lie.engines.image_source TREE_SRC`` before the command: the ``lie`` that Python
imports must be the checkout's, or a copy with the same contents (an image built from this tree);
otherwise it stops with one line that names the fix.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

from lie.core.errors import LieError

REBUILD = "apptainer build --force containers/lie-gpu.sif containers/lie-gpu.def"
SUFFIXES = (".py", ".yaml", ".json", ".txt")  # what a package copy holds besides caches


def package_digest(package: Path) -> str:
    """SHA-256 over the package's source files (relative paths and contents, in a fixed order)."""
    digest = hashlib.sha256()
    files = sorted(
        p for p in package.rglob("*") if p.is_file() and p.suffix in SUFFIXES and "__pycache__" not in p.parts
    )
    for path in files:
        digest.update(path.relative_to(package).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def check_source(tree_src: Path, imported: Path) -> str:
    """'' when ``imported`` (the ``lie`` package Python loads) is the tree's or has its contents;
    otherwise a LieError naming both copies and the fix."""
    tree = (tree_src / "lie").resolve()
    if not tree.is_dir():
        raise LieError(f"{tree_src}: no lie package here; run the job from the repository root")
    if imported.resolve() == tree:
        return "the tree's own src/"
    if package_digest(imported) == package_digest(tree):
        return f"the image's copy ({imported}), identical to the tree's src/"
    raise LieError(
        f"the image runs its own copy of lie ({imported}), which differs from this checkout's {tree}: "
        f"put the checkout first (apptainer exec --env PYTHONPATH=$PWD/src ..., as workflow/scripts "
        f"does) or rebuild the image: {REBUILD}"
    )


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    tree_src = Path(args[0] if args else "src")
    imported = Path(__file__).resolve().parents[1]  # the lie package this module was loaded from
    try:
        which = check_source(tree_src, imported)
    except LieError as exc:
        print(f"lie: {exc}", file=sys.stderr)
        return 1
    print(f"lie: running {which}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
