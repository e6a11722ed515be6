"""The cluster path as Slurm and a GPU box see it: what the executor plugin hands to `sbatch`, the
local GPU profile's slots, the image's pins and self-test, the driver check."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from small import paper_config, site_file_of_the_docs
from standins import APPTAINER_EXEC, finish, start, write_tools

from lie.core.errors import LieError

REPO = Path(__file__).resolve().parents[1]
RUN = "qwen3-4b-base_dapo_gspo_lie"

# Stand-ins for the Slurm client tools: sbatch records the arguments the executor plugin sends
# (shlex-quoted, one call a line) and answers a job id; the job is then reported failed at once,
# so that Snakemake stops after the submission.
FAKES = {
    "sbatch": 'python3 -c \'import shlex, sys; print(shlex.join(sys.argv[1:]))\' "$@" >> "$SBATCH_LOG"; echo 4242',
    "sacct": 'echo "4242|FAILED"',
    "squeue": "exit 0",
    "sinfo": "exit 0",
    "sacctmgr": 'printf "acc\\nproj7\\n"',
    "scontrol": "exit 0",
    "apptainer": 'echo "apptainer version 1.3.4"',
}


def _fake_slurm(tmp_path: Path) -> Path:
    return write_tools(tmp_path / "bin", FAKES)


def _start_slurm_profile(
    tmp_path: Path, missing: tuple[str, ...] = (), cluster: dict | None = None, **training
) -> subprocess.Popen:
    """Snakemake with profiles/slurm and stand-in Slurm tools, asked for the GSPO+LIE run's final.json,
    with every input of its train job present (but ``missing``); ``cluster`` changes config.yaml's
    site settings. Started, not waited for (tests/standins.py's start)."""
    bin_dir = _fake_slurm(tmp_path)
    for name in ("Snakefile", "workflow", "profiles"):
        os.symlink(REPO / name, tmp_path / name)
    config = paper_config()
    config["outdir"] = str(tmp_path / "out")
    config["runs"] = [RUN]
    config["training"].update({"retries": 0, **training})
    config["cluster"].update(cluster or {})
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    out = tmp_path / "out"
    (out / "base" / "qwen3-4b-base").mkdir(parents=True)
    (out / "data").mkdir()
    (out / "base" / "qwen3-4b-base" / "config.json").write_text("{}")
    for name in ["dapo.qwen3-4b-base.reflen", *config["training"]["val_sets"]]:
        if name not in missing:
            (out / "data" / f"{name}.parquet").write_text("x")
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{Path(sys.executable).parent}:{os.environ['PATH']}",
        "SBATCH_LOG": str(tmp_path / "sbatch.log"),
        "LIE_SLURM_ACCOUNT": "acc",
        "LIE_SLURM_CPU_PARTITION": "cpu",
        "LIE_SLURM_GPU_PARTITION": "gpu",
    }
    cmd = [sys.executable, "-m", "snakemake", "--profile", "profiles/slurm", "--configfile", "c.yaml",
           "--rerun-triggers", "mtime", "--latency-wait", "1", "--slurm-init-seconds-before-status-checks", "1",
           "--seconds-between-status-checks", "1", str(out / "runs" / RUN / "final.json")]  # fmt: skip
    return start(cmd, tmp_path, cwd=tmp_path, env=env)


# The Slurm profile's runs the tests below read: each spends most of its time waiting on Snakemake's
# status checks and shutdown, so all of them run at once, before the first test that reads one.
SLURM_RUNS = {
    "two_nodes": {"nnodes": 2},
    "site": {"nnodes": 2, "cluster": {"account": "proj7", "gpu_partition": "h100", "constraint": "ib&h100",
             "qos": "long", "sbatch_extra": "--exclusive --signal=B:USR1@300", "mem_mb_per_node": 200000,
             "cpus_per_gpu": 6}},
    # one retry: every failed attempt makes the executor plugin wait 10 s longer before its next status
    # check (snakemake-executor-plugin-slurm 2.8.0, __init__.py ~l. 1612), and its shutdown waits as long
    "retried": {"walltime_min": 600, "retries": 1},
    "data_missing": {"missing": ("math500",)},
}  # fmt: skip


