"""The package's import rule (docs/architecture.md), and that the docs cite only paths that exist.

Dependencies point one way: commands -> stages -> engines -> grading, formats, config -> core;
stages also call analysis and report, which read files (formats, config, core) and never reach
an engine or a stage. A command imports stages only (and its argparse helpers, and LieError). The CPU
study is apart, in lie.study: its commands -> its stages -> the pipeline's stages and the study's
read-only modules; nothing of the reproduction imports it. The syntax
tree's imports are read: relative ones, and modules imported by name (importlib.import_module, __import__);
what it cannot read (a name built from variables, exec, runpy) is checked when a module is loaded, each
layer imported in a fresh interpreter. No two modules import each other, directly or in a loop, and a
module of lie is imported at the top of a file (inside a function only where IMPORTED_LATE says why).
The config is read typed: in src/lie and the Snakemake files.
"""

from __future__ import annotations

import ast
import functools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "src" / "lie"

STAGES_REACH = {"core", "tasks", "grading", "formats", "config", "engines", "analysis", "report"}
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
    "stages": {"core", "tasks", "grading", "formats", "config", "engines", "analysis", "report", "stages"},
    "commands": {"stages"},
    # the CPU study (lie.study), apart: its read-only modules, its stages, its commands
    "study": {"core", "formats", "config", "tasks", "analysis", "report", "study"},
    "study.stages": {*STAGES_REACH, "stages", "study", "study.stages"},
    "study.commands": {"study.stages"},
    "entry": {"entry", "core", "commands", "study.commands"},
}
# the few edges outside the layers, each with its reason: (the importing module or layer, the target)
EXCEPTIONS = {
    ("commands", "lie.commands.argtypes"),  # the argparse helpers the subcommands share
    ("commands", "lie.core.errors"),  # a command refuses a bad flag with LieError, one line
    ("study.commands", "lie.commands.argtypes"),  # the study's commands: the same two edges
    ("study.commands", "lie.core.errors"),
    # the argparse helpers: --config read into a validated config, KEY=VALUE read as YAML, the --out* check
    ("lie.commands.argtypes", "lie.config"),
    ("lie.commands.argtypes", "lie.core.errors"),
    ("lie.commands.argtypes", "lie.formats.overlap"),
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


SUBLAYERS = ("study.stages", "study.commands")  # packages in a layer's folder that are layers of their own


def layer(module: str) -> str:
    """The layer of ``lie.<layer>...`` (``lie.study.stages...`` is ``study.stages``: :data:`SUBLAYERS`); the
    package root (``lie``, its version, the CLI) is ``entry``."""
    parts = module.split(".")
    if ".".join(parts[1:3]) in SUBLAYERS:
        return ".".join(parts[1:3])
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


def _from_module(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The module a ``from … import`` statement of ``module`` imports from, a relative one resolved."""
    if not node.level:
        return node.module or ""
    base = _package(module, is_package)
    if node.level - 1 > len(base) - 1:
        raise ValueError(f"{module}:{node.lineno}: a relative import above the package")
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


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
            name = _from_module(node, module, is_package)
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


def reachable(name: str) -> set[str]:
    """The layers whose modules a layer's modules may load: its own, the layers it may import, theirs, and so on."""
    seen, todo = {name}, [name]
    while todo:
        for target in ALLOWED[todo.pop()] - seen:
            seen.add(target)
            todo.append(target)
    return seen


# The layers kept from some other layer: importing one of their modules may load only what the rule lets
# it reach (the entry, lie.cli, reaches every layer)
CONFINED = [name for name in ALLOWED if reachable(name) != set(ALLOWED)]
LOADED = """
import importlib, json, os, sys
failed = {}
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except Exception as exc:  # a library this environment lacks: named, and the test says which may
        failed[name] = repr(exc)[:300]
exec(os.environ.get("LIE_TEST_PLANTED", ""))
print(json.dumps([sorted(m for m in sys.modules if m == "lie" or m.startswith("lie.")), failed]))
"""
# modules that cannot be loaded in .venv, with why (their imports are read by the syntax tree only)
UNLOADABLE = {  # verl's vLLM rollout and worker need vLLM, which only .venv-vllm holds
    "lie.engines.verl.cpu.vllm_rollout",
    "lie.engines.verl.cpu.vllm_worker",
}


def _fresh_interpreter(name: str, planted: str) -> subprocess.Popen:
    """A fresh interpreter importing every module of layer ``name``, then running ``planted``."""
    modules = [m for m in map(module_name, sorted(PACKAGE.rglob("*.py"))) if layer(m) == name]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "LIE_TEST_PLANTED": planted}
    return subprocess.Popen(
        [sys.executable, "-c", LOADED, *modules],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _excepted(name: str, module: str) -> bool:
    """``module`` is an edge of :data:`EXCEPTIONS` named for layer ``name`` (the study's commands load the
    argparse helpers), or a package above one (importing the module loads it)."""
    return any(
        who == name
        and (module == target or module.startswith(target + ".") or target.startswith(module + "."))
        for who, target in EXCEPTIONS
    )


def loaded_against_the_rule(runs: list[tuple[str, str]]) -> list[list[str]]:
    """For each (layer, planted code), the modules of lie in ``sys.modules`` after importing the layer
    in a fresh interpreter (all started at once) that lie outside the layers it may reach: what a module
    imports when it is loaded, however it names it (a string built at run time, ``exec``, ``runpy``).
    Imports inside functions run later: the syntax tree's rule above is the only check of those."""
    out = []
    for (name, _), proc in zip(runs, [_fresh_interpreter(*run) for run in runs], strict=True):
        stdout, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 0, f"importing the {name} layer failed:\n{stderr[-3000:]}"
        loaded, failed = json.loads(stdout.splitlines()[-1])
        assert set(failed) <= UNLOADABLE, failed
        out.append(
            [m for m in loaded if m != "lie" and layer(m) not in reachable(name) and not _excepted(name, m)]
        )
    return out


LIGHT = [name for name in CONFINED if name != "engines"]  # engines loads verl and torch: ~10-25 s


def test_importing_a_layer_loads_no_module_its_layer_may_not_reach():
    assert {"core", "formats", "config", "analysis", "report", "stages", *STUDY} <= set(LIGHT)
    found = loaded_against_the_rule([(name, "") for name in LIGHT])
    assert dict(zip(LIGHT, found, strict=True)) == {name: [] for name in LIGHT}


@pytest.mark.heavy
def test_importing_the_engines_layer_loads_no_module_it_may_not_reach():
    assert "engines" in CONFINED
    assert loaded_against_the_rule([("engines", "")]) == [[]]


PLANTED_LOADS = [
    'import importlib\nimportlib.import_module("lie." + "stages.plan")',
    'exec("import lie.stages.plan")',
    'import runpy\nrunpy.run_module("lie.stages.plan", alter_sys=True)',
]


def test_the_run_time_check_sees_a_module_loaded_by_a_name_built_at_run_time():
    """What the syntax tree cannot read (a name built at run time, ``exec``, ``runpy``), run as a module
    of core is loaded: the check names the stages package it loads."""
    for planted, wrong in zip(PLANTED_LOADS, loaded_against_the_rule([("core", p) for p in PLANTED_LOADS])):
        assert "lie.stages" in wrong and all(layer(m) in ("stages", *ALLOWED["stages"]) for m in wrong), (
            planted
        )


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


STUDY = [name for name in ALLOWED if name.split(".")[0] == "study"]  # the CPU study's layers (lie.study)
REPRODUCTION = [name for name in ALLOWED if name not in STUDY and name != "entry"]
STUDY_RULES = REPO / "workflow" / "rules" / "study.smk"  # the one Snakemake file that imports the study


def study_imports(where: str, python: str, module: str = "workflow", is_package: bool = False) -> list[str]:
    """The lines of Python ``python`` (a module's source, or a Snakemake file's translation) that import
    a module of the study's layers, however they name it (:func:`source_imports`)."""
    found = source_imports(python, module, is_package)
    return [f"{where}:{line} imports {target}" for line, target in found if layer(target) in STUDY]


def test_no_layer_of_the_reproduction_imports_the_study():
    """The CPU study is apart: no layer of the reproduction may reach it (the rule above) or imports it (any
    form), and of the Snakemake files only its own rules do (the Snakefile includes them; lie.cli, the
    entry, registers its commands)."""
    assert STUDY == ["study", "study.stages", "study.commands"]
    assert not [name for name in REPRODUCTION if reachable(name) & set(STUDY)]
    wrong = [
        hit
        for path in sorted(PACKAGE.rglob("*.py"))
        if layer(name := module_name(path)) in REPRODUCTION
        for hit in study_imports(str(path.relative_to(REPO)), path.read_text(encoding="utf-8"), name,
                                 path.name == "__init__.py")
    ]  # fmt: skip
    rules = {where: python for where, python, _ in outside_config() if where.endswith((".smk", "Snakefile"))}
    assert study_imports("study.smk", rules.pop(str(STUDY_RULES.relative_to(REPO))))  # the check sees imports
    wrong += [hit for where, python in rules.items() for hit in study_imports(where, python)]
    assert not wrong, "the reproduction imports the study:\n" + "\n".join(wrong)


@pytest.mark.parametrize(
    ("file", "line", "target"),
    [
        ("src/lie/stages/evaluate.py", "from lie.study.spec import study_spec", "lie.study.spec"),
        (
            "src/lie/core/reward.py",
            "import importlib\nimportlib.import_module('lie.study.gates')",
            "lie.study.gates",
        ),
        ("src/lie/commands/score.py", 'SHIM = "lie.study.commands.probe:run"', "lie.study.commands.probe"),
        ("workflow/rules/evaluate.smk", "from lie.study.paths import StudyPaths", "lie.study.paths"),
    ],
)
def test_the_study_rule_fails_on_an_injected_import(file, line, target, tmp_path):
    """Each file passes as it is; with one import of the study added at its end, the check names its line."""
    path = REPO / file
    source = path.read_text(encoding="utf-8")
    if path.suffix == ".smk":  # read as Snakemake's parser makes it Python, from a copy with the line added
        copy = tmp_path / path.name
        copy.write_text(f"{source}\n{line}\n", encoding="utf-8")
        python, linemap = snakemake_python(copy)
        found = [hit.split(" ", 1)[1] for hit in study_imports(file, python)]
        assert not study_imports(file, snakemake_python(path)[0])
    else:
        module, package = module_name(path), path.name == "__init__.py"
        assert not study_imports(file, source, module, package)
        injected = f"{source}\n{line}\n"
        where = injected.count("\n", 0, injected.rindex(line.splitlines()[-1])) + 1
        found = study_imports(file, injected, module, package)
        assert found == [f"{file}:{where} imports {target}"]
        assert violations(path, injected), "the layer rule names it too"
        found = [hit.split(" ", 1)[1] for hit in found]
    assert found == [f"imports {target}"]


def test_tests_import_stages_never_commands():
    """Tests reach the logic through stages (or the real CLI, lie.cli.main), never a command module."""
    wrong = [
        f"{path.name}:{line} imports {target}"
        for path in sorted((REPO / "tests").glob("*.py"))
        if path.name != Path(__file__).name  # this file names the rule's modules
        for line, target in imports(path)
        if layer(target) in ("commands", "study.commands") and target != "lie.commands.argtypes"
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


COMMAND_FILES = [
    *sorted((PACKAGE / "commands").glob("*.py")),
    *sorted((PACKAGE / "study" / "commands").glob("*.py")),
]


def test_commands_are_shims():
    """A command parses its arguments and calls a stage: the logic lives in stages/ (the study's: study/stages/)."""
    wrong = [
        f"{path.relative_to(PACKAGE)} {fault}"
        for path in COMMAND_FILES
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
        f"{path.relative_to(PACKAGE)}: {len(path.read_text().splitlines())} lines"
        for path in COMMAND_FILES
        if len(path.read_text().splitlines()) > 120
    ]
    assert not long, "move the logic into a stage:\n" + "\n".join(long)


# ---- the module graph: no two modules import each other, no import of lie hidden in a function --------

MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def _lie_module(name: str) -> str | None:
    """The longest prefix of the dotted ``name`` that is a module of ``lie`` (``lie`` is the package's)."""
    parts = name.split(".")
    return next((m for end in range(len(parts), 0, -1) if (m := ".".join(parts[:end])) in MODULES), None)


def statement_imports(source: str, module: str, is_package: bool = False) -> list[tuple[int, str, bool]]:
    """The ``lie`` modules the ``import`` and ``from … import`` statements of ``module`` name, at any depth
    (under ``if TYPE_CHECKING:`` too), each with its line and whether it sits in a function's body: relative
    imports resolved; ``from pkg import name`` is the module ``pkg.name`` where there is one, else ``pkg``
    (its ``__init__``); a module's import of itself is left out."""
    found = []

    def visit(node: ast.AST, inside: bool) -> None:
        for child in ast.iter_child_nodes(node):
            deeper = inside or isinstance(child, FUNCTIONS)
            names = []
            if isinstance(child, ast.Import):
                names = [alias.name for alias in child.names]
            elif isinstance(child, ast.ImportFrom):
                base = _from_module(child, module, is_package)
                names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in child.names]
            for name in names:
                target = _lie_module(name) if name.split(".")[0] == "lie" else None
                if target and target != module:
                    found.append((child.lineno, target, deeper))
            visit(child, deeper)

    visit(ast.parse(source), False)
    return found


@functools.cache
def _module_imports(module: str) -> list[tuple[int, str, bool]]:
    path = MODULES[module]
    return statement_imports(path.read_text(encoding="utf-8"), module, path.name == "__init__.py")


def package_imports(replaced: dict[Path, str] | None = None) -> dict[str, list[tuple[int, str, bool]]]:
    """:func:`statement_imports` of every module of the package; ``replaced``: a file's text in its place."""
    replaced = replaced or {}
    return {
        module: statement_imports(replaced[path], module, path.name == "__init__.py")
        if path in replaced
        else _module_imports(module)
        for module, path in MODULES.items()
    }


def circles(imports: dict[str, list[tuple[int, str, bool]]]) -> list[list[str]]:
    """The strongly connected components of more than one module of the graph ``imports`` gives (module ->
    the modules it imports, at any depth): each a set of modules that import each other, directly or in a
    loop (Tarjan's algorithm, without recursion)."""
    edges = {module: sorted({target for _, target, _ in found}) for module, found in imports.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    work.append((target, iter(edges.get(target, ()))))
                elif target in stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_two_modules_import_each_other():
    """No module of lie imports another that imports it back, directly or in a loop: the graph of every
    import statement (function bodies included) has no circle."""
    found = circles(package_imports())
    assert not found, (
        "modules that import each other (give what both need a module of its own):\n"
        + "\n".join(" <-> ".join(component) for component in found)
    )


# The modules of lie imported inside a function, each with the reason it is not imported at the top: its
# import loads a heavy library (torch) that the importing module's usual work does without.
# (the file under src/lie, the module, why)
IMPORTED_LATE = (
    ("engines/generation.py", "lie.engines.sampling", "loads torch: the transformers engine's sampler"),
    ("engines/trl/train.py", "lie.engines.trl.sampler", "loads torch (a torch Sampler's subclass)"),
)
LATE = {(file, target) for file, target, _ in IMPORTED_LATE}


def late_imports(imports: dict[str, list[tuple[int, str, bool]]]) -> list[tuple[str, int, str]]:
    """The imports of a ``lie`` module inside a function's body: (the file under src/lie, line, module)."""
    return sorted(
        {
            (str(MODULES[module].relative_to(PACKAGE)), line, target)
            for module, found in imports.items()
            for line, target, inside in found
            if inside
        }
    )


def test_modules_of_lie_are_imported_at_the_top():
    """A module's imports of lie sit at its top, where a reader and the tools see its dependencies; one
    inside a function only with its reason in :data:`IMPORTED_LATE`."""
    found = late_imports(package_imports())
    wrong = [
        f"src/lie/{file}:{line} imports {target} inside a function"
        for file, line, target in found
        if (file, target) not in LATE
    ]
    assert not wrong, "move each to the top of its file:\n" + "\n".join(wrong)
    unused = LATE - {(file, target) for file, _, target in found}
    assert not unused, f"remove from IMPORTED_LATE: {sorted(unused)}"


def test_the_graph_checks_fail_on_an_injected_circle_and_late_import():
    """The package passes as it is (above); with core/errors.py importing formats/jsonl.py (which imports
    it) the circle is named, and an import of lie inside a function of formats/rows.py is named."""
    errors, rows = PACKAGE / "core" / "errors.py", PACKAGE / "formats" / "rows.py"
    source = errors.read_text(encoding="utf-8")
    circled = package_imports({errors: f"{source}\nfrom lie.formats.jsonl import dumps\n"})
    assert circles(circled) == [["lie.core.errors", "lie.formats.atomic", "lie.formats.jsonl"]]
    source = rows.read_text(encoding="utf-8")
    late = package_imports({rows: f"{source}\n\ndef _hidden():\n    from ..formats import prompts\n"})
    assert not [found for found in late_imports(package_imports()) if found[0] == "formats/rows.py"]
    assert [found for found in late_imports(late) if found[0] == "formats/rows.py"] == [
        ("formats/rows.py", source.count("\n") + 4, "lie.formats.prompts")
    ]


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


WORKFLOW_FILES = (REPO / "Snakefile", *sorted((REPO / "workflow").rglob("*.smk")))


def snakemake_python(path: Path) -> tuple[str, dict[int, int]]:
    """A Snakefile or ``.smk`` file as the Python Snakemake runs, translated by Snakemake's own parser (a
    rule block becomes a decorated function: its params, input functions and run block are read too),
    with the map from the translation's lines to the file's."""
    from types import SimpleNamespace

    from snakemake import parser
    from snakemake.sourcecache import LocalSourceFile

    def opened(source):  # the one thing Snakemake's parser asks of its workflow: a file's text
        return open(source.get_path_or_uri(secret_free=True), encoding="utf-8")

    sources = SimpleNamespace(open=opened)
    linemap: dict[int, int] = {}
    python, _ = parser.parse(LocalSourceFile(str(path)), SimpleNamespace(sourcecache=sources), linemap)
    return python, linemap


@functools.cache  # read once for every section's check
def outside_config() -> list[tuple[str, str, dict[int, int]]]:
    """(path, Python source, line map) of every file that must read the config typed: src/lie outside
    lie.config, and the Snakefile and workflow/**/*.smk (:func:`snakemake_python`)."""
    out = [
        (str(path.relative_to(REPO)), path.read_text(encoding="utf-8"), {})
        for path in sorted((REPO / "src" / "lie").rglob("*.py"))
        if "config" not in path.relative_to(REPO / "src" / "lie").parts
    ]
    for path in WORKFLOW_FILES:
        python, linemap = snakemake_python(path)
        out.append((str(path.relative_to(REPO)), python, linemap))
    return out


def section_reads(key: str) -> dict[str, list[int]]:
    """Per file of :func:`outside_config`, the lines reading ``key`` as a mapping key (:func:`key_reads`)."""
    out = {}
    for where, source, linemap in outside_config():
        lines = [linemap.get(line, line) for line in key_reads(source, key)]
        if lines:
            out[where] = lines
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


RAW_WAYS = {"as_written", "read_config", "_written", "validate_config"}  # the config as written, untyped


def raw_config_reads(source: str) -> set[str]:
    """The untyped ways into the config that ``source`` takes (:data:`RAW_WAYS`): an attribute
    (``CFG.as_written("training")``, ``cfgmod.read_config``) or a name imported from lie.config."""
    tree = ast.parse(source)
    names = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    names |= {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
              and (n.module or "").startswith("lie.config") for a in n.names}  # fmt: skip
    return names & RAW_WAYS


def test_the_config_as_written_is_read_only_in_lie_config_and_the_trial_config():
    """The untyped ways in (``as_written``, ``read_config``, the frozen mapping ``_written``) are the config
    package's own, and the preflight's, which writes a trial config from it; the Snakemake files read
    the typed ``CFG`` only."""
    found = {where: hit for where, source, _ in outside_config() if (hit := raw_config_reads(source))}
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


# Snakemake's `config` mapping goes to these calls only: the whole-config checks and the typed Config
CONFIG_CALLS = {"lie_config.validate_workflow", "validate", "lie_config.Config.of"}


def snakemake_config_uses(source: str) -> list[int]:
    """Lines of a Snakemake file's Python where Snakemake's ``config`` mapping is used other than as the
    first argument of :data:`CONFIG_CALLS`: a subscript, ``.get``, an alias (``settings = config``),
    an argument to anything else."""
    tree = ast.parse(source)
    handed = {id(n.args[0]) for n in ast.walk(tree)
              if isinstance(n, ast.Call) and n.args and ast.unparse(n.func) in CONFIG_CALLS}  # fmt: skip
    return sorted(n.lineno for n in ast.walk(tree)
                  if isinstance(n, ast.Name) and n.id == "config" and id(n) not in handed)  # fmt: skip


def test_the_rules_read_the_typed_config():
    """The Snakefile's rules read ``CFG = Config.of(config)``: Snakemake's own ``config`` mapping is only
    checked and typed (common.smk), never read key by key (by the syntax tree of Snakemake's translation)."""
    uses = {}
    for path in WORKFLOW_FILES:
        python, linemap = snakemake_python(path)
        if lines := [linemap.get(line, line) for line in snakemake_config_uses(python)]:
            uses[str(path.relative_to(REPO))] = lines
    assert not uses, uses
    common = ast.parse(snakemake_python(REPO / "workflow" / "rules" / "common.smk")[0])
    calls = [n for n in ast.walk(common) if isinstance(n, ast.Call) and ast.unparse(n.func) in CONFIG_CALLS]
    assert len(calls) == 3  # the mapping still goes to its checks and to Config.of


# raw reads planted in a rule file, and the checks above that must name them (a rule's params included):
# "raw" an untyped way in (raw_config_reads), "config" Snakemake's mapping (snakemake_config_uses),
# "section" a top-level key read as a mapping key (key_reads)
PLANTED = [
    ('MAX_STEPS = CFG.as_written("training")["max_steps"]', {"raw"}),
    ('settings = config\nSTEPS = settings["training"]["max_steps"]', {"config", "section"}),
    (
        "rule planted:\n    output: 'x'\n    params:\n        steps=lambda w: config['training']['max_steps']\n"
        "    shell: 'echo {params.steps} > {output}'",
        {"config", "section"},
    ),
    ("from lie.config import read_config\nRAW = read_config('config.yaml')", {"raw"}),
]


def _raw_config_checks(path: Path, first: int) -> set[str]:
    """The checks that name a line of ``path`` from line ``first`` on (the planted text)."""
    python, linemap = snakemake_python(path)
    found = {"raw"} if raw_config_reads(python) else set()
    for name, lines in (
        ("config", snakemake_config_uses(python)),
        ("section", key_reads(python, "training")),
    ):
        if any(linemap.get(line, line) >= first for line in lines):
            found.add(name)
    return found


@pytest.mark.parametrize(("planted", "checks"), PLANTED)
def test_the_raw_config_checks_read_the_snakemake_files(planted, checks, tmp_path):
    """train.smk passes as it is; with one raw read of the config planted at its end, the checks name it."""
    path = tmp_path / "train.smk"
    source = (REPO / "workflow" / "rules" / "train.smk").read_text(encoding="utf-8")
    path.write_text(source, encoding="utf-8")
    assert _raw_config_checks(path, 1) == set()
    path.write_text(f"{source}\n{planted}\n", encoding="utf-8")
    assert _raw_config_checks(path, source.count("\n") + 2) == checks


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
