"""The config's YAML reader (lie.config.yamlio) parses with libyaml where PyYAML has it, else in Python:
both refuse the same bounded things with the same words (the CLI's tests run the libyaml one)."""

from __future__ import annotations

import pytest
import yaml

from lie.config import yamlio
from lie.core.errors import LieError


@pytest.fixture(params=["libyaml", "python"])
def loader(request, monkeypatch):
    """``load_yaml`` with PyYAML's libyaml parser, or as where PyYAML was built without it."""
    if request.param == "libyaml":
        assert hasattr(yaml, "CSafeLoader"), "this PyYAML has no libyaml: only the Python parser runs"
    else:
        monkeypatch.delattr(yaml, "CSafeLoader")
    yamlio._unique_key_loader.cache_clear()
    yield request.param
    yamlio._unique_key_loader.cache_clear()


def _deep_map(levels: int) -> str:
    return "".join("  " * i + f"k{i}:\n" for i in range(levels)) + "  " * levels + "x: 1\n"


@pytest.mark.parametrize(
    "text, says",
    [
        ("a: " + "[" * 100 + "]" * 100, "line 1: not valid YAML: nested deeper than 64 levels"),
        (_deep_map(100), "not valid YAML: nested deeper than 64 levels"),
        ("a: " + "[" * 2000 + "]" * 2000, "line 1: not valid YAML: nested deeper than 64 levels"),
        ("a: 1\nb: 2\na: 3\n", "line 3: not valid YAML: key 'a' appears twice (first on line 1)"),
        ('a: "\\ud800"\n', "line 1: not valid YAML: "),
        ("a: &a [*a]\n", "recursive alias"),
    ],
    ids=["list-100", "map-100", "list-2000", "twice", "surrogate", "recursive"],
)
def test_both_parsers_refuse_the_same_inputs(loader, text, says):
    with pytest.raises(LieError) as refused:
        yamlio.load_yaml(text, "c.yaml")
    assert str(refused.value).startswith("c.yaml line ") and says in str(refused.value), str(refused.value)


def test_both_parsers_read_the_schema_and_a_deep_enough_file_alike(loader):
    schema = yamlio.SCHEMA.read_text(encoding="utf-8")
    assert yamlio.load_yaml(schema, "schema.yaml") == yaml.safe_load(schema)
    deep = yamlio.load_yaml(_deep_map(60), "c.yaml")
    for i in range(60):
        deep = deep[f"k{i}"]
    assert deep == {"x": 1}
    merged = yamlio.load_yaml("base: &b {lr: 1}\nrun:\n  <<: *b\n  lr: 2\n", "c.yaml")
    assert merged["run"] == {"lr": 2}  # a merge key may be overridden, as YAML intends
