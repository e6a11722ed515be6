# Tables and figures from files only: scores, per-step metrics and rollouts of every run.
# `snakemake --report` (make report, for the smoke run) gathers them into one HTML page, each with the
# caption of workflow/report/<kind>.rst (the kind: a result table, or the file's own name): the rule's
# outputs are report_files(), every file of lie.report.build.report_paths flagged with report(), under
# the category Tables (one subcategory per table) or Figures. A table's .html is read in the page (the
# report shows an HTML result in a frame); its .md, .csv and .tex are downloads there.

report: "../report/workflow.rst"


rule report:
    input:
        summaries=expand(f"{OUT}/scores/{{key}}/summary.json", key=EVALUATED),
        runs=expand(f"{OUT}/runs/{{run}}/final.json", run=RUNS),
        scores=expand(f"{OUT}/scores/{{key}}/scores.jsonl", key=EVALUATED),
        generations=expand(f"{OUT}/generations/{{key}}/{{bench}}.jsonl", key=EVALUATED, bench=BENCHMARKS),
    output:
        report_files(),
    log:
        f"{OUT}/logs/report.log",
    params:
        config=CONFIG,
    threads: 1
    resources:
        mem_mb=16000,
        runtime=60,
        **site_resources("cpu"),
    container: IMAGE or None
    shell:
        "lie report --config {params.config:q} > {log:q} 2>&1"
