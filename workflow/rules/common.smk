# Configuration, its validation, and the get_* input functions of every rule.
import json
import sys
from pathlib import Path

import yaml
from snakemake.utils import validate

from lie import config as lie_config
from lie.config import identity
from lie.config import binds as container_binds
from lie.config.layout import Layout

if not workflow.overwrite_configfiles:  # no --configfile: the paper's matrix (--config still applies)


    configfile: "config.yaml"


try:  # lie's one-line message first: Snakemake's own check prints the whole schema
    lie_config.validate_workflow(config, workflow.configfiles)
except lie_config.LieError as exc:
    sys.exit(f"lie: {exc}")
validate(config, "../schemas/config.schema.yaml")
# The config typed and frozen (lie.config.typed): every rule and input function reads it by attribute.
try:
    CFG = lie_config.Config.of(config, source=" + ".join(map(str, workflow.configfiles)) or "config")
except lie_config.LieError as exc:
    sys.exit(f"lie: {exc}")

LAYOUT = Layout(CFG)
OUT = str(LAYOUT.root)
RUNS = lie_config.selected_runs(CFG)
BASE_MODELS = list(CFG.evaluation.base_models)
BENCHMARKS = list(CFG.evaluation.benchmarks)
EVALUATED = RUNS + BASE_MODELS
IMAGE = CFG.image or ""
# What every container binds besides the checkout and the hub cache (the profiles' apptainer-args and
# workflow/scripts/launch_lib.sh read it): the outdir, its real path and cluster.binds.
if IMAGE:
    try:
        container_binds.export(CFG)
    except lie_config.LieError as exc:
        sys.exit(f"lie: {exc}")


# Downloads run where Snakemake runs (a login node with network), not on compute nodes.
localrules: data, data_bare, base_model


# The configuration the `lie` commands read: this invocation's config (with --config changes) as a
# file. Written once, atomically, by an invocation that runs jobs (onstart), never while planning
# (-n, --lint, --rulegraph): a dry run with another config must not change what running jobs read.
CONFIG = str(Path(OUT) / "config.yaml")


onstart:
    lie_config.write_effective_config(CFG, CONFIG)


def _alternatives(names) -> str:
    import re

    return "|".join(re.escape(n) for n in sorted(set(names), key=len, reverse=True)) or "^$"


wildcard_constraints:
    dataset=_alternatives(CFG.datasets),
    bench=_alternatives(BENCHMARKS),
    model=_alternatives(CFG.models),
    run=_alternatives(CFG.experiments),
    key=_alternatives([*CFG.experiments, *CFG.models]),


def get_model_dir(name: str) -> str:
    """Folder of a base model: its local `path`, or where `lie base-model` puts it."""
    return str(LAYOUT.base_model(name))


def get_tiny_corpus(wildcards) -> list[str]:
    tiny = CFG.model(wildcards.model).tiny
    return [str(LAYOUT.dataset_file(name)) for name in (tiny.corpus if tiny else ())]


def get_reflen_model(wildcards) -> str:
    return get_model_dir(wildcards.model)


def get_train_inputs(wildcards) -> dict[str, str]:
    settings = CFG.run(wildcards.run)
    inputs = {
        "data": str(LAYOUT.reflen_file(settings.data, settings.model)),
        "model": str(LAYOUT.init_model(wildcards.run)),
    }
    if settings.engine == "verl":
        for name in settings.val_sets:
            inputs[f"val_{name}"] = str(LAYOUT.dataset_file(name))
    return inputs


def get_val_args(wildcards, input) -> list[str]:
    """`--val-file F` for each validation set, as words, each quoted where used (`{params.val:q}`)."""
    return [word for k, v in input.items() if k.startswith("val_") for word in ("--val-file", v)]


def thinking_flag(key: str) -> list[str]:
    """`--enable-thinking` for a base model or a run's model when its entry sets it (Qwen3-4B: off)."""
    value = CFG.enable_thinking(CFG.model_of(key))
    return [] if value is None else ["--enable-thinking", str(value).lower()]


def eval_thinking_flag(key: str) -> list[str]:
    """`--enable-thinking` at evaluation (evaluation.enable_thinking, else the model's entry); none: the template's default."""
    value = CFG.thinking_at_evaluation(CFG.model_of(key))
    return [] if value is None else ["--enable-thinking", str(value).lower()]


def get_evaluated_model(wildcards) -> str:
    return str(LAYOUT.model_for(wildcards.key))


def get_generations(wildcards) -> list[str]:
    return [str(LAYOUT.generations(wildcards.key, bench)) for bench in BENCHMARKS]


def get_run_settings(wildcards) -> str:
    """What a run learns (lie.config.identity: no execution settings, only the reward knobs it uses) and the
    checkpoint it names for evaluation: a change retrains (or, for eval_step, rewrites final.json)."""
    settings = identity.learning_settings(CFG, wildcards.run)
    eval_step = CFG.run(wildcards.run).eval_step
    return json.dumps({"learning": settings, "eval_step": eval_step}, sort_keys=True)


def train_engine(wildcards) -> str:
    return CFG.run(wildcards.run).engine