@pytest.fixture(scope="module")
def slurm_runs(tmp_path_factory) -> dict[str, SimpleNamespace]:
    """Each of SLURM_RUNS, finished: its folder, exit status, output and sbatch calls."""
    folders = {name: tmp_path_factory.mktemp(name) for name in SLURM_RUNS}
    procs = {name: _start_slurm_profile(folders[name], **kwargs) for name, kwargs in SLURM_RUNS.items()}
    runs = {}
    for name, proc in procs.items():
        folder = folders[name]
        returncode, output = finish(proc, folder)
        log = folder / "sbatch.log"
        submitted = log.read_text() if log.exists() else ""
        runs[name] = SimpleNamespace(folder=folder, returncode=returncode, output=output, submitted=submitted)
    return runs


def _submissions(run: SimpleNamespace) -> list[list[str]]:
    """The sbatch arguments of each attempt of the train job."""
    assert run.submitted, run.output[-4000:]
    return [shlex.split(call) for call in run.submitted.splitlines()]


def _flag(args: list[str], name: str) -> str | None:
    for i, arg in enumerate(args):
        if arg == name:
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def test_the_train_job_gets_its_nodes_gpus_cpus_walltime_and_partition(slurm_runs):
    (args,) = _submissions(slurm_runs["two_nodes"])
    assert _flag(args, "--nodes") == "2"
    assert _flag(args, "--gres") == "gpu:4"  # per node
    assert _flag(args, "--cpus-per-task") == "32"  # 8 per GPU: Ray, FSDP, vLLM and the graders
    assert _flag(args, "-t") == "2880"  # training.walltime_min, under a partition's limit
    assert (_flag(args, "-A"), _flag(args, "-p")) == ("acc", "gpu")
    assert _flag(args, "--mem") == "480000"  # cluster.mem_mb_per_node
    assert "--requeue" in args
    # one task a node (Slurm's default for --nodes without --ntasks): train_job.sh starts the steps
    assert not any(a.startswith(("--ntasks", "--ntasks-per-gpu", "--ntasks-per-node")) for a in args)
    assert _flag(args, "-C") is None and _flag(args, "--qos") is None


def test_the_site_settings_of_the_config_reach_sbatch(slurm_runs):
    (args,) = _submissions(slurm_runs["site"])
    assert (_flag(args, "-A"), _flag(args, "-p")) == ("proj7", "h100")  # the config wins over the environment
    assert (_flag(args, "-C"), _flag(args, "--qos")) == ("ib&h100", "long")
    assert "--exclusive" in args and "--signal=B:USR1@300" in args
    assert (_flag(args, "--mem"), _flag(args, "--cpus-per-task")) == ("200000", "24")


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("mem_mb_per_node", "480G", "key 'cluster.mem_mb_per_node': '480G' is not of type 'integer'"),
        ("gpu_partition", "gpu h100", "key 'cluster.gpu_partition': 'gpu h100' does not match"),
        ("nccl", {"IB_HCA": "mlx5"}, "key 'cluster.nccl': 'IB_HCA' does not match any of the regexes"),
    ],
)
def test_a_bad_site_setting_is_one_line_naming_the_key(tmp_path, key, value, message):
    config = paper_config()
    config["cluster"][key] = value
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--configfile", str(tmp_path / "c.yaml")],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode != 0
    (line,) = [line for line in proc.stderr.splitlines() if line.startswith("lie: ")]
    assert message in line


def test_a_failed_or_timed_out_train_job_is_submitted_again_as_configured(slurm_runs):
    """Slurm does not requeue a TIMEOUT: training.retries more attempts, each resuming from its checkpoint."""
    attempts = _submissions(slurm_runs["retried"])
    assert [_flag(a, "-t") for a in attempts] == ["600"] * 2  # the other runs: retries 0, one attempt
    assert [next(w for w in a if w.startswith("--wrap")).count("--attempt " + str(i + 1)) for i, a in
            enumerate(attempts)] == [1, 1]  # fmt: skip


def test_the_slurm_profile_leaves_cpus_to_the_rules_and_binds_the_hub_cache():
    profile = yaml.safe_load((REPO / "profiles/slurm/config.yaml").read_text())
    assert "cpus_per_task" not in profile["default-resources"]
    assert "--bind ${HF_HOME:-$HOME}" in profile["apptainer-args"]
    assert "--env PYTHONPATH=$PWD/src" in profile["apptainer-args"]  # the tree's code in the image
    # what the launcher does with them (--num-cpus on every Ray node, the hub cache and src/ bound in
    # the image) runs against stand-in srun/apptainer/ray in tests/test_slurm_launcher.py


