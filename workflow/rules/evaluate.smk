# Generation on every benchmark (runs and base models), and grading at every budget. The models of
# evaluation.bare_questions (OctoThinker, as the authors did) get the bare-question files.

from lie.config.layout import eval_data_file
from lie.stages.evaluate import configured_choice_grading


rule data_bare:
    output:
        f"{OUT}/data/bare/{{bench}}.parquet",
    log:
        f"{OUT}/logs/data/bare/{{bench}}.log",
    params:
        config=CONFIG,
        entry=lambda w: json.dumps(identity.written_entry(CFG, "datasets", w.bench), sort_keys=True),
    threads: 1
    resources:
        mem_mb=16000,
        runtime=120,
    container: IMAGE or None
    shell:
        "lie data {wildcards.bench:q} --config {params.config:q} --bare --out {output:q} > {log:q} 2>&1"


rule generate:
    input:
        model=get_evaluated_model,
        data=lambda w: str(eval_data_file(CFG, w.key, w.bench)),
    output:
        gen=f"{OUT}/generations/{{key}}/{{bench}}.jsonl",
        manifest=f"{OUT}/generations/{{key}}/{{bench}}.manifest.json",  # engine and settings
    log:
        f"{OUT}/logs/generate/{{key}}/{{bench}}.log",
    params:
        config=CONFIG,
        settings=lambda w: json.dumps(
            identity.written_part(CFG, "evaluation", only=("max_tokens", "temperature", "top_p", "seed")),
            sort_keys=True,
        ),
        engine=lambda w: generate_engine(w.key),
        lie=lambda w: lie_for(generate_engine(w.key)),
        engine_args=lambda w: engine_args_for(generate_engine(w.key)),
        limit=lambda w: ["--limit", str(CFG.evaluation.limit)] if CFG.evaluation.limit else [],
        thinking=lambda w: eval_thinking_flag(w.key),
    threads: 2
    resources:
        mem_mb=64000,
        runtime=12 * 60,
        gres=lambda w: gpu_gres(generate_engine(w.key)),
        **site_resources("gpu"),
        gpus=lambda w: gpu_count(generate_engine(w.key)),
    container: IMAGE or None
    shell:
        "workflow/scripts/gpu_slots.sh {resources.gpus:q} {params.lie:q} generate {wildcards.bench:q} --config {params.config:q}"
        " --model {input.model:q} --data {input.data:q} --out {output.gen:q} --engine {params.engine:q}"
        " {params.engine_args:q} {params.limit:q} {params.thinking:q} > {log:q} 2>&1"


rule evaluate:
    input:
        gens=get_generations,
        data=lambda w: [str(eval_data_file(CFG, w.key, bench)) for bench in BENCHMARKS],
        model=get_evaluated_model,
    output:
        scores=f"{OUT}/scores/{{key}}/scores.jsonl",
        summary=f"{OUT}/scores/{{key}}/summary.json",
    log:
        f"{OUT}/logs/evaluate/{{key}}.log",
    params:
        config=CONFIG,
        gens=lambda w, input: [word for g in input.gens for word in ("--gen", g)],
        data=lambda w, input: [word for d in input.data for word in ("--data", d)],
        settings=lambda w: json.dumps(
            identity.written_part(CFG, "evaluation", only=("budgets", "in_domain", "out_of_domain")),
            sort_keys=True,
        ),
        # the grading: a change regrades the same generations (never regenerates)
        grading=lambda w: json.dumps(
            {
                "choice_grading": configured_choice_grading(CFG),
                "grade_timeout_s": identity.written_part(CFG, "evaluation", "grade_timeout_s"),
            },
            sort_keys=True,
        ),
    threads: 2
    resources:
        mem_mb=16000,
        runtime=6 * 60,
        **site_resources("cpu"),
    container: IMAGE or None
    shell:
        "lie evaluate --config {params.config:q} {params.gens:q} {params.data:q} --tokenizer {input.model:q}"
        " --out-scores {output.scores:q} --out-summary {output.summary:q} --no-progress > {log:q} 2>&1"
