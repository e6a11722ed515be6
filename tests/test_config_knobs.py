"""A training knob is declared once (a field of ``RunSettings``); the schema and the docs' table follow it.

The procedure of docs/training.md ("Adding a training knob") is followed with a knob that does not
exist, ``kl_coef``, declared on a subclass of ``RunSettings`` and written into copies of the schema and
of docs/configuration.md: the field alone reaches a run's settings, and the check names both files until
``lie.config.knob_files`` has written them.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
from pathlib import Path

import jsonschema
import pytest
import yaml

from lie.config import Config, RunSettings
from lie.config.knob import declared, knob, optional
from lie.config.knob_files import DOCS, docs_table, stale, write
from lie.config.settings import merged, written_settings
from lie.config.yamlio import SCHEMA
from lie.core.errors import LieError

REPO = Path(__file__).resolve().parents[1]
SMOKE = REPO / "workflow" / "configs" / "smoke.yaml"
KL = knob("The KL penalty's coefficient", default=0.0, minimum=0, maximum=1, per_run=True)
WithKL = dataclasses.make_dataclass(
    "WithKL", [("kl_coef", "float", KL)], bases=(RunSettings,), frozen=True, kw_only=True
)


def smoke() -> dict:
    return yaml.safe_load(SMOKE.read_text(encoding="utf-8"))


def schema_errors(schema: Path, config: dict) -> list[str]:
    validator = jsonschema.Draft202012Validator(yaml.safe_load(schema.read_text(encoding="utf-8")))
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(config)]


def copies(tmp_path: Path) -> tuple[Path, Path]:
    return Path(shutil.copy(SCHEMA, tmp_path / "schema.yaml")), Path(shutil.copy(DOCS, tmp_path / "docs.md"))


def test_the_schema_and_the_docs_table_are_what_the_knobs_declare():
    assert stale() == [], "run: python -m lie.config.knob_files"
    training = yaml.safe_load(SCHEMA.read_text(encoding="utf-8"))["properties"]["training"]
    knobs = [f for f in declared(RunSettings) if f.metadata["knob"].section == "training"]
    assert list(training["properties"]) == [f.name for f in knobs]
    assert training["required"] == [f.name for f in knobs if not optional(f)]
    run = yaml.safe_load(SCHEMA.read_text(encoding="utf-8"))["properties"]["experiments"][
        "additionalProperties"
    ]
    per_run = [f.name for f in knobs if f.metadata["knob"].per_run]
    assert per_run == ["seed", "max_response_length", "max_steps", "cpu_rollout"]
    assert set(per_run) <= set(run["properties"]) and run["properties"]["max_steps"]["maximum"] == 10_000_000
    assert "| `lr` | training | number | > 0 | required |" in DOCS.read_text(encoding="utf-8")


def test_the_docs_declare_the_knob_this_file_adds():
    """docs/training.md's step 1 is the declaration these tests add (its text, evaluated)."""
    text = (REPO / "docs" / "training.md").read_text(encoding="utf-8")
    found = re.search(r"`kl_coef: float = (knob\(.*?\))`", text)
    assert found, "docs/training.md: the example declaration of kl_coef"
    declared_in_docs = eval(found.group(1), {"knob": knob})  # noqa: S307 (the docs' own example)
    assert (declared_in_docs.metadata, declared_in_docs.default) == (KL.metadata, KL.default)


def test_a_knob_in_one_place_only_is_named_until_the_files_are_written(tmp_path):
    schema, docs = copies(tmp_path)
    config = smoke()
    config["training"]["kl_coef"] = 0.5
    assert stale(WithKL, schema, docs) == [schema, docs]  # the field alone: both files are behind
    assert schema_errors(schema, config) == [
        "training: Additional properties are not allowed ('kl_coef' was unexpected)"
    ]
    assert write(WithKL, schema, docs) == [schema, docs]
    assert stale(WithKL, schema, docs) == [] and stale(RunSettings, schema, docs) == [schema, docs]
    config["experiments"]["smoke_grpo"]["kl_coef"] = None  # per_run: null takes the shared value
    assert schema_errors(schema, config) == []
    config["training"]["kl_coef"] = 2
    config["experiments"]["smoke_grpo"]["kl_coef"] = -1
    assert sorted(schema_errors(schema, config)) == [
        "experiments.smoke_grpo.kl_coef: -1 is less than the minimum of 0",
        "training.kl_coef: 2 is greater than the maximum of 1",
    ]
    row = "| `kl_coef` | training, experiments.<run> | number | >= 0, <= 1 | 0.0 | The KL penalty's coefficient |"
    assert row in docs.read_text(encoding="utf-8") and row in docs_table(WithKL)
    # the other way round: a property written into the schema by hand, no field
    hand = tmp_path / "hand.yaml"
    text = SCHEMA.read_text(encoding="utf-8")
    hand.write_text(
        text.replace("      lr:\n", "      kl_coef: {type: number}\n      lr:\n", 1), encoding="utf-8"
    )
    assert stale(RunSettings, hand, DOCS) == [hand]


def test_a_new_knob_reaches_a_runs_settings_from_its_field_alone():
    config = smoke()
    assert WithKL.of(Config.of(config), "smoke_grpo").kl_coef == 0.0  # left out: its default
    config["training"]["kl_coef"] = 0.25
    settings = WithKL.of(Config.of(config), "smoke_grpo")
    assert settings.kl_coef == 0.25 and settings.as_dict()["kl_coef"] == 0.25  # run.json records it
    config["experiments"]["smoke_grpo"]["kl_coef"] = 0.5  # the run's own
    assert WithKL.of(Config.of(config), "smoke_grpo").kl_coef == 0.5
    config["experiments"]["smoke_grpo"]["kl_coef"] = "high"
    with pytest.raises(LieError, match="key 'experiments.smoke_grpo.kl_coef': 'high' is not a number"):
        WithKL.of(Config.of(config), "smoke_grpo")
    config["experiments"]["smoke_grpo"]["kl_coef"] = None  # null: the shared value
    config["training"]["kl_coef"] = "high"
    with pytest.raises(LieError, match="key 'training.kl_coef': 'high' is not a number"):
        WithKL.of(Config.of(config), "smoke_grpo")
    Required = dataclasses.make_dataclass(
        "Required", [("kl_coef", "float", knob("The KL coefficient"))], bases=(RunSettings,), frozen=True,
        kw_only=True,
    )  # fmt: skip
    del config["training"]["kl_coef"], config["experiments"]["smoke_grpo"]["kl_coef"]
    with pytest.raises(LieError, match="key 'training.kl_coef' is missing"):
        Required.of(Config.of(config), "smoke_grpo")


def test_one_merge_gives_the_typed_settings_and_the_digests_view():
    """Shared keys, then the algorithm's, then the run's own (a null of its own hides nothing)."""
    config = smoke()
    config["experiments"]["smoke_gspo_lie_long"]["max_steps"] = None
    config["training"]["max_steps"] = 3
    typed = Config.of(config)
    values, where = merged(typed, "smoke_gspo_lie_long")
    settings = typed.run("smoke_gspo_lie_long")
    assert (values["max_steps"], where["max_steps"], settings.max_steps) == (3, "training.max_steps", 3)
    assert (where["max_response_length"], settings.max_response_length) == (
        "experiments.smoke_gspo_lie_long.max_response_length",
        64,
    )
    assert (where["loss_mode"], settings.loss_mode) == ("algorithms.gspo.loss_mode", "gspo")
    assert written_settings(typed, "smoke_gspo_lie_long") == {**values, "run": "smoke_gspo_lie_long"}
