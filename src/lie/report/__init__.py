"""The report: tables and figures beside the paper's numbers, from the files under ``outdir``.

``lie report --config CONFIG`` calls :func:`lie.report.build.build_report` through its stage
(``lie.stages.report``).
"""
