# The CPU study of the Shallow Exploration Trap (`make study`, docs/study.md): its figures and tables,
# from the files of its runs (rollouts), evaluations (summaries, generations) and base model only.
# A config without `study:` stops when the target is asked for, with the fix in the message.
from lie.study.report import study_inputs, study_paths


rule study:
    input:
        unpack(lambda w: study_inputs(config, LAYOUT)),
    output:
        [str(p) for p in study_paths(LAYOUT)],
    log:
        f"{OUT}/logs/study.log",
    params:
        config=CONFIG,
        settings=lambda w: json.dumps({"study": config.get("study"), "reward": config["reward"]}, sort_keys=True),
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    container: IMAGE or None
    shell:
        "lie study-report --config {params.config} > {log} 2>&1"