def _slurm_dry_run(tmp_path: Path, *configfiles: str) -> subprocess.CompletedProcess:
    """`lie snakemake --profile profiles/slurm -n` for the GSPO+LIE run's merged model, where no apptainer
    is on PATH and no LIE_SLURM_* variable is set (stand-ins for the Slurm tools)."""
    bin_dir = write_tools(tmp_path / "bin", {k: v for k, v in FAKES.items() if k != "apptainer"})
    for name in ("Snakefile", "workflow", "profiles"):
        os.symlink(REPO / name, tmp_path / name)
    config = paper_config()
    config.update(outdir=str(tmp_path / "out"), runs=[RUN])
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    path = f"{bin_dir}:{Path(sys.executable).parent}:{os.environ['PATH']}"
    assert shutil.which("apptainer", path=path) is None and shutil.which("singularity", path=path) is None
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIE_SLURM_")}
    return subprocess.run(
        [sys.executable, "-m", "lie", "snakemake", str(tmp_path / "out" / "models" / RUN), "--profile",
         "profiles/slurm", "-n", "--configfile", "c.yaml", *configfiles],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, env={**env, "PATH": path},
    )  # fmt: skip


def test_a_slurm_dry_run_needs_no_apptainer_shows_the_train_command_and_names_unset_site_settings(tmp_path):
    """Issue 34 item 6: the dry run stopped for want of apptainer, printed `Shell command: None` for
    every train job (a `run:` rule) and left an unset account and partitions out without a word."""
    proc = _slurm_dry_run(tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "lie: apptainer is not on PATH: this dry run plans without it; the jobs need it" in proc.stderr
    (unset,) = [line for line in proc.stderr.splitlines() if "site settings unset" in line]
    assert unset == ("lie: Slurm site settings unset, left out of sbatch: cluster.account ($LIE_SLURM_ACCOUNT), "
                     "cluster.gpu_partition ($LIE_SLURM_GPU_PARTITION), cluster.cpu_partition ($LIE_SLURM_CPU_PARTITION)")  # fmt: skip
    shells = [
        line.split("Shell command:", 1)[1].strip()
        for line in proc.stdout.splitlines()
        if "Shell command:" in line
    ]
    assert "None" not in shells
    (train,) = [cmd for cmd in shells if "train_job.sh" in cmd]
    out = tmp_path / "out"
    assert train.startswith(
        "LIE_GPUS_PER_NODE=4 LIE_CPUS_PER_NODE=32 LIE_ATTEMPT=1 LIE_IMAGE=containers/lie-gpu.sif "
        f"workflow/scripts/train_job.sh verl {RUN} --config {out}/config.yaml --train-file "
    ), train
    assert train.endswith(
        f'2>&1 | tee -a "$(dirname {out}/logs/train/{RUN}.log)/"{RUN}.attempts.log > {out}/logs/train/{RUN}.log'
    )


def test_a_site_file_beside_the_config_sets_the_site_settings(tmp_path):
    """docs/cluster.md's site file, given after config.yaml (`--configfile config.yaml site.yaml`):
    its account and partitions reach the jobs' resources, and the dry run names none as unset."""
    (tmp_path / "site.yaml").write_text(site_file_of_the_docs())
    proc = _slurm_dry_run(tmp_path, "site.yaml")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "site settings unset" not in proc.stderr
    site = yaml.safe_load(site_file_of_the_docs())["cluster"]
    resources = [line for line in proc.stdout.splitlines() if line.strip().startswith("resources:")]
    train = next(line for line in resources if "nodes=1" in line and "gres=gpu:4" in line)
    assert f"slurm_account={site['account']}" in train and f"slurm_partition={site['gpu_partition']}" in train
    assert any(f"slurm_partition={site['cpu_partition']}" in line for line in resources)
    assert f"constraint={site['constraint']}" in train
    assert "mem_mb=480000" in train  # merged key by key: config.yaml's cluster.mem_mb_per_node stays
    (command,) = [
        line for line in proc.stdout.splitlines() if "Shell command:" in line and "train_job.sh" in line
    ]
    assert " NCCL_SOCKET_IFNAME=ib0 LIE_ATTEMPT=1 " in command  # the site's NCCL setting, merged too


def test_downloads_run_where_snakemake_runs_not_through_sbatch(slurm_runs):
    """`data` (and `base_model`) are local rules: on a login node with network, not a compute node."""
    run = slurm_runs["data_missing"]
    assert "localrule data:" in run.output
    assert "rule_data" not in run.submitted


# ---- one GPU box ---------------------------------------------------------------------------------


def test_the_local_gpu_profile_plans_the_paper_matrix_in_the_image(tmp_path):
    profile = yaml.safe_load((REPO / "profiles/local-gpu/config.yaml").read_text())
    assert profile["software-deployment-method"] == "apptainer" and profile["resources"] == ["gpus=1"]
    bin_dir = _fake_slurm(tmp_path)  # only its apptainer is used
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--profile", "profiles/local-gpu", "-p"],
        cwd=REPO, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PATH": f"{bin_dir}:{Path(sys.executable).parent}:{os.environ['PATH']}"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    shells = [
        line.split("Shell command:", 1)[1].strip()
        for line in proc.stdout.splitlines()
        if "Shell command:" in line
    ]
    generate = [cmd for cmd in shells if " lie generate " in cmd]
    assert generate and all(
        cmd.startswith("workflow/scripts/gpu_slots.sh 1 lie generate") for cmd in generate
    )
    assert "resources: " in proc.stdout and "gpus=1" in proc.stdout


