"""The package's import rule (docs/architecture.md), and that the docs cite only paths that exist.

Dependencies point one way: commands -> stages -> engines -> grading, formats, config -> core;
analysis, report and study read files (formats, config, core) and never reach an engine or a stage.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "src" / "lie"

# a layer -> the layers its modules may import (their own included)
ALLOWED = {
    "core": {"core"},
    "tasks": {"core", "tasks"},
    "grading": {"core", "grading"},
    "formats": {"core", "formats"},
    "config": {"core", "formats", "config"},
    "engines": {"core", "grading", "formats", "config", "engines"},
    "analysis": {"core", "formats", "config", "analysis"},
    "report": {"core", "formats", "config", "analysis", "report"},
    "study": {"core", "formats", "config", "tasks", "analysis", "report", "study"},
    "stages": {"core", "tasks", "grading", "formats", "config", "engines", "analysis", "stages"},
    "commands": {"core", "tasks", "grading", "formats", "config", "stages", "analysis", "report", "study"},
    "entry": {"entry", "core", "commands"},
}
# the few edges outside the layers, each with its reason
EXCEPTIONS = {
    ("stages", "lie.study.spec"),  # the study's probe (a stage) reads the study section's spec
    ("commands", "lie.commands.argtypes"),  # the argument types the subcommands share
}


def layer(module: str) -> str:
    """The layer of ``lie.<layer>...``; the package root (``lie``, its version, the CLI) is ``entry``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and (PACKAGE / parts[1]).is_dir() else "entry"


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> list[tuple[int, str]]:
    """Every ``lie`` module a file imports (at any depth of the file), with its line."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "lie"]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "lie":
                out += [(node.lineno, f"lie.{a.name}") for a in node.names]
            elif node.module.startswith("lie."):
                out.append((node.lineno, node.module))
    return out


def test_every_import_points_down_the_layers():
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        mine = layer(module_name(path))
        assert mine in ALLOWED, f"{path}: a module outside the known layers ({mine}): add it to the rule"
        for line, target in imports(path):
            theirs = layer(target)
            if target in ("lie", "lie.__version__"):  # the package's version, readable everywhere
                continue
            if theirs not in ALLOWED[mine] and (mine, target) not in EXCEPTIONS:
                if not any(mine == m and target.startswith(t) for m, t in EXCEPTIONS):
                    wrong.append(f"{path.relative_to(REPO)}:{line} ({mine}) imports {target} ({theirs})")
    assert not wrong, "imports against the layers:\n" + "\n".join(wrong)


def test_tests_import_stages_never_commands():
    """Tests reach the logic through stages (or the real CLI, lie.cli.main), never a command module."""
    wrong = [
        f"{path.name}:{line} imports {target}"
        for path in sorted((REPO / "tests").glob("*.py"))
        for line, target in imports(path)
        if target.startswith("lie.commands") and target != "lie.commands.argtypes"
    ]
    assert not wrong, "\n".join(wrong)


def test_commands_are_short_shims():
    """A command parses its arguments and calls a stage: no long logic in commands/."""
    long = [
        f"{path.name}: {len(path.read_text().splitlines())} lines"
        for path in (PACKAGE / "commands").glob("*.py")
        if len(path.read_text().splitlines()) > 120
    ]
    assert not long, "move the logic into a stage:\n" + "\n".join(long)


CITED = re.compile(
    r"(?<![\w./-])((?:src/lie|docs|workflow|profiles|envs|containers|tests|benchmarks)/[\w./-]*[\w/])"
)


def _cited_paths(text: str) -> set[str]:
    built = (".sif",)  # outputs a reader builds (the Apptainer image), not files of the repository
    return {
        m.rstrip("/.") for m in CITED.findall(text) if "*" not in m and "<" not in m and not m.endswith(built)
    }


@pytest.mark.parametrize(
    "source",
    ["README.md", *sorted(str(p.relative_to(REPO)) for p in (REPO / "docs").rglob("*.md"))],
)
def test_docs_cite_only_paths_that_exist(source):
    missing = sorted(
        p for p in _cited_paths((REPO / source).read_text(encoding="utf-8")) if not (REPO / p).exists()
    )
    assert not missing, f"{source} cites paths that do not exist: {missing}"


def test_the_code_cites_only_paths_that_exist():
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")) + sorted((REPO / "workflow").rglob("*.smk")):
        for cited in _cited_paths(path.read_text(encoding="utf-8")):
            if not (REPO / cited).exists():
                missing.append(f"{path.relative_to(REPO)} cites {cited}")
    assert not missing, "\n".join(missing)


def test_the_readme_is_short():
    lines = len((REPO / "README.md").read_text(encoding="utf-8").splitlines())
    assert lines <= 260, f"README.md has {lines} lines: the reference belongs in docs/"


SETTINGS_MODULE = PACKAGE / "config" / "settings.py"
# a run's settings read as a dict (a cast of a lookup, a lookup with a default), a merged dict
# rebuilt, or a loaded config's training section edited in place
SETTINGS_LOOKUP = re.compile(
    r"\b(?:s|settings)\.get\(\s*[\"']"
    r"|\b(?:int|float|bool|str)\(\s*(?:s|settings)\["
    r"|\bsettings\[\s*[\"']"
    r"|(?<!\w)run_settings\("
    r"|\[[\"']training[\"']\]\[[^\]]+\]\s*=[^=]"
)


def settings_lookups(paths: list[Path], root: Path = REPO) -> list[str]:
    found = []
    for path in paths:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if SETTINGS_LOOKUP.search(line):
                found.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
    return found


def test_run_settings_are_read_typed_from_one_module():
    """A run's settings come from ``lie.config.settings.RunSettings`` (typed, frozen, built once):
    no ``s.get("key", default)`` or ``int(s["key"])`` outside that module, in src/ or the rules."""
    paths = [p for p in sorted(PACKAGE.rglob("*.py")) if p != SETTINGS_MODULE]
    paths += sorted((REPO / "workflow").rglob("*.smk")) + [REPO / "Snakefile"]
    found = settings_lookups(paths)
    assert not found, "read these through RunSettings:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "line",
    [
        'steps = int(s.get("max_steps") or 0)',
        'batch = int(s["train_batch_size"])',
        'seed = settings.get("seed", 1)',
        "limit = cfgmod.run_settings(config, run)",
        'config["training"]["nnodes"] = args.nnodes',
    ],
)
def test_the_settings_rule_sees_each_kind_of_lookup(tmp_path, line):
    path = tmp_path / "injected.py"
    path.write_text(f"def f(config, s, settings, args, cfgmod, run):\n    {line}\n    return s.max_steps\n")
    assert settings_lookups([path], root=tmp_path) == [f"injected.py:2: {line}"]


@pytest.mark.parametrize("layer_dir", ["engines", "stages", "formats"])
def test_the_layer_table_names_every_module_once(layer_dir):
    """docs/architecture.md names each module of these layers in its row, and no two of one layer
    share a file name (``engines/sampling.py`` the torch sampler, ``stages/sample_shards.py`` the loop)."""
    row = next(
        line
        for line in (REPO / "docs" / "architecture.md").read_text(encoding="utf-8").splitlines()
        if line.startswith(f"| `{layer_dir}/` |")
    )
    modules = [p for p in (PACKAGE / layer_dir).glob("*.py") if p.name != "__init__.py"]
    unnamed = sorted(p.name for p in modules if f"`{p.name}`" not in row)
    assert not unnamed, f"docs/architecture.md's {layer_dir}/ row does not name {unnamed}"
    names = [p.stem for p in PACKAGE.rglob("*.py") if layer(module_name(p)) in ("engines", "stages")]
    assert len([n for n in names if n == "sampling"]) <= 1, "two modules named sampling: rename one"
