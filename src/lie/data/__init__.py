"""Data sets in verl's row format (SPEC section 3): ``lie data`` and the reference lengths.

- :mod:`lie.data.spec`: one ``datasets:`` entry of ``config.yaml``, checked key by key;
- :mod:`lie.data.sources`: where the files come from (hub at a pinned revision, a URL with a
  git-blob check, or a local file/mirror) and which files hold the config and split;
- :mod:`lie.data.tables`: reading only the needed columns, filter, dedup, seeded draw;
- :mod:`lie.data.formats`: one adapter per family of data sets (question, answer, options);
- :mod:`lie.data.rows`: verl rows, their parquet schema and metadata, atomic writing;
- :mod:`lie.data.build`: the whole ``lie data`` step for one data set.
"""