def test_a_container_job_sees_an_outdir_on_scratch(tmp_path):
    """Issue 31 defect 9: a rule in the image through the local GPU profile, with ``out`` a link to a
    folder outside the checkout; the stand-in apptainer (tests/standins.py) fails any path argument
    that no --bind makes visible, as the image would. Both profiles bind alike."""
    import shutil

    profiles = [
        yaml.safe_load((REPO / f"profiles/{p}/config.yaml").read_text()) for p in ("slurm", "local-gpu")
    ]
    assert profiles[0]["apptainer-args"] == profiles[1]["apptainer-args"]
    tree, scratch = tmp_path / "tree", tmp_path / "scratch"
    tree.mkdir(), scratch.mkdir()
    shutil.copy(REPO / "Snakefile", tree)  # copies: the stand-in follows links to their real paths
    for name in ("workflow", "profiles"):
        shutil.copytree(REPO / name, tree / name)
    os.symlink(scratch, tree / "out")
    (tree / "img.sif").write_text("")
    config = yaml.safe_load((REPO / "workflow/configs/smoke.yaml").read_text())
    config.update(image="img.sif", outdir="out")
    (tree / "c.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    bin_dir = write_tools(tmp_path / "bin", {"apptainer": APPTAINER_EXEC})
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "out/data/arith-train.parquet", "--profile", "profiles/local-gpu",
         "--configfile", "c.yaml", "--cores", "1"],
        cwd=tree, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PATH": f"{bin_dir}:{Path(sys.executable).parent}:{os.environ['PATH']}"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Activating singularity image img.sif" in proc.stderr + proc.stdout
    assert (scratch / "data" / "arith-train.parquet").stat().st_size > 0


