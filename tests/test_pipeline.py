"""The Snakemake DAG: lint, the paper's matrix as a dry run, run selection, config errors, containers."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from small import paper_config

from lie.config import Config, load_config, read_config, selected_runs, validate_config
from lie.core.errors import LieError

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]


def snakemake(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    return subprocess.run([*SNAKEMAKE, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def job_counts(output: str) -> dict[str, int]:
    table = output.split("Job stats:", 1)[1]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.M)}


def job_inputs(output: str, rule: str) -> dict[str, list[str]]:
    """Per job of ``rule`` in a dry run's listing, keyed by its wildcards' text: its input files."""
    jobs = {}
    for block in re.findall(rf"^(?:local)?rule {rule}:\n((?:    .*\n?)+)", output, re.M):
        fields = dict(re.findall(r"^    (\w+): (.*)$", block, re.M))
        jobs[fields["wildcards"]] = fields.get("input", "").split(", ")
    return jobs


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A copy of the workflow whose outdir is a temporary folder (dry runs write the effective config)."""
    root = tmp_path_factory.mktemp("wf")
    for name in ("Snakefile", "workflow"):
        os.symlink(REPO / name, root / name)
    config = paper_config()
    config["outdir"] = str(root / "results")
    (root / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return root


# The one lint allowed, with its reason: `train` launches Ray across nodes with srun, outside any
# container (its script enters the image on each node: workflow/scripts/train_job.sh, in_image.sh)
ALLOWED_LINTS = {("train", "Specify a conda environment or container for each rule.")}


def test_lint_is_clean(workdir):
    proc = snakemake("--lint", cwd=workdir)
    out = proc.stdout + proc.stderr
    lints = set(re.findall(r"Lints for rule (\S+) \(line.*\n\s+\* ([^:]+):", out))
    assert lints == ALLOWED_LINTS, out
    assert "Lints for snakefile" not in out, out


def test_dry_run_lists_the_papers_whole_matrix(workdir):
    proc = snakemake("-n", "--cores", "4", cwd=workdir)
    assert proc.returncode == 0, proc.stderr[-3000:]
    counts = job_counts(proc.stdout)
    config = paper_config()
    runs = len(
        selected_runs(Config.of(config))
    )  # the optional sensitivity group is not in the default target
    benchmarks = len(config["evaluation"]["benchmarks"])
    evaluated = runs + len(config["evaluation"]["base_models"])
    pairs = {(e["data"], e["model"]) for e in config["experiments"].values()}
    datasets = {e["data"] for e in config["experiments"].values()} | set(config["evaluation"]["benchmarks"])
    assert counts["train"] == counts["merge"] == runs == 16
    assert counts["evaluate"] == evaluated and counts["generate"] == evaluated * benchmarks
    assert counts["reflen"] == len(pairs) and counts["data"] == len(datasets)
    assert counts["base_model"] == len(config["models"]) and counts["report"] == 1
    # the continual stage trains from its parent's merged model, every other run from its base model
    trains = job_inputs(proc.stdout, "train")
    assert len(trains) == runs
    merged, base = workdir / "results" / "models", workdir / "results" / "base"
    selected = selected_runs(Config.of(config))
    for run in selected:
        spec = config["experiments"][run]
        inputs = trains[f"run={run}"]
        started = [path for path in inputs if Path(path).parent in (merged, base)]
        expected = merged / spec["parent"] if spec.get("parent") else base / spec["model"]
        assert started == [str(expected)], (run, inputs)
    assert [r for r in selected if config["experiments"][r].get("parent")]  # the matrix has a continual stage


def test_selecting_runs_brings_their_parents(workdir):
    proc = snakemake("-n", "--cores", "4", "--config", "runs=[qwen3-4b-base_dapo_gspo_lie_12k]", cwd=workdir)
    assert proc.returncode == 0, proc.stderr[-3000:]
    counts = job_counts(proc.stdout)
    assert counts["train"] == 2 and counts["merge"] == 2
    assert counts["evaluate"] == 3  # two runs and the base model
    assert selected_runs(Config.of({**paper_config(), "runs": ["qwen3-4b-base_dapo_gspo_lie_12k"]})) == [
        "qwen3-4b-base_dapo_gspo_lie",
        "qwen3-4b-base_dapo_gspo_lie_12k",
    ]


def test_a_wrong_key_or_value_is_named(workdir):
    proc = snakemake("-n", "--config", "runs=[no_such_run]", cwd=workdir)
    assert (
        proc.returncode != 0
        and "runs names 'no_such_run', which is not in experiments" in proc.stdout + proc.stderr
    )
    config = paper_config()
    config["training"]["lr"] = "fast"
    with pytest.raises(LieError, match="key 'training.lr'"):
        validate_config(config)
    config = paper_config()
    config["training"]["learning_rate"] = 1e-6
    with pytest.raises(LieError, match="'learning_rate' was unexpected"):
        validate_config(config)
    config = paper_config()
    config["experiments"]["qwen3-4b-base_dapo_gspo"]["algorithm"] = "ppo"
    with pytest.raises(LieError, match="experiments.qwen3-4b-base_dapo_gspo.algorithm is 'ppo'"):
        validate_config(config)


def test_smoke_config_is_valid_and_small():
    load_config(REPO / "workflow" / "configs" / "smoke.yaml")  # valid
    config = read_config(REPO / "workflow" / "configs" / "smoke.yaml")
    engines = config["engines"]
    assert (engines["generate"], engines["train"]) == ("hf", "trl")
    assert engines["generate_by"] == {"smoke_grpo": "vllm"}  # one run sampled by vLLM itself (its CPU build)
    algorithms = {e["algorithm"] for e in config["experiments"].values()}
    modes = {e["lie"] for e in config["experiments"].values()}
    assert algorithms == {"grpo", "gspo"} and modes == {"on", "off"}
    assert any(e["parent"] for e in config["experiments"].values())  # the continual stage
    assert len(config["evaluation"]["budgets"]) == 2


def _apptainer_files(path: Path) -> list[str]:
    section, sources = None, []
    for line in path.read_text().splitlines():
        if line.startswith("%"):
            section = line.strip()
        elif section == "%files" and line.strip() and not line.strip().startswith("#"):
            sources.append(line.split()[0])
    return sources


def test_container_definitions_copy_files_that_exist():
    sources = _apptainer_files(REPO / "containers" / "lie-gpu.def")
    assert "envs/gpu.lock" in sources and "src" in sources
    for source in sources:
        assert (REPO / source).exists(), source
    for line in (REPO / "containers" / "Dockerfile").read_text().splitlines():
        if line.startswith("COPY"):
            for source in line.split()[1:-1]:
                assert (REPO / source).exists(), source


def test_gpu_lock_pins_the_verl_vllm_stack():
    pins = dict(
        line.strip().split("==", 1)
        for line in (REPO / "envs" / "gpu.lock").read_text().splitlines()
        if "==" in line and not line.startswith("#")
    )
    assert (pins["verl"], pins["vllm"], pins["torch"], pins["transformers"]) == (
        "0.9.1",
        "0.24.0",
        "2.11.0",
        "5.9.0",
    )
    assert "trl" not in pins and pins["math-verify"] == "0.9.0"  # trl stays out of the image
    cpu = (REPO / "envs" / "cpu.lock").read_text()
    assert "torch==2.13.0" in cpu and "vllm" not in cpu  # vLLM only in the GPU image


def test_profiles_parse_and_leave_the_site_settings_to_the_config():
    """Account and partitions are config.yaml's cluster: section (tests/test_cluster.py sees them reach
    sbatch, from the config or the environment), never a second copy in the profile."""
    slurm = yaml.safe_load((REPO / "profiles" / "slurm" / "config.yaml").read_text())
    assert slurm["executor"] == "slurm" and slurm["software-deployment-method"] == "apptainer"
    assert "--nv" in slurm["apptainer-args"] and "PYTHONPATH=$PWD/src" in slurm["apptainer-args"]
    resources = [slurm["default-resources"], *slurm["set-resources"].values()]
    assert not any({"slurm_account", "slurm_partition"} & set(r) for r in resources)
    local = yaml.safe_load((REPO / "profiles" / "local" / "config.yaml").read_text())
    assert "executor" not in local


def test_plan_counts_steps_from_the_data(tmp_path):
    import math

    from lie.stages.plan import plan, render

    config = paper_config()
    config["outdir"] = str(tmp_path)
    config["runs"] = ["qwen3-4b-base_dapo_gspo", "qwen3-4b-base_dapo_gspo_lie"]
    plans = plan(Config.of(config))
    assert [p.steps for p in plans] == [10 * (17398 // 128), 15 * (17398 // 128)]
    assert plans[1].gpu_hours == pytest.approx(
        plans[0].gpu_hours * 1.5, rel=1e-3
    )  # 203 validations, not 202.5
    assert all(p.gpus == 4 and p.rollout_tokens == p.steps * 128 * 8 * 4096 for p in plans)
    # 10 checkpoints of 4B parameters x 12 bytes kept; 48 h jobs one after another
    assert all(p.disk_gb == pytest.approx(10 * 12 * 4) for p in plans)
    assert [p.jobs for p in plans] == [math.ceil(p.gpu_hours / 4 / 48) for p in plans]
    config["training"]["walltime_min"] = 600
    assert "!" in render(plan(Config.of(config)), 8000, 0.35)  # more jobs than retries + 1


def test_plan_counts_every_run_of_the_matrix_and_each_fits_its_jobs(tmp_path):
    """Issue 31 defect 8: a run with an unknown prompt count fell out of the totals, and the Polaris and
    8B runs needed more jobs than ``training.retries + 1`` allows."""
    from lie.stages.plan import plan, render

    config = paper_config()
    config["outdir"] = str(tmp_path)  # no data built: counts come from the config alone
    plans = plan(Config.of(config))
    assert [p.run for p in plans if not p.prompts] == []
    assert [p.run for p in plans if p.jobs > p.attempts] == []
    polaris = [p for p in plans if "polaris" in p.run]
    assert polaris and all(
        p.prompts == config["datasets"]["train"]["polaris"]["expected_rows"] for p in polaris
    )
    table = render(plans, 8000, 0.35)
    total = table.split("\ntotal")[1].split("\n")[0].split()
    assert float(total[2].replace(",", "")) == pytest.approx(sum(p.gpu_hours for p in plans), abs=1)
    assert float(total[4]) == pytest.approx(sum(p.disk_gb for p in plans), abs=1)


def test_plan_keeps_every_checkpoint_under_best_val_and_prices_validation_and_dumps(tmp_path):
    """``eval_step: best_val`` (or a fixed step) keeps every save (verl prunes none within a launch), and at
    save_freq 50 and test_freq 10 every save step validates: a 4B GSPO run keeps 27 x 48 GB, not 10; the
    in-training validation (1,590 prompts every 10 steps) and the text dumps are in the plan."""
    from lie.stages.plan import plan, render, validations, verl_steps

    config = paper_config()
    config["outdir"] = str(tmp_path)
    config["runs"] = ["qwen3-4b-base_dapo_gspo", "qwen3-4b-base_dapo_gspo_lie"]
    final = plan(Config.of(config))
    config["training"]["eval_step"] = "best_val"
    best = plan(Config.of(config))
    assert [p.saves for p in best] == [27, 41] and [p.kept for p in best] == [27, 41]  # 2,025 = 40 x 50 + 25
    assert [p.disk_gb for p in best] == [pytest.approx(27 * 48), pytest.approx(41 * 48)]
    assert [p.kept for p in final] == [10, 10] and "3,264 GB for these runs with every save kept" in render(
        final, 8000, 0.35
    )
    # validation: 135 and 203 of them (every 10th step and the last), 1,590 prompts each, a share of the GPU-h
    val_rows = sum(config["datasets"]["eval"][n]["expected_rows"] for n in config["training"]["val_sets"])
    assert val_rows == 1590 and [validations(p.steps, 10) for p in final] == [135, 203]
    assert all(0.05 < p.val_gpu_hours / p.gpu_hours < 0.15 for p in final)
    config["training"]["test_freq"] = 0
    unvalidated = plan(Config.of(config))
    for with_val, without in zip(final, unvalidated):
        assert without.val_gpu_hours == 0
        assert without.gpu_hours == pytest.approx(with_val.gpu_hours - with_val.val_gpu_hours)
    # text dumps: every training sample and validation record, ~17 KB each at a 4,096-token mean
    assert 20 < final[0].dumps_gb < 40
    # verl's step arithmetic: max_steps beyond the epochs' steps stops at the epochs' end
    assert verl_steps(16, 8, 1, 4) == 2 and verl_steps(32, 8, 1, 4) == 4 and verl_steps(100, 8, 3, None) == 36


def test_plan_says_which_runs_its_total_leaves_out(tmp_path):
    from lie.stages.plan import plan, render

    config = paper_config()
    config["outdir"] = str(tmp_path)
    config["datasets"]["train"]["polaris"]["expected_rows"] = None
    table = render(plan(Config.of(config)), 8000, 0.35)
    assert "left out of the total: qwen3-4b_polaris_gspo, qwen3-4b_polaris_gspo_lie" in table


def test_plan_reads_sizes_and_counts_where_it_can_and_says_what_to_pass(tmp_path):
    """``lie plan``: a tiny model counts as 0.001 B parameters; a model whose id states no size, a bad
    ``--params`` value or ``--mfu``/``--gen-tps`` out of range are one line saying what to pass; the
    data set's file, once ``lie data`` wrote it, gives the prompt count."""
    from small import arithmetic_rows, write_parquet

    from lie.core.errors import LieError
    from lie.stages.plan import params_billions, plan, plan_selected

    config = paper_config()
    config["outdir"] = str(tmp_path)
    config["models"]["mine"] = {**config["models"]["qwen3-4b-base"], "hf_id": "org/model", "path": None}
    with pytest.raises(
        LieError, match=r"models.mine: cannot read the model size from its id; pass --params mine="
    ):
        params_billions(Config.of(config), "mine")
    assert (
        params_billions(Config.of(yaml.safe_load((REPO / "workflow/configs/smoke.yaml").read_text())), "tiny")
        == 0.001
    )
    for value in (0, "4B", True):
        with pytest.raises(LieError, match=rf"--params mine={value!r}: expected a model size in billions"):
            plan_selected(Config.of(config), "config.yaml", params=[("mine", value)])
    for mfu, tps in ((0.0, 8000), (1.5, 8000), (0.35, 0)):
        with pytest.raises(LieError, match=r"--mfu must be in \(0, 1\] and --gen-tps > 0"):
            plan_selected(Config.of(config), "config.yaml", mfu=mfu, gen_tps_4b=tps)
    config["experiments"]["mine_dapo_grpo"] = {
        **config["experiments"]["qwen3-4b-base_dapo_grpo"],
        "model": "mine",
    }
    table = plan_selected(Config.of(config), "config.yaml", runs=["mine_dapo_grpo"], params=[("mine", 8)])
    assert "mine_dapo_grpo" in table  # --params gives the size the id does not state
    del config["experiments"]["mine_dapo_grpo"]
    run = "qwen3-4b-base_dapo_gspo"
    from lie.config.layout import Layout

    data = Layout(Config.of(config)).dataset_file(config["experiments"][run]["data"])
    data.parent.mkdir(parents=True)
    write_parquet(data, arithmetic_rows(300))
    config["runs"] = [run]
    (only,) = plan(Config.of(config))
    assert only.steps == config["experiments"][run]["epochs"] * (
        300 // config["training"]["train_batch_size"]
    )