def train_resources(run: str) -> dict:
    """Slurm: nodes, GPUs per node (gres), CPUs per task (one task a node) and memory per node;
    `gpus` is the total, for a local GPU box."""
    settings = CFG.run(run)
    if settings.engine == "trl":
        return {"nodes": 1, "gres": "", "cpus": 2, "gpus": 0, "per_node": 0, "mem_mb": 2000}
    per_node = settings.n_gpus_per_node
    site = CFG.cluster
    return {
        "nodes": settings.nnodes,
        "gres": f"gpu:{per_node}",
        "cpus": site.cpus_per_gpu * per_node,  # Ray, the FSDP workers, vLLM and the graders
        "gpus": settings.gpus,
        "per_node": per_node,
        "mem_mb": site.mem_mb_per_node,
    }


def site_resources(kind: str) -> dict:
    """The sbatch settings of config.yaml's `cluster:` for a "cpu" or a "gpu" job, as the Slurm
    executor plugin's resources; a null account or partition falls back to $LIE_SLURM_ACCOUNT,
    $LIE_SLURM_CPU_PARTITION, $LIE_SLURM_GPU_PARTITION. Absent settings are left out (an empty
    constraint or QOS would reach sbatch as an empty flag)."""
    import os

    site = CFG.cluster
    partition = site.gpu_partition if kind == "gpu" else site.cpu_partition
    values = {
        "slurm_account": site.account or os.environ.get("LIE_SLURM_ACCOUNT"),
        "slurm_partition": partition or os.environ.get(f"LIE_SLURM_{kind.upper()}_PARTITION"),
        "qos": site.qos,
    }
    if kind == "gpu":
        values.update(constraint=site.constraint, slurm_extra=site.sbatch_extra)
    return {key: value for key, value in values.items() if value}


def train_env(wildcards) -> str:
    """The train job's environment, as shell assignments: the GPUs and CPUs each Ray node offers
    (workflow/scripts/ray_on_slurm.sh; the job-step plugin removes Slurm's own variables) and the
    site's NCCL settings, which Ray's workers inherit."""
    import shlex

    res = train_resources(wildcards.run)
    env = {"LIE_GPUS_PER_NODE": res["per_node"], "LIE_CPUS_PER_NODE": res["cpus"]}
    env.update({k: v for k, v in CFG.cluster.nccl.items() if v is not None})
    return " ".join(f"{key}={shlex.quote(str(value))}" for key, value in env.items())


def generate_engine(key: str | None = None) -> str:
    """The engine that samples for an evaluated run or base model: engines.generate_by, else engines.generate."""
    return CFG.engines.generate_for(key)


def on_gpu(engine: str) -> bool:
    """vLLM runs on a GPU unless engines.vllm_cpu names its CPU build."""
    return engine == "vllm" and CFG.engines.vllm_cpu is None


def lie_for(engine: str) -> list[str]:
    """The `lie` a job of `engine` runs: for vLLM's CPU build, that environment's, under its settings.
    A relative `venv` stays relative: the job's shell finds it from the working directory (the
    checkout, as it finds workflow/scripts/), so that no param holds where the checkout lies and a
    moved or cloned checkout reruns nothing (tests/test_checkout_move.py). Words: the rule quotes each."""
    cpu = CFG.engines.vllm_cpu
    if engine != "vllm" or cpu is None:
        return ["lie"]
    lie = str(Path(cpu.venv) / "bin" / "lie")
    env = [f"{k}={v}" for k, v in sorted((cpu.env or {}).items())]
    return ["env", *env, lie] if env else [lie]


def engine_args_for(engine: str) -> list[str]:
    """engines.vllm_cpu.engine_args as `--engine-arg KEY=VALUE` options of a vLLM job on the CPU (words:
    the rule quotes each, so a value is one argument, never shell code)."""
    cpu = CFG.engines.vllm_cpu
    if engine != "vllm" or cpu is None:
        return []
    return [w for k, v in sorted((cpu.engine_args or {}).items()) for w in ("--engine-arg", f"{k}={v}")]


def gpu_gres(engine: str | None = None) -> str:
    """One GPU for generation and reference lengths when vLLM generates on GPUs; none on a CPU."""
    return "gpu:1" if on_gpu(engine or CFG.engines.generate) else ""


def gpu_count(engine: str | None = None) -> int:
    """The same as a number: the local GPU profile schedules on it (--resources gpus=N)."""
    return 1 if on_gpu(engine or CFG.engines.generate) else 0


def data_prompt(wildcards) -> str:
    """The template a data set's rows are rendered with: only its own kind's."""
    return json.dumps(CFG.prompt.template(CFG.dataset(wildcards.dataset).kind))


def report_outputs() -> list[str]:
    """The report's files, as `lie report` writes them (lie.report.build.report_paths)."""
    from lie.report.build import report_paths

    return [str(p) for p in report_paths(LAYOUT)]


def report_files() -> list:
    """report_outputs(), each flagged for `snakemake --report` with the caption workflow/report/<kind>.rst."""
    from lie.report.groups import TABLES  # the results tables share one caption

    files = []
    for path in report_outputs():
        stem, suffix = Path(path).stem, Path(path).suffix
        kind = "results" if stem in TABLES else stem
        category = "Figures" if suffix == ".png" else "Tables"
        caption = f"../report/{kind}.rst"  # relative to workflow/rules/
        labels = {"file": Path(path).name}
        sub = stem if category == "Tables" else None  # a line may not start with `report(`: a keyword
        files.append(report(path, caption=caption, category=category, subcategory=sub, labels=labels))
    return files
