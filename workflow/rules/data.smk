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
        "lie data {wildcards.dataset} --config {params.config} --out {output} > {log} 2>&1"


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
        corpus=lambda w, input: " ".join(f"--corpus {p}" for p in input.corpus),
    threads: 1
    resources:
        mem_mb=16000,
        runtime=120,
    container: IMAGE or None
    shell:
        "lie base-model {wildcards.model} --config {params.config} --out {output} {params.corpus} > {log} 2>&1"


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
        "workflow/scripts/gpu_slots.sh {resources.gpus} lie reflen --config {params.config} --model {input.model} --data {input.data} --out {output}"
        " --engine {params.engine} {params.thinking} > {log} 2>&1"
