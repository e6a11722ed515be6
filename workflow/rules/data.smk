# Data sets, base models and per-prompt reference lengths.


rule data:
    output:
        f"{OUT}/data/{{dataset}}.parquet",
    log:
        f"{OUT}/logs/data/{{dataset}}.log",
    params:
        config=CONFIG,
        entry=lambda w: json.dumps(identity.written_entry(CFG, "datasets", w.dataset), sort_keys=True),
        prompt=data_prompt,
    threads: 1
    resources:
        mem_mb=16000,
        runtime=120,
    container: IMAGE or None
    shell:
        "lie data {wildcards.dataset:q} --config {params.config:q} --out {output:q} > {log:q} 2>&1"


rule base_model:
    input:
        corpus=get_tiny_corpus,
    output:
        directory(f"{OUT}/base/{{model}}"),
    log:
        f"{OUT}/logs/base/{{model}}.log",
    params:
        config=CONFIG,
        entry=lambda w: json.dumps(identity.written_entry(CFG, "models", w.model), sort_keys=True),
        corpus=lambda w, input: [word for p in input.corpus for word in ("--corpus", p)],
    threads: 1
    resources:
        mem_mb=16000,
        runtime=120,
    container: IMAGE or None
    shell:
        "lie base-model {wildcards.model:q} --config {params.config:q} --out {output:q} {params.corpus:q} > {log:q} 2>&1"


rule reflen:
    input:
        data=f"{OUT}/data/{{dataset}}.parquet",
        model=get_reflen_model,
    output:
        f"{OUT}/data/{{dataset}}.{{model}}.reflen.parquet",
    log:
        f"{OUT}/logs/reflen/{{dataset}}.{{model}}.log",
    params:
        config=CONFIG,
        settings=lambda w: json.dumps(identity.reflen_settings(CFG), sort_keys=True),
        engine=CFG.engines.generate,
        thinking=lambda w: thinking_flag(w.model),
    threads: 2
    resources:
        mem_mb=64000,
        runtime=24 * 60,
        gres=gpu_gres(),
        **site_resources("gpu"),
        gpus=gpu_count(),
    container: IMAGE or None
    shell:
        "workflow/scripts/gpu_slots.sh {resources.gpus:q} lie reflen --config {params.config:q} --model {input.model:q}"
        " --data {input.data:q} --out {output:q} --engine {params.engine:q} {params.thinking:q} > {log:q} 2>&1"
