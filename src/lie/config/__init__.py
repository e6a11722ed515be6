"""The pipeline's configuration, one place for every setting (``config.yaml`` and files of its shape).

- :mod:`lie.config.load`: reading, the whole-config check (schema ``schema.yaml`` + cross-references),
  and the views stages need (entries by name, the runs to build), re-exported here;
- :mod:`lie.config.settings`: a run's settings, typed and frozen (``RunSettings.of``), built once;
- :mod:`lie.config.layout`: where every stage reads and writes under ``outdir``;
- :mod:`lie.config.identity`: what a run learns from (its settings digest, Snakemake's params);
- :mod:`lie.config.yamlio`: YAML reading with unique keys and line numbers.
"""

from lie.config.load import (
    LIE_MODES,
    SCHEMA,
    dataset_entry,
    experiment,
    grading_limits,
    load_config,
    model_entry,
    outdir,
    selected_runs,
    validate_config,
    validate_workflow,
    write_effective_config,
)
from lie.config.settings import RunSettings, reward_settings, train_engine
from lie.core.errors import LieError

__all__ = [
    "LIE_MODES",
    "SCHEMA",
    "LieError",
    "RunSettings",
    "dataset_entry",
    "experiment",
    "grading_limits",
    "load_config",
    "model_entry",
    "outdir",
    "reward_settings",
    "selected_runs",
    "train_engine",
    "validate_config",
    "validate_workflow",
    "write_effective_config",
]
