"""The package's import rule (docs/architecture.md), and that the docs cite only paths that exist.

Dependencies point one way: commands -> stages -> engines -> grading, formats, config -> core;
stages also call analysis, report and study, which read files (formats, config, core) and never reach
an engine or a stage. A command imports stages only (and its argparse helpers, and LieError). Every
import is seen: relative ones, and modules imported by name (importlib.import_module, __import__).
"""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import pytest
import yaml

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
    "stages": {
        "core",
        "tasks",
        "grading",
        "formats",
        "config",
        "engines",
        "analysis",
        "report",
        "study",
        "stages",
    },
    "commands": {"stages"},
    "entry": {"entry", "core", "commands"},
}
# the few edges outside the layers, each with its reason: (the importing module or layer, the target)
EXCEPTIONS = {
    ("commands", "lie.commands.argtypes"),  # the argparse helpers the subcommands share
    ("commands", "lie.core.errors"),  # a command refuses a bad flag with LieError, one line
    # the argparse helpers: --config read into a validated config, KEY=VALUE read as YAML, the --out* check
    ("lie.commands.argtypes", "lie.config"),
    ("lie.commands.argtypes", "lie.core.errors"),
    ("lie.commands.argtypes", "lie.formats.outputs"),
}


def allowed(module: str, target: str) -> bool:
    """May ``module`` import ``target``? Its layer's rule, or an exception named for its layer or itself."""
    if target in ("lie", "lie.__version__"):  # the package's version, readable everywhere
        return True
    mine = layer(module)
    if layer(target) in ALLOWED[mine]:
        return True
    return any(
        who in (mine, module) and (target == name or target.startswith(name + "."))
        for who, name in EXCEPTIONS
    )


def layer(module: str) -> str:
    """The layer of ``lie.<layer>...``; the package root (``lie``, its version, the CLI) is ``entry``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and (PACKAGE / parts[1]).is_dir() else "entry"


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


IMPORTERS = {"import_module", "__import__"}  # importlib.import_module(name), __import__(name)
MODULE_NAME = re.compile(r"lie(\.[A-Za-z_]\w*)*")


def _is_module(text: str) -> bool:
    """``text`` is the dotted name of a module or package of ``lie`` (not a file name like ``lie.lock``)."""
    if not MODULE_NAME.fullmatch(text) or "." not in text:
        return False
    path = PACKAGE.parent.joinpath(*text.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _module_in(text: str) -> str | None:
    """The ``lie`` module a dotted string names, whatever it is written in: a module, a class path
    (``lie.engines.x.Class``), ``module:attr``, ``pkg://module`` (Hydra's): the longest module prefix."""
    text = text.removeprefix("pkg://").partition(":")[0]
    if not MODULE_NAME.fullmatch(text):
        return None
    parts = text.split(".")
    for end in range(len(parts), 1, -1):
        if _is_module(".".join(parts[:end])):
            return ".".join(parts[:end])
    return None


def _package(module: str, is_package: bool) -> list[str]:
    parts = module.split(".")
    return parts if is_package else parts[:-1]


DYNAMIC = "lie.<a name built at run time>"  # no layer: the rule cannot allow it


