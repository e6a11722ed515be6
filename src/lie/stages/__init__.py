"""The logic of each pipeline step, one module each (a Snakemake rule calls one through its ``lie``
subcommand): data sets (``data``), base models (``base_model``, ``tiny``, ``sft``), reference
lengths (``reflen``), the one sampling loop (``sampling``) under ``generate``, grading at every
budget (``evaluate``), training (``train``), merging (``merge``), the compute plan (``plan``)."""
