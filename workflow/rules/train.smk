# Training (verl on GPUs through Ray, or TRL on a CPU), the continual stage, and merging.
from lie.stages.snakemake import planning_notes


# Said once, on the host that plans (lie.stages.snakemake.planning_notes): the Slurm site settings
# left unset, and, in a dry run without apptainer on PATH, that the plan went without it.
planning_notes(workflow, CFG, IMAGE)


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
    retries: CFG.retries
    resources:
        nodes=lambda w: train_resources(w.run)["nodes"],
        gres=lambda w: train_resources(w.run)["gres"],
        gpus=lambda w: train_resources(w.run)["gpus"],
        mem_mb=lambda w: train_resources(w.run)["mem_mb"],
        runtime=lambda w: CFG.run(w.run).walltime_min,
        # Present but false, on purpose: the job-step plugin (0.6.1) runs a job that has an `mpi`
        # resource as it is, while every other job goes through `srun -n1 --nodes=N --gpus=<total>`,
        # one task that Slurm cannot place on several nodes; the Slurm plugin asks for MPI tasks
        # only when `mpi` is true. train_job.sh starts its own steps, one per node.
        mpi="",
        attempt_no=lambda w, attempt: attempt,
        train_env=train_env,
        **site_resources("gpu"),
    # A shell rule without a container: verl starts its Ray processes inside the image itself
    # (workflow/scripts/train_job.sh), spanning several nodes through srun, which a job inside a
    # container could not call. TRL runs in the environment Snakemake runs in. A dry run prints this
    # command as each job would run it.
    # Snakemake deletes {log} before each attempt: every attempt is also appended to
    # <run>.attempts.log beside it, which it does not manage (train_job.sh heads each with its
    # number, time, host and Slurm job), so that a failed attempt's output survives its retry.
    # The environment (train_env: GPUs and CPUs of each Ray node, cluster.nccl) is a string resource,
    # not a param: a changed NCCL setting must not rerun a finished run; the Slurm plugin passes no
    # string resource on, the job inside Slurm computes it again from the same config.
    shell:
        "{resources.train_env} LIE_ATTEMPT={resources.attempt_no:q} LIE_IMAGE={params.image:q}"
        " workflow/scripts/train_job.sh {params.engine:q} {wildcards.run:q} --config {params.config:q}"
        " --train-file {input.data:q} --model {input.model:q} {params.val:q}"
        " 2>&1 | tee -a \"$(dirname {log:q})/\"{wildcards.run:q}.attempts.log > {log:q}"

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
        **site_resources("cpu"),
    container: IMAGE or None
    shell:
        "lie merge {wildcards.run:q} --config {params.config:q} --out {output:q} > {log:q} 2>&1"