def _slots(tmp_path: Path, want: int, command: str, **env) -> subprocess.Popen:
    return subprocess.Popen(
        ["bash", str(REPO / "workflow/scripts/gpu_slots.sh"), str(want), "bash", "-c", command],
        env={**os.environ, "LIE_GPUS": "2", "LIE_GPU_LOCK_DIR": str(tmp_path / "locks"), **env},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def test_gpu_slots_give_concurrent_jobs_different_gpus(tmp_path):
    first = _slots(tmp_path, 1, 'echo "$CUDA_VISIBLE_DEVICES"; sleep 3')
    import time

    time.sleep(0.5)
    second = _slots(tmp_path, 1, 'echo "$CUDA_VISIBLE_DEVICES"')
    assert second.communicate(timeout=30)[0].strip() == "1"
    assert first.communicate(timeout=30)[0].strip() == "0"
    both = _slots(tmp_path, 2, 'echo "$CUDA_VISIBLE_DEVICES"')
    assert both.communicate(timeout=30)[0].strip() == "0,1"  # released when the first job ended
    too_many = _slots(tmp_path, 3, "true")
    assert too_many.wait(timeout=30) == 1 and "has 2" in too_many.stderr.read()
    under_slurm = _slots(tmp_path, 1, 'echo "${CUDA_VISIBLE_DEVICES:-slurm decides}"', SLURM_JOB_ID="7")
    assert under_slurm.communicate(timeout=30)[0].strip() == "slurm decides"


# ---- the image ----------------------------------------------------------------------------------


def _check_lock(tmp_path: Path, lock_text: str) -> subprocess.CompletedProcess:
    """envs/scripts/check_gpu_report.py on a report resolved from the real lock's pins."""
    pins = {}
    for line in lock_text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line and " @ " not in line:
            name, _, version = line.partition("==")
            pins[name] = version
    report = {"install": [{"metadata": {"name": n, "version": v}} for n, v in pins.items()]}
    (tmp_path / "report.json").write_text(json.dumps(report))
    (tmp_path / "gpu.lock").write_text(lock_text)
    return subprocess.run(
        [sys.executable, str(REPO / "envs/scripts/check_gpu_report.py"), str(tmp_path / "report.json"),
         str(tmp_path / "gpu.lock")], capture_output=True, text=True,
    )  # fmt: skip


def test_the_gpu_lock_pins_a_matching_flash_attn_wheel_and_no_trl(tmp_path):
    lock = (REPO / "envs/gpu.lock").read_text()
    ok = _check_lock(tmp_path, lock)
    assert ok.returncode == 0, ok.stderr
    assert "flash_attn-2.8.3+cu130torch2.11-cp311-cp311-linux_x86_64.whl" in ok.stdout
    without = "\n".join(line for line in lock.splitlines() if not line.startswith("flash-attn"))
    assert _check_lock(tmp_path, without).returncode == 1
    wrong_torch = lock.replace("torch2.11", "torch2.8")
    assert "built for torch 2.8" in _check_lock(tmp_path, wrong_torch).stderr
    with_trl = lock + "trl==1.16.0\n"
    assert "trl: must not be in the GPU image" in _check_lock(tmp_path, with_trl).stderr


def test_the_image_self_test_refuses_a_missing_gpu_stack_and_trl(monkeypatch):
    """What the image's %test runs (`python -m lie.engines.gpu_env`), here where vLLM is absent and TRL
    present: one line, status 1."""
    from lie.engines import gpu_env

    assert {"vllm", "verl", "flash_attn", "lie"} <= set(gpu_env.IMPORTS)
    proc = subprocess.run(
        [sys.executable, "-m", "lie.engines.gpu_env"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 1 and "the image cannot import vllm" in proc.stderr + proc.stdout, proc.stderr
    monkeypatch.setattr(
        gpu_env, "IMPORTS", ("verl", "lie")
    )  # the stack imports: TRL (the CPU engine) is next
    with pytest.raises(LieError, match="trl is installed in the image"):
        gpu_env.check_image()


def test_the_image_self_test_refuses_a_torch_of_another_cuda(monkeypatch):
    """Past its imports and without TRL, the self-test reads torch's CUDA build: this CPU torch has
    none, which is one line naming the build and the CUDA the image expects."""
    import importlib.util

    from lie.engines import gpu_env

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "trl" else find_spec(name, *a)
    )
    monkeypatch.setattr(gpu_env, "IMPORTS", ("verl", "lie"))
    with pytest.raises(
        LieError, match=rf"torch is built for CUDA None, the image expects CUDA {gpu_env.CUDA_MAJOR}"
    ):
        gpu_env.check_image()
    import verl

    import lie

    assert gpu_env.check_image(cuda=False) == [f"verl {verl.__version__}", f"lie {lie.__version__}"]


def test_an_old_nvidia_driver_is_one_clear_line():
    from lie.engines.gpu_env import check_driver

    assert check_driver("580.82.07\n580.82.07\n") == (580, 82)
    with pytest.raises(LieError, match=r"driver here is 550\.54.*need a driver >= 580\.65"):
        check_driver("550.54.15\n")


def _nvidia_smi(bin_dir: Path, output: str, status: int = 0) -> Path:
    """A stand-in ``nvidia-smi`` that answers the driver query as NVIDIA's does (one line per GPU)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    tool = bin_dir / "nvidia-smi"
    tool.write_text(
        "#!/bin/sh\n"
        '[ "$1" = --query-gpu=driver_version ] && [ "$2" = --format=csv,noheader ] || exit 9\n'
        f"printf '{output}'\nexit {status}\n"
    )
    tool.chmod(0o755)
    return bin_dir


def test_the_driver_is_read_from_nvidia_smi_or_refused_in_one_line(tmp_path, monkeypatch):
    """The query path of check_driver: nvidia-smi's own output read, a failing or garbled one refused."""
    from lie.engines.gpu_env import check_driver

    path = os.environ["PATH"]
    new = _nvidia_smi(tmp_path / "new", r"580.82.07\n580.82.07\n")
    monkeypatch.setenv("PATH", f"{new}:{path}")
    assert check_driver() == (580, 82)
    broken = _nvidia_smi(tmp_path / "broken", r"NVIDIA-SMI has failed\n", 6)
    monkeypatch.setenv("PATH", f"{broken}:{path}")
    with pytest.raises(LieError, match=r"nvidia-smi failed \(6\): is a GPU visible\?"):
        check_driver()
    monkeypatch.setenv("PATH", f"{_nvidia_smi(tmp_path / 'garbled', 'N/A')}:{path}")
    with pytest.raises(LieError, match="cannot read the NVIDIA driver version from nvidia-smi: 'N/A'"):
        check_driver()


def test_a_gpu_training_launch_checks_the_driver_first(tmp_path):
    """``lie train --device gpu`` reads the driver before anything starts: an old one stops the launch."""
    from small import paper_config

    config = paper_config()
    config["outdir"] = str(tmp_path / "out")
    config_file = tmp_path / "paper.yaml"
    config_file.write_text(yaml.safe_dump(config))
    run = next(iter(config["experiments"]))
    train, model = tmp_path / "train.parquet", tmp_path / "model"
    train.write_bytes(b"")
    model.mkdir()
    val = [tmp_path / f"{name}.parquet" for name in ("math500",)]
    for v in val:
        v.write_bytes(b"")
    old = _nvidia_smi(tmp_path / "bin", r"550.54.15\n")
    env = {**os.environ, "PATH": f"{old}:{os.environ['PATH']}"}
    proc = subprocess.run(
        [sys.executable, "-m", "lie", "train", run, "--config", str(config_file), "--engine", "verl",
         "--device", "gpu", "--train-file", str(train), "--model", str(model),
         *(a for v in val for a in ("--val-file", str(v)))],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert proc.returncode != 0
    assert "driver here is 550.54" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert not (tmp_path / "out" / "runs" / run / "run.json").exists()  # nothing launched


def test_a_verl_train_job_on_a_gpu_box_takes_gpus_no_other_job_holds(tmp_path):
    """profiles/local-gpu on a box with more GPUs than a run takes (8, the paper's 4 a run): the train job
    (train_job.sh, as the train rule runs it with its train_env) gets its GPUs through gpu_slots.sh, so it
    neither shares GPU 0 with a running generate job nor starts Ray on all eight."""
    import time

    bin_dir = write_tools(tmp_path / "bin", {"lie": 'echo "lie sees GPUs $CUDA_VISIBLE_DEVICES"'})
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "LIE_GPUS": "8",
           "LIE_GPU_LOCK_DIR": str(tmp_path / "locks"), "LIE_GPUS_PER_NODE": "4"}  # fmt: skip
    env.pop("SLURM_JOB_ID", None)
    generate = _slots(tmp_path, 1, "sleep 4", LIE_GPUS="8")  # a generate job holds GPU 0
    time.sleep(0.5)
    train = subprocess.run(
        ["bash", str(REPO / "workflow/scripts/train_job.sh"), "verl", "run1", "--config", "c.yaml"],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    generate.wait(timeout=30)
    assert train.returncode == 0, train.stderr
    assert "lie sees GPUs 1,2,3,4" in train.stdout


def test_a_verl_train_job_on_a_cpu_machine_runs_as_it_is(tmp_path):
    """make smoke's verl train job (train_env: 1 GPU a node) on a machine without nvidia-smi: no GPU to hand
    out, so gpu_slots.sh runs the command as it is (it stopped, 'nvidia-smi: command not found')."""
    import shutil

    bin_dir = write_tools(tmp_path / "bin", {"lie": 'echo "lie ran, GPUs: ${CUDA_VISIBLE_DEVICES-unset}"'})
    for tool in ("bash", "dirname", "date", "hostname", "flock", "mkdir", "id", "grep"):  # no nvidia-smi
        os.symlink(shutil.which(tool), bin_dir / tool)
    env = {
        k: v for k, v in os.environ.items() if k not in ("SLURM_JOB_ID", "LIE_GPUS", "CUDA_VISIBLE_DEVICES")
    }
    env.update(PATH=str(bin_dir), LIE_GPUS_PER_NODE="1")
    train = subprocess.run(
        [shutil.which("bash"), str(REPO / "workflow/scripts/train_job.sh"), "verl", "smoke_gspo_lie"],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert train.returncode == 0, train.stderr
    assert "lie ran, GPUs: unset" in train.stdout
