"""Data sets in verl's row format (SPEC section 3): ``lie data`` and the reference lengths.

- :mod:`lie.config.datasets` (in the config): one ``datasets:`` entry of ``config.yaml``, checked key by key;
- :mod:`lie.stages.data.sources`: where the files come from (hub at a pinned revision, a URL with a
  git-blob check, or a local file/mirror) and which files hold the config and split;
- :mod:`lie.stages.data.tables`: filter, dedup, seeded draw (the files read by :mod:`lie.formats.sources`);
- :mod:`lie.stages.data.adapters`: one adapter per family of data sets (question, answer, options);
- :mod:`lie.formats.rows`: verl rows, their parquet schema and metadata, atomic writing;
- :mod:`lie.stages.data.build`: the whole ``lie data`` step for one data set.
"""
