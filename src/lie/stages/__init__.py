"""The logic of each pipeline step, one module each (a Snakemake rule calls one through its ``lie``
subcommand, a command imports nothing else): data sets (``data``), base models (``base_model``,
``tiny``, ``sft``), reference lengths (``reflen``), the one sampling loop (``sample_shards``) under
``generate``, grading at every budget (``evaluate``), training (``train``), merging (``merge``), the
GPU-hour estimate (``plan``), a node's checks (``preflight``), behaviours (``behaviours``, ``judge``),
the reward and the grades of a file's lines (``score``, ``grade``), the report (``report``), and the config
files checked before Snakemake (``snakemake``). The CPU study's stages are its own (``lie.study.stages``)."""
