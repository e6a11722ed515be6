# The CPU study of the Shallow Exploration Trap (`make study`, docs/study.md; its registrations in docs/study/): the
# supervised models probed as RL samples them and gated before any RL run (study_gates), per-response
# columns of every evaluation (depth needed and reached, n-gram states), and the report (study), all
# from files. A config without `study:` stops when a target is asked for, with the fix in the message.
# The study's code is src/lie/study/ (apart from the reproduction: docs/architecture.md); this is the one
# Snakemake file that imports it, and it imports only lie.study.paths and numerics (light: every plan reads them).
import os

from lie.study import numerics as study_numerics
from lie.study.paths import StudyPaths, gate_inputs, study_inputs, study_paths

STUDY = StudyPaths(LAYOUT)
STUDY_BENCH = str(identity.written_part(CFG, "study", "bench") or "")
# A study's jobs (its supervised models, probes, runs) compute the same bits on any x86-64 CPU with AVX2:
# torch's, MKL's and oneDNN's kernels and the thread count fixed in the environment every job inherits
# (lie.study.numerics), whatever the caller's environment held.
if identity.written_part(CFG, "study") is not None:
    study_numerics.pin(os.environ)


rule study_probe:
    # probe/: sampled as the rollouts sample; probe-forced/: the third registration's forced-depth probe
    input:
        model=lambda w: get_model_dir(w.model),
        data=lambda w: str(LAYOUT.dataset_file(STUDY_BENCH)),
    output:
        gen=f"{OUT}/{{probe}}/{{model}}/generations.jsonl",
        scores=f"{OUT}/{{probe}}/{{model}}/scores.jsonl",
        summary=f"{OUT}/{{probe}}/{{model}}/summary.json",
        responses=f"{OUT}/{{probe}}/{{model}}/responses.jsonl",
    wildcard_constraints:
        probe="probe|probe-forced",
    log:
        f"{OUT}/logs/study/{{probe}}/{{model}}.log",
    params:
        config=CONFIG,
        forced=lambda w: ["--forced"] if w.probe == "probe-forced" else [],
        # what the probe reads, and no more: make study-full (more runs, more base models) keeps the probes
        settings=lambda w: json.dumps(
            {
                "probe": identity.written_part(CFG, "study", "probe"),
                **({"forced": identity.written_part(CFG, "study", "third", "forced_probe")} if w.probe == "probe-forced" else {}),
                "bench": STUDY_BENCH,
                "training": identity.written_part(CFG, "training", only=("temperature", "top_p", "max_response_length")),
                "evaluation": identity.written_part(CFG, "evaluation", leave=("base_models",)),
            },
            sort_keys=True,
        ),
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
        **site_resources("cpu"),
    container: IMAGE or None
    shell:
        "(lie study-probe --config {params.config:q} --model {input.model:q} --data {input.data:q} --out {output.gen:q}"
        " --no-progress {params.forced:q}"
        " && lie evaluate --config {params.config:q} --gen {output.gen:q} --tokenizer {input.model:q}"
        " --out-scores {output.scores:q} --out-summary {output.summary:q} --no-progress"
        " && lie study-responses --config {params.config:q} --gen {output.gen:q} --scores {output.scores:q}"
        " --data {input.data:q} --tokenizer {input.model:q} --out {output.responses:q}) > {log:q} 2>&1"


rule study_responses:
    input:
        gen=lambda w: str(LAYOUT.generations(w.key, STUDY_BENCH)),
        scores=f"{OUT}/scores/{{key}}/scores.jsonl",
        data=lambda w: str(LAYOUT.dataset_file(STUDY_BENCH)),
        model=get_evaluated_model,
    output:
        f"{OUT}/responses/{{key}}.jsonl",
    log:
        f"{OUT}/logs/study/responses/{{key}}.log",
    params:
        config=CONFIG,
        reward=lambda w: json.dumps(identity.written_part(CFG, "reward"), sort_keys=True),
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
        **site_resources("cpu"),
    container: IMAGE or None
    shell:
        "lie study-responses --config {params.config:q} --gen {input.gen:q} --scores {input.scores:q}"
        " --data {input.data:q} --tokenizer {input.model:q} --out {output:q} > {log:q} 2>&1"


rule study_gates:
    input:
        lambda w: gate_inputs(CFG, LAYOUT),
    output:
        [str(p) for p in STUDY.gates],
    log:
        f"{OUT}/logs/study/gates.log",
    params:
        config=CONFIG,
        settings=lambda w: json.dumps({"study": identity.written_part(CFG, "study"), "models": identity.written_part(CFG, "models")}, sort_keys=True),
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
        **site_resources("cpu"),
    container: IMAGE or None
    shell:
        "lie study-gates --config {params.config:q} > {log:q} 2>&1"


rule study:
    input:
        unpack(lambda w: study_inputs(CFG, LAYOUT)),
    output:
        [str(p) for p in study_paths(LAYOUT)],
    log:
        f"{OUT}/logs/study.log",
    params:
        config=CONFIG,
        settings=lambda w: json.dumps({"study": identity.written_part(CFG, "study"), "reward": identity.written_part(CFG, "reward")}, sort_keys=True),
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
        **site_resources("cpu"),
    container: IMAGE or None
    shell:
        "lie study-report --config {params.config:q} > {log:q} 2>&1"
