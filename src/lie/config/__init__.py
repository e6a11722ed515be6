"""The pipeline's configuration, one place for every setting (``config.yaml`` and files of its shape).

- :mod:`lie.config.load`: reading, the whole-config check (schema ``schema.yaml`` + cross-references),
  re-exported here; ``load_config`` returns the typed, frozen ``Config``;
- :mod:`lie.config.typed`: ``Config``, the whole config by attribute (entries by name, a run's settings);
- :mod:`lie.config.settings`: a run's settings, typed and frozen (``config.run(name)``), built once, each
  knob of ``training:`` and ``algorithms:`` a field declared once (:mod:`lie.config.knob`), the schema's
  part for it and the docs' table derived from it (:mod:`lie.config.knob_files`);
- :mod:`lie.config.sections`, :mod:`lie.config.datasets`, :mod:`lie.config.supervised`: the typed views of
  sections and entries (evaluation, engines; a data set; a tiny model's supervised stage);
- :mod:`lie.config.layout`: where every stage reads and writes under ``outdir``;
- :mod:`lie.config.identity`: what a run learns from (its settings digest, Snakemake's params);
- :mod:`lie.config.yamlio`: YAML reading with unique keys and line numbers.
"""

from lie.config.load import (
    SCHEMA,
    grading_limits,
    load_config,
    read_config,
    validate_config,
    validate_workflow,
    write_effective_config,
)
from lie.config.settings import LIE_MODES, RunSettings, reward_settings, selected_runs, train_engine
from lie.config.typed import Config
from lie.core.errors import LieError

__all__ = [
    "LIE_MODES",
    "SCHEMA",
    "Config",
    "LieError",
    "RunSettings",
    "grading_limits",
    "load_config",
    "read_config",
    "reward_settings",
    "selected_runs",
    "train_engine",
    "validate_config",
    "validate_workflow",
    "write_effective_config",
]