def _text(node: ast.AST | None) -> tuple[str, bool] | None:
    """A string argument's text as far as it is written in the source, and whether it is all of it: a
    constant, or an f-string up to its first part that is not a constant (``f"lie.{'stages'}.x"``
    reads whole; ``f"lie.{layer}.x"`` reads ``lie.`` and is partial)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value, True
    if not isinstance(node, ast.JoinedStr):
        return None
    text = ""
    for part in node.values:
        if isinstance(part, ast.Constant):
            text += str(part.value)
        elif (
            isinstance(part, ast.FormattedValue)
            and isinstance(part.value, ast.Constant)
            and not part.format_spec
        ):
            text += str(part.value.value)
        else:
            return text, False
    return text, True


def _named_module(node: ast.AST, package: ast.AST | None = None) -> str | None:
    """The ``lie`` module a string handed to an importer names (``package``: import_module's, for a
    relative name). A name whose layer is built at run time is :data:`DYNAMIC`."""
    read = _text(node)
    if read is None:
        return None
    text, whole = read
    if text.startswith(".") and package is not None:  # import_module(".stages.x", package="lie")
        base = _text(package)
        if base is None or not base[1]:
            return DYNAMIC if (base and base[0].startswith("lie")) else None
        level = len(text) - len(text.lstrip("."))
        parts = base[0].split(".")
        parts = parts[: len(parts) - (level - 1)] if level > 1 else parts
        text = ".".join(parts + ([text.lstrip(".")] if text.lstrip(".") else []))
    if not whole:
        head = text.rpartition(".")[0]
        if head.split(".")[0] != "lie":
            return None
        return head if "." in head and MODULE_NAME.fullmatch(head) else DYNAMIC
    return text if MODULE_NAME.fullmatch(text) and text.split(".")[0] == "lie" else None


def _fromlist(call: ast.Call) -> list[str]:
    """``__import__(name, ..., fromlist)``'s names (a keyword or the fourth argument)."""
    node = next(
        (k.value for k in call.keywords if k.arg == "fromlist"), call.args[3] if len(call.args) > 3 else None
    )
    if isinstance(node, (ast.List, ast.Tuple)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return []


def _lie_names(tree: ast.AST) -> set[str]:
    """The names ``import lie`` / ``import lie.x`` / ``import lie as L`` bind to the package."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "lie" and (alias.asname is None or alias.name == "lie"):
                    names.add(alias.asname or "lie")
    return names


def _dotted(node: ast.Attribute) -> list[str] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(parts)]


def source_imports(source: str, module: str, is_package: bool = False) -> list[tuple[int, str]]:
    """Every ``lie`` module the source of ``module`` imports, at any depth, with its line: ``import``,
    ``from ... import`` (relative ones resolved against ``module``'s package), the names handed to
    ``importlib.import_module`` (relative ones with ``package=``) / ``__import__`` (with its
    ``fromlist``), a module reached as an attribute of the package (``import lie`` then
    ``lie.stages.x.f``), and a dotted ``lie.…`` string in any form (a module, a class path,
    ``module:attr``, ``pkg://module``: a table of modules imported by name, a class path handed to
    verl). A module name built at run time counts as :data:`DYNAMIC`, which no layer may import."""
    out = []
    tree = ast.parse(source)
    roots = _lie_names(tree)
    inner = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "lie"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = _package(module, is_package)
                if node.level - 1 > len(base) - 1:
                    raise ValueError(f"{module}:{node.lineno}: a relative import above the package")
                base = base[: len(base) - (node.level - 1)]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            if name.split(".")[0] != "lie":
                continue
            if node.module is None or name == "lie":  # from . import x, from lie import x: x may be a module
                out += [(node.lineno, f"{name}.{a.name}") for a in node.names]
            else:
                out.append((node.lineno, name))
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if called in IMPORTERS:
                package = next((k.value for k in node.keywords if k.arg == "package"), None)
                named = _named_module(node.args[0], package if called == "import_module" else None)
                if named:
                    fromlist = _fromlist(node) if called == "__import__" else []
                    out += [(node.lineno, f"{named}.{x}") for x in fromlist] or [(node.lineno, named)]
        elif isinstance(node, ast.Attribute) and id(node) not in inner and roots:
            parts = _dotted(node)
            if parts and parts[0] in roots:
                found = _module_in(".".join(["lie", *parts[1:]]))
                if found:
                    out.append((node.lineno, found))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found = _module_in(node.value)
            if found:
                out.append((node.lineno, found))
    return sorted(set(out))


def imports(path: Path) -> list[tuple[int, str]]:
    """Every ``lie`` module a file imports (:func:`source_imports`); a file outside the package (a
    test) resolves no relative import."""
    inside = path.is_relative_to(PACKAGE)
    module = module_name(path) if inside else path.stem
    return source_imports(path.read_text(encoding="utf-8"), module, inside and path.name == "__init__.py")


def violations(path: Path, source: str | None = None) -> list[str]:
    """The imports of the package file ``path`` (its text, or ``source`` in its place) against the rule."""
    module = module_name(path)
    assert layer(module) in ALLOWED, f"{path}: a module outside the known layers: add it to the rule"
    source = path.read_text(encoding="utf-8") if source is None else source
    return [
        f"{path.relative_to(REPO)}:{line} ({layer(module)}) imports {target} ({layer(target)})"
        for line, target in source_imports(source, module, path.name == "__init__.py")
        if not allowed(module, target)
    ]


def test_every_import_points_down_the_layers():
    wrong = [v for path in sorted(PACKAGE.rglob("*.py")) for v in violations(path)]
    assert not wrong, "imports against the layers:\n" + "\n".join(wrong)


# imports the rule must see: relative ones, and modules imported by name (issue 24)
INJECTED = [
    ("analysis/diversity.py", "from ..engines.generation import load_engine", "lie.engines.generation"),
    (
        "report/tables.py",
        'import importlib\nimportlib.import_module("lie.stages.generate")',
        "lie.stages.generate",
    ),
    ("analysis/diversity.py", "from .. import stages", "lie.stages"),
    ("report/tables.py", 'module = __import__("lie.engines.generation")', "lie.engines.generation"),
    ("study/gates.py", 'import importlib\nimportlib.import_module(f"lie.stages.{name}")', "lie.stages"),
    ("formats/__init__.py", "from .. import stages", "lie.stages"),
    ("commands/score.py", "from ..grading import grade_many", "lie.grading"),
    ("commands/grade.py", "from lie.formats.jsonl import dumps", "lie.formats.jsonl"),
    # issue 37: the holes a review found, each injected into core/reward.py
    ("core/reward.py", "import lie\nlie.stages.generate.run_generate", "lie.stages.generate"),
    ("core/reward.py", '__import__("lie", fromlist=["stages"])', "lie.stages"),
    (
        "core/reward.py",
        'import importlib\nimportlib.import_module(".stages.generate", package="lie")',
        "lie.stages.generate",
    ),
    ("core/reward.py", 'import importlib\nimportlib.import_module(f"lie.{layer}.generate")', DYNAMIC),
    (
        "core/reward.py",
        "import importlib\nimportlib.import_module(f\"{'lie'}.stages.generate\")",
        "lie.stages.generate",
    ),
    ("core/reward.py", 'HANDLER = "lie.stages.generate:run_generate"', "lie.stages.generate"),
    ("core/reward.py", 'TARGET = "pkg://lie.stages.generate"', "lie.stages.generate"),
    ("core/reward.py", 'CLASS = "lie.engines.verl.trainer.LIETrainer"', "lie.engines.verl.trainer"),
]


@pytest.mark.parametrize(("file", "line", "target"), INJECTED)
def test_the_rule_fails_on_an_injected_import(file, line, target):
    """The file passes as it is; with one line added (at the end, or inside a function) the rule names
    that line and its target."""
    path = PACKAGE / file
    source = path.read_text(encoding="utf-8")
    assert not violations(path, source)
    for injected in (
        f"{source}\n{line}\n",
        f"{source}\n\ndef _hidden():\n" + "".join(f"    {part}\n" for part in line.splitlines()),
    ):
        found = violations(path, injected)
        where = injected.count("\n", 0, injected.rindex(line.splitlines()[-1])) + 1
        assert found == [
            f"{path.relative_to(REPO)}:{where} ({layer(module_name(path))}) imports {target} ({layer(target)})"
        ]


def test_tests_import_stages_never_commands():
    """Tests reach the logic through stages (or the real CLI, lie.cli.main), never a command module."""
    wrong = [
        f"{path.name}:{line} imports {target}"
        for path in sorted((REPO / "tests").glob("*.py"))
        if path.name != Path(__file__).name  # this file names the rule's modules
        for line, target in imports(path)
        if layer(target) == "commands" and target != "lie.commands.argtypes"
    ]
    assert not wrong, "\n".join(wrong)


LOOPS = (ast.For, ast.AsyncFor, ast.While, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


SHIM = ("add_arguments", "run", "run_raw")  # a command's functions; run_raw: arguments as they come


def shim_faults(source: str) -> list[str]:
    """What in a command module's source is more than a shim: a command defines ``add_arguments`` and
    ``run`` (or ``run_raw``: its arguments as they come) and nothing else (no helper, class or nested
    function), and its ``run`` has no loop."""
    tree = ast.parse(source)
    faults = [
        f"line {node.lineno}: {type(node).__name__} {getattr(node, 'name', '')}".rstrip()
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name not in SHIM
    ]
    for top in tree.body:
        if isinstance(top, ast.FunctionDef) and top.name in SHIM:
            for node in ast.walk(top):
                if node is not top and isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.Lambda)):
                    faults.append(f"line {node.lineno}: a {type(node).__name__} inside {top.name}")
                elif top.name != "add_arguments" and isinstance(node, LOOPS):
                    faults.append(f"line {node.lineno}: a loop in {top.name} (logic: move it into a stage)")
    return faults


def test_commands_are_shims():
    """A command parses its arguments and calls a stage: the logic lives in stages/."""
    wrong = [
        f"{path.name} {fault}"
        for path in sorted((PACKAGE / "commands").glob("*.py"))
        if path.name not in ("__init__.py", "argtypes.py")
        for fault in shim_faults(path.read_text(encoding="utf-8"))
    ]
    assert not wrong, "move the logic into a stage:\n" + "\n".join(wrong)


def test_the_shim_rule_fails_on_logic_in_a_command():
    source = (PACKAGE / "commands" / "score.py").read_text(encoding="utf-8")
    assert not shim_faults(source)
    helper = source + "\n\ndef _tally(rows):\n    return len(rows)\n"
    assert shim_faults(helper) == [f"line {len(source.splitlines()) + 3}: FunctionDef _tally"]
    looping = source.replace("    return 0\n", "    for _ in args.set:\n        pass\n    return 0\n")
    assert len(shim_faults(looping)) == 1 and "a loop in run" in shim_faults(looping)[0]


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
        p
        for p in _cited_paths((REPO / source).read_text(encoding="utf-8"))
        if not (REPO / p).exists() and p not in NOT_YET.get(source, ())
    )
    assert not missing, f"{source} cites paths that do not exist: {missing}"


# A page written before the files it names (a pre-registration precedes its config): page -> those files
NOT_YET: dict[
    str, set[str]
] = {}  # e.g. {"docs/study/preregistration-v3.md": {"workflow/configs/study-v3.yaml"}} until it was written


def test_a_file_written_later_is_listed_only_until_it_exists():
    assert not [p for paths in NOT_YET.values() for p in paths if (REPO / p).exists()], (
        "remove it from NOT_YET"
    )


BARE_MD = re.compile(r"(?<![\w./-])([A-Za-z_][\w-]*\.md)\b")  # a page named without its folder
WRITTEN_MD = {"lengths.md", "study_gates.md", "study_summary.md"}  # pages lie writes under an outdir


def _missing_bare_pages(text: str) -> set[str]:
    """Bare ``NAME.md`` citations that name no page of the repository (README.md, docs/**, ...)."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "*.md"], cwd=REPO, check=True,
                            capture_output=True, text=True).stdout.split()  # fmt: skip
    pages = {Path(p).name for p in listed}
    return {name for name in BARE_MD.findall(text) if name not in pages | WRITTEN_MD}


def test_the_code_cites_only_paths_that_exist():
    missing = []
    for path in (
        sorted(PACKAGE.rglob("*.py")) + sorted((REPO / "workflow").rglob("*.smk")) + [REPO / "Snakefile"]
    ):
        text = path.read_text(encoding="utf-8")
        for cited in _cited_paths(text) | _missing_bare_pages(text):
            if not (REPO / cited).exists():
                missing.append(f"{path.relative_to(REPO)} cites {cited}")
    assert not missing, "\n".join(missing)


def test_a_bare_page_name_that_does_not_exist_is_caught():
    assert _missing_bare_pages("one rule per arrow of DESIGN.md; see README.md and evaluation.md") == {
        "DESIGN.md"
    }


def test_the_readme_is_short():
    lines = len((REPO / "README.md").read_text(encoding="utf-8").splitlines())
    assert lines <= 260, f"README.md has {lines} lines: the reference belongs in docs/"


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


def test_a_run_folder_comes_from_the_layout():
    """One way to a run's folder: ``Layout(config).run_dir(run)``; ``RunDir(...)`` is built only there."""
    built = [
        f"{path.relative_to(REPO)}:{number}"
        for path in [*sorted(PACKAGE.rglob("*.py")), *sorted((REPO / "workflow").rglob("*.smk"))]
        if path not in (PACKAGE / "config" / "layout.py", PACKAGE / "formats" / "runs.py")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\bRunDir\(", line)
    ]
    assert not built, "use Layout(config).run_dir(run):\n" + "\n".join(built)


FILE_LIBRARIES = ("pyarrow.parquet", "pyarrow.csv")  # a file's bytes read or written through them


def file_io_outside_formats(source: str) -> list[str]:
    """Where ``source`` reads or writes parquet/CSV itself (importing pyarrow's parquet or csv module, or
    calling a ``read_parquet``/``to_parquet``) instead of through lie.formats, which owns each file."""
    found = []
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.Attribute) and node.attr in ("read_parquet", "to_parquet"):
            names = [node.attr]
        found += [
            f"line {node.lineno}: {n}" for n in names if n in (*FILE_LIBRARIES, "read_parquet", "to_parquet")
        ]
    return found


def test_only_formats_reads_or_writes_parquet_and_csv():
    """Issue 37: one reader and writer per file format, in lie.formats (rows, sources)."""
    wrong = [
        f"{path.relative_to(REPO)} {fault}"
        for path in sorted((REPO / "src" / "lie").rglob("*.py"))
        if "formats" not in path.relative_to(REPO / "src" / "lie").parts
        for fault in file_io_outside_formats(path.read_text(encoding="utf-8"))
    ]
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize(
    "line",
    ["import pyarrow.parquet as pq", "from pyarrow import parquet", "from pyarrow.csv import read_csv",
     "import pandas as pd\npd.read_parquet('x')", "frame.to_parquet('x')"],
)  # fmt: skip
def test_the_file_rule_sees_each_way_in(line):
    assert file_io_outside_formats(line), line
    assert not file_io_outside_formats("import pyarrow as pa\nfrom lie.formats.rows import read_rows")


def key_reads(source: str, key: str) -> list[int]:
    """Lines of ``source`` that read ``key`` from a mapping: ``x[key]``, ``x.get(key...)``, ``x.pop(key...)``."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.slice, ast.Constant)
            and node.slice.value == key
        ):
            lines.append(node.lineno)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("get", "pop")
              and node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value == key):  # fmt: skip
            lines.append(node.lineno)
    return lines


def test_trust_remote_code_is_read_in_one_place():
    """Issue 37: the switch that lets a model run its own code has one reader (``Config.trust_remote_code``,
    lie.config.typed) and no default written elsewhere; every engine asks it."""
    reads = [
        f"{path.relative_to(REPO)}:{line}"
        for path in sorted((REPO / "src" / "lie").rglob("*.py"))
        for line in key_reads(path.read_text(encoding="utf-8"), "trust_remote_code")
    ]
    assert [r.split(":")[0] for r in reads] == ["src/lie/config/typed.py"], reads
    assert key_reads("x = config.get('trust_remote_code', False)", "trust_remote_code") == [1]


def section_reads(key: str) -> dict[str, list[int]]:
    """Per file of src/lie outside lie.config, the lines reading ``key`` as a mapping key (:func:`key_reads`)."""
    out = {}
    for path in sorted((REPO / "src" / "lie").rglob("*.py")):
        if "config" not in path.relative_to(REPO / "src" / "lie").parts:
            lines = key_reads(path.read_text(encoding="utf-8"), key)
            if lines:
                out[str(path.relative_to(REPO))] = lines
    return out


TRIAL = "src/lie/stages/preflight_trial.py"  # writes a trial config for its child processes (as written)
ROWS = {"src/lie/formats/rows.py", "src/lie/stages/data/adapters.py", "src/lie/stages/data/build.py",
        "src/lie/engines/trl/train.py"}  # fmt: skip
# Outside config/ no top-level key of the config is read from a mapping, whatever the variable is called,
# but in the files listed, where the same word names something else (with why).
SECTION_READERS = {
    **{key: set() for key in yaml.safe_load((REPO / "src/lie/config/schema.yaml").read_text())["properties"]},
    # the preflight's trial config: built from Config.as_written and edited for its child process
    **{key: {TRIAL} for key in ("engines", "models", "datasets", "training", "experiments", "evaluation")},
    "prompt": {TRIAL, *ROWS},  # a verl row's prompt column
    "reflen": {"src/lie/stages/reflen.py"},  # the reference-length file's metadata record
    # verl's own config (the reward manager) and rollout records
    "reward": {"src/lie/engines/verl/reward_manager.py", "src/lie/study/inputs.py"},
    "runs": {"src/lie/study/spec.py"},  # an arm's runs, in the study section its one reader checks
}


@pytest.mark.parametrize("section", sorted(SECTION_READERS))
def test_no_section_of_the_config_is_read_as_a_mapping_outside_lie_config(section):
    """Issue 37: every section is read through the typed ``Config`` (lie.config.typed), whatever the
    variable holding it is called (by the syntax tree); mypy (make lint) refuses a subscript of a Config."""
    assert set(section_reads(section)) == SECTION_READERS[section]


def test_the_config_as_written_is_read_only_in_lie_config_and_the_trial_config():
    """The untyped ways in (``as_written``, ``read_config``, the frozen mapping ``_written``) are the config
    package's own, and the preflight's, which writes a trial config from it."""
    found = {}
    for path in sorted((REPO / "src" / "lie").rglob("*.py")):
        if "config" in path.relative_to(REPO / "src" / "lie").parts:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {
            n.attr
            for n in ast.walk(tree)
            if isinstance(n, ast.Attribute) and n.attr in ("as_written", "_written")
        }
        names |= {
            n.attr
            for n in ast.walk(tree)
            if isinstance(n, ast.Attribute) and ast.unparse(n.value) == "cfgmod"
        }
        names |= {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                  and (n.module or "").startswith("lie.config") for a in n.names}  # fmt: skip
        if hit := names & {"as_written", "read_config", "_written", "validate_config"}:
            found[str(path.relative_to(REPO))] = hit
    assert found == {TRIAL: {"as_written", "validate_config"}}


def test_a_config_is_typed_and_frozen_not_a_mapping():
    """``load_config`` returns the typed Config: no subscript, no ``.get``, no assignment."""
    import dataclasses

    from lie.config import Config, load_config

    config = load_config(REPO / "workflow" / "configs" / "smoke.yaml")
    assert isinstance(config, Config)
    assert not any(hasattr(config, name) for name in ("__getitem__", "get", "keys", "items"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.outdir = REPO  # type: ignore[misc]
    with pytest.raises(TypeError):
        config.models["smoke-tiny"] = None  # type: ignore[index]


def test_the_rules_read_the_typed_config():
    """The Snakefile's rules read ``CFG = Config.of(config)``: Snakemake's own ``config`` mapping is only
    checked and typed (common.smk), never read key by key."""
    uses = []
    for path in sorted([REPO / "Snakefile", *(REPO / "workflow" / "rules").glob("*.smk")]):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"(?<![\w.\"'])config(\s*[\[,)]|\.(get|items|keys|pop)\()", line):
                uses.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert [u.split(": ", 1)[1] for u in uses] == [
        "lie_config.validate_workflow(config, workflow.configfiles)",
        'validate(config, "../schemas/config.schema.yaml")',
        'CFG = lie_config.Config.of(config, source=" + ".join(map(str, workflow.configfiles)) or "config")',
    ], uses


def test_the_section_rule_sees_each_form_of_a_read():
    assert key_reads("b = (data.config.get('evaluation') or {}).get('budgets')", "evaluation") == [1]
    assert key_reads("e = cfg['evaluation']['in_domain']", "evaluation") == [1]
    assert key_reads("t = int(settings['training']['max_steps'])", "training") == [1]
    assert key_reads("r = c.pop('reward', None)", "reward") == [1]


def string_constants(source: str, value: str) -> list[int]:
    """Lines of Python ``source`` holding the string constant ``value`` (docstrings are not constants here)."""
    tree = ast.parse(source)
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}  # fmt: skip
    return [n.lineno for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and n.value == value and id(n) not in docs]  # fmt: skip


def test_the_default_multiple_choice_reader_is_written_once():
    """Issue 37: "robust" as the default reader in one place (lie.grading.items.DEFAULT_CHOICE_GRADING);
    the config view, the stages, the commands and the rules ask it. report/inputs.py names both readers
    (a list to tabulate, not a default); Snakemake rule files are Python but for their rule blocks."""
    allowed = {"src/lie/grading/items.py": 1, "src/lie/report/inputs.py": 1}
    found = {}
    for path in sorted((REPO / "src" / "lie").rglob("*.py")):
        lines = string_constants(path.read_text(encoding="utf-8"), "robust")
        if lines:
            found[str(path.relative_to(REPO))] = len(lines)
    for path in sorted((REPO / "workflow").rglob("*.smk")):
        count = len(re.findall(r"[\"']robust[\"']", path.read_text(encoding="utf-8")))
        if count:
            found[str(path.relative_to(REPO))] = count
    assert found == allowed, found
    assert string_constants('"""robust"""\nx = "robust"', "robust") == [2]
