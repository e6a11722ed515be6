# Configuration, its validation, and the get_* input functions of every rule.
import json
import sys
from pathlib import Path

import yaml
from snakemake.utils import validate

from lie import config as lie_config
from lie.layout import Layout

if not workflow.overwrite_configfiles:  # no --configfile: the paper's matrix (--config still applies)


    configfile: "config.yaml"


try:  # lie's one-line message first: Snakemake's own check prints the whole schema
    lie_config.validate_workflow(config, workflow.configfiles)
except lie_config.LieError as exc:
    sys.exit(f"lie: {exc}")
validate(config, "../schemas/config.schema.yaml")

LAYOUT = Layout(config)
OUT = str(LAYOUT.root)
RUNS = lie_config.selected_runs(config)
BASE_MODELS = list(config["evaluation"]["base_models"])
BENCHMARKS = list(config["evaluation"]["benchmarks"])
EVALUATED = RUNS + BASE_MODELS
IMAGE = config.get("image") or ""


def _effective_config() -> str:
    """The configuration the `lie` commands read: this run's config (with --config changes) as a file.

    Written only when its content changes, so that reruns and remote jobs leave it alone.
    """
    path = Path(OUT) / "config.yaml"
    text = yaml.safe_dump(config, sort_keys=False)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".yaml.partial")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    return str(path)


CONFIG = _effective_config()


def _alternatives(names) -> str:
    import re

    return "|".join(re.escape(n) for n in sorted(set(names), key=len, reverse=True)) or "^$"


wildcard_constraints:
    dataset=_alternatives([*config["datasets"]["train"], *config["datasets"]["eval"]]),
    bench=_alternatives(BENCHMARKS),
    model=_alternatives(config["models"]),
    run=_alternatives(config["experiments"]),
    key=_alternatives([*config["experiments"], *config["models"]]),


def get_model_dir(name: str) -> str:
    """Folder of a base model: its local `path`, or where `lie base-model` puts it."""
    return str(LAYOUT.base_model(name))


def get_tiny_corpus(wildcards) -> list[str]:
    tiny = config["models"][wildcards.model].get("tiny") or {}
    return [str(LAYOUT.dataset_file(name)) for name in tiny.get("corpus", [])]


def get_reflen_model(wildcards) -> str:
    return get_model_dir(wildcards.model)


def get_train_inputs(wildcards) -> dict[str, str]:
    spec = config["experiments"][wildcards.run]
    inputs = {
        "data": str(LAYOUT.reflen_file(spec["data"], spec["model"])),
        "model": str(LAYOUT.init_model(wildcards.run)),
    }
    if config["engines"]["train"] == "verl":
        for name in config["training"]["val_sets"]:
            inputs[f"val_{name}"] = str(LAYOUT.dataset_file(name))
    return inputs


def get_val_args(wildcards, input) -> str:
    return " ".join(f"--val-file {v}" for k, v in input.items() if k.startswith("val_"))


def thinking_flag(key: str) -> str:
    """`--enable-thinking` for a base model or a run's model when its entry sets it (Qwen3-4B: off)."""
    model = config["experiments"][key]["model"] if key in config["experiments"] else key
    value = config["models"][model].get("enable_thinking")
    return "" if value is None else f"--enable-thinking {str(value).lower()}"


def get_evaluated_model(wildcards) -> str:
    return str(LAYOUT.model_for(wildcards.key))


def get_generations(wildcards) -> list[str]:
    return [str(LAYOUT.generations(wildcards.key, bench)) for bench in BENCHMARKS]


def get_run_settings(wildcards) -> str:
    """A run's resolved settings and reward knobs: when they change, the run is redone."""
    settings = lie_config.run_settings(config, wildcards.run)
    reward = lie_config.reward_settings(config, wildcards.run)
    return json.dumps({"settings": settings, "reward": reward}, sort_keys=True)


def train_resources(run: str) -> dict:
    settings = lie_config.run_settings(config, run)
    if config["engines"]["train"] == "trl":
        return {"nodes": 1, "gres": "", "cpus": 2}
    return {
        "nodes": int(settings["nnodes"]),
        "gres": f"gpu:{int(settings['n_gpus_per_node'])}",
        "cpus": 8 * int(settings["n_gpus_per_node"]),
    }


def gpu_gres() -> str:
    """One GPU for generation and reference lengths when vLLM generates; none on a CPU."""
    return "gpu:1" if config["engines"]["generate"] == "vllm" else ""


def report_outputs() -> list[str]:
    """The report's files, as `lie report` writes them (lie.report.build.report_paths)."""
    from lie.report.build import report_paths

    return [str(p) for p in report_paths(LAYOUT)]
