# Training (verl on GPUs through Ray, or TRL on a CPU), the continual stage, and merging.


rule train:
    input:
        unpack(get_train_inputs),
    output:
        f"{OUT}/runs/{{run}}/final.json",
    log:
        f"{OUT}/logs/train/{{run}}.log",
    params:
        config=CONFIG,
        settings=get_run_settings,
        val=get_val_args,
        engine=train_engine,
        image=IMAGE,
    threads: lambda w: train_resources(w.run)["cpus"]
    # A job past its walltime resumes in the next attempt from its last checkpoint (Slurm does not
    # requeue a TIMEOUT): training.walltime_min under the partition's limit, training.retries attempts.
    retries: config["training"]["retries"]
    resources:
        nodes=lambda w: train_resources(w.run)["nodes"],
        gres=lambda w: train_resources(w.run)["gres"],
        gpus=lambda w: train_resources(w.run)["gpus"],
        mem_mb=lambda w: 2000 if train_engine(w) == "trl" else 480000,
        runtime=config["training"]["walltime_min"],
    # A `run:` block, not containerised by Snakemake: verl starts its Ray processes inside the image
    # itself (workflow/scripts/train_job.sh), spanning several nodes through srun, which a job
    # inside a container could not call. TRL runs in the environment Snakemake runs in.
    run:
        shell(
            "LIE_IMAGE={params.image} workflow/scripts/train_job.sh {params.engine} {wildcards.run}"
            " --config {params.config} --train-file {input.data} --model {input.model} {params.val} > {log} 2>&1"
        )


rule merge:
    input:
        f"{OUT}/runs/{{run}}/final.json",
    output:
        directory(f"{OUT}/models/{{run}}"),
    log:
        f"{OUT}/logs/merge/{{run}}.log",
    params:
        config=CONFIG,
    threads: 2
    resources:
        mem_mb=64000,
        runtime=120,
    container: IMAGE or None
    shell:
        "lie merge {wildcards.run} --config {params.config} --out {output} > {log} 2>&1"
