"""A preflight before any long job is booked (``lie preflight``, ``make preflight``).

The first minutes on a GPU node check what the matrix needs, each check a row of a pass/fail table:
the image's self-test, the NVIDIA driver, NCCL across the node's GPUs, flash-attn; then, for each
distinct training shape of the selected runs (model family, prompt and response limits, GPUs per
node), a 4-step verl run (``lie train``) with the largest model the shape's runs train, at its real
response length (every rollout runs to the limit, so the micro-batches are full): its throughput at
a step that saves nothing, projected to each run of the shape as ``lie plan`` projects (the measured
tokens/s in place of the assumed ones), its GPU memory, the reward manager's share of a step, one
checkpoint save + resume + merge (``lie merge``), and one short vLLM generation (``lie generate``).
The models come from ``lie base-model`` as the DAG fetches them: ``lie preflight --fetch`` on a node
with network (the login node) fetches what the trials need.

On a CPU the same code runs: the GPU-only checks report "skipped: no GPU", and one trial runs at a
small shape (a tiny model built here) on verl's CPU backend; the vLLM generation runs with the vLLM
CPU engine when the checkout has ``.venv-vllm`` (``make venv-vllm``), else it is skipped with that
reason. Every step goes through the door the pipeline uses (the ``lie`` commands as subprocesses).
"""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TextIO

from lie import config as cfgmod
from lie.config.layout import Layout
from lie.config.sections import CHECKOUT, vllm_cpu_venv
from lie.config.typed import Config
from lie.core.errors import LieError
from lie.engines import gpu_env
from lie.stages.base_model import make_base_model
from lie.stages.preflight_shapes import Check, shapes, trial_models
from lie.stages.preflight_trial import trial_checks

log = logging.getLogger(__name__)

NO_GPU = "skipped: no GPU"


def vllm_venv(config: Config) -> Path:
    """The environment of vLLM's CPU build: engines.vllm_cpu.venv, else the checkout's ``.venv-vllm``."""
    return vllm_cpu_venv(config) or CHECKOUT / ".venv-vllm"


def missing_models(config: Config, runs: list[str]) -> list[str]:
    """The GPU trials' models that ``lie base-model`` has not put in the layout's folder yet."""
    layout = Layout(config)
    return [m for m in trial_models(config, runs) if not (layout.base_model(m) / "config.json").exists()]


def fetch_models(config: Config, runs: list[str] | None) -> list[str]:
    """``lie preflight --fetch``: each missing trial model of ``runs`` (default: the config's) downloaded
    as the DAG's ``base_model`` rule does (``lie base-model`` into ``<outdir>/base/<model>``), on a node
    with network; the fetched names."""
    missing = missing_models(config, list(runs) if runs else cfgmod.selected_runs(config))
    for i, name in enumerate(missing, 1):
        log.info("preflight --fetch: %s (%d of %d)", name, i, len(missing))
        make_base_model(config, name, str(Layout(config).base_model(name)), [])
    return missing


# ---- checks without a training run --------------------------------------------------------------


def _guarded(name: str, body) -> Check:
    """Run one check; any failure is its row's one line, never the end of the preflight."""
    try:
        return body()
    except LieError as exc:
        return Check(name, "fail", str(exc))
    except Exception as exc:  # a broken library is a failed check, reported with the rest
        return Check(name, "fail", f"{type(exc).__name__}: {exc}".splitlines()[0])


IMAGE_ROW = "image self-test"
IMAGE_CUDA_ROW = "image self-test: flash-attn, torch's CUDA build"


def check_image(gpu: bool, vllm_venv: Path | None = None) -> list[Check]:
    """The image's self-test (lie.engines.gpu_env): all of it on a GPU; on a CPU all but its CUDA lines,
    in ``vllm_venv`` (verl and vLLM's CPU build, as the image pairs them) when there is one, else the
    imports of this environment."""
    if gpu:
        return [_guarded(IMAGE_ROW, lambda: Check(IMAGE_ROW, "pass", ", ".join(gpu_env.check_image())))]
    cuda_part = Check(IMAGE_CUDA_ROW, NO_GPU)
    python = vllm_venv / "bin" / "python" if vllm_venv else None
    if python and python.exists():
        name = f"image self-test but CUDA ({vllm_venv}: vLLM's CPU build)"
        args = ("-m", "lie.engines.gpu_env", "--no-cuda")
        return [_guarded(name, lambda: Check(name, "pass", _python(*args, python=str(python)))), cuda_part]

    def native() -> Check:
        import importlib

        found = []
        for module_name in gpu_env.IMPORTS:
            if module_name in ("vllm", *gpu_env.CUDA_ONLY):
                continue
            module = importlib.import_module(module_name)
            found.append(f"{module_name} {getattr(module, '__version__', '?')}")
        return Check("image self-test (native imports)", "pass", ", ".join(found))

    no_vllm = Check(
        f"image self-test: vLLM, no trl (needs {vllm_venv or '.venv-vllm'})", "skipped: no vLLM CPU build"
    )
    return [_guarded("image self-test (native imports)", native), no_vllm, cuda_part]


def check_driver(gpu: bool) -> Check:
    if not gpu:
        return Check("NVIDIA driver >= 580", NO_GPU)
    name = "NVIDIA driver >= 580"
    return _guarded(name, lambda: Check(name, "pass", ".".join(map(str, gpu_env.check_driver()))))


FLASH_SCRIPT = """
import torch
from flash_attn import flash_attn_func
q, k, v = (torch.randn(2, 128, 8, 64, device="cuda", dtype=torch.bfloat16) for _ in range(3))
out = flash_attn_func(q, k, v, causal=True)
ref = torch.nn.functional.scaled_dot_product_attention(
    q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True).transpose(1, 2)
print(float((out - ref).abs().max()))
"""


def _python(*args: str, timeout: int = 300, python: str = sys.executable) -> str:
    """The last line ``python ARGS`` prints; its last line of stderr as the error when it fails."""
    proc = subprocess.run([python, *args], capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise LieError((proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1])
    return proc.stdout.strip().splitlines()[-1]


NCCL_ROW = "NCCL all-reduce across the node's GPUs"
GLOO_ROW = "all-reduce across 2 CPU processes (the NCCL row's code, gloo)"


def all_reduce_row(name: str, backend: str, device: str, world: int = 0) -> Check:
    """One all-reduce of lie.engines.allreduce in its own processes, as a row of the table."""
    args = ["--backend", backend, "--device", device, "--world", str(world)]
    return _guarded(
        name, lambda: Check(name, "pass", f"{_python('-m', 'lie.engines.allreduce', *args)} processes")
    )


def check_nccl(gpu: bool) -> Check:
    """NCCL across the node's GPUs; on a CPU the same code with gloo across two processes, so that every
    line of the row but CUDA's runs there too."""
    return all_reduce_row(NCCL_ROW, "nccl", "cuda") if gpu else all_reduce_row(GLOO_ROW, "gloo", "cpu", 2)


def check_flash_attn(gpu: bool) -> Check:
    name = "flash-attn against torch's attention"

    def run() -> Check:
        diff = float(_python("-c", FLASH_SCRIPT))
        return Check(name, "pass" if diff < 5e-2 else "fail", f"max |difference| {diff:.2g}")

    return _guarded(name, run) if gpu else Check(name, NO_GPU)


SHARED_OUTDIR_ROW = "the outdir is the same folder on every node"


def check_shared_outdir(workdir: Path, reader: Callable[[str], str] | None = None) -> Check:
    """verl writes each rank's checkpoint shard under the run folder on that rank's node: unless the outdir
    is one folder on every node (shared storage mounted at the same path), a resume or merge finds a partial
    checkpoint. A file written here (rank 0) must be read, with the same content, by a Ray task pinned to
    each node of the cluster at RAY_ADDRESS (the Slurm and SkyPilot launchers export it); skipped without.
    ``reader``: what reads the file on a node (default :func:`_read_probe`; a test's stands for a node
    whose storage differs)."""
    import os

    address = os.environ.get("RAY_ADDRESS")
    if not address:
        return Check(SHARED_OUTDIR_ROW, "skipped: no Ray cluster (RAY_ADDRESS unset)")

    def run() -> Check:
        import secrets

        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        token = secrets.token_hex(8)
        probe = workdir.resolve() / f"shared-outdir-{token}.txt"
        probe.parent.mkdir(parents=True, exist_ok=True)
        probe.write_text(token)
        started = not ray.is_initialized()
        try:
            if started:
                ray.init(address=address, logging_level="ERROR")
            read = ray.remote(num_cpus=0)(reader or _read_probe)
            nodes = [n for n in ray.nodes() if n["Alive"]]
            on = [NodeAffinitySchedulingStrategy(n["NodeID"], soft=False) for n in nodes]
            texts = ray.get([read.options(scheduling_strategy=s).remote(str(probe)) for s in on], timeout=300)
        finally:
            probe.unlink(missing_ok=True)
            if started:
                ray.shutdown()
        apart = [
            f"{n['NodeManagerAddress']} ({n['NodeID'][:8]}): {t}" for n, t in zip(nodes, texts) if t != token
        ]
        detail = f"{len(nodes) - len(apart)} of {len(nodes)} node(s) read {probe.parent}"
        return Check(SHARED_OUTDIR_ROW, "fail" if apart else "pass", "; ".join([detail, *apart]))

    return _guarded(SHARED_OUTDIR_ROW, run)


def _read_probe(path: str) -> str:
    """On one node: the probe file's text, or why it cannot be read there."""
    try:
        return Path(path).read_text()
    except OSError as exc:
        return f"cannot read it there ({exc.strerror})"


# ---- the table ----------------------------------------------------------------------------------


NAME_WIDTH = 56  # the table's first column; a longer name pushes its row's result right


def header() -> str:
    return f"{'check':{NAME_WIDTH}}  result\n" + "-" * (NAME_WIDTH + 30)


def row(check: Check) -> str:
    """One row of the table: printed as soon as its check has finished."""
    return f"{check.name:{NAME_WIDTH}}  {check.status}" + (f"  ({check.detail})" if check.detail else "")


def summary(checks: list[Check]) -> str:
    counts = {k: sum(c.status.startswith(k) for c in checks) for k in ("pass", "fail", "skipped")}
    return "-" * (NAME_WIDTH + 30) + (
        f"\npreflight: {counts['pass']} passed, {counts['fail']} failed, {counts['skipped']} skipped"
    )


def iter_preflight(
    config: Config, runs: list[str], workdir: Path, gpu: bool, rollout: str | None = None
) -> Iterator[Check]:
    """Every check, in order, each as soon as it has finished; a failed one does not stop the others.
    ``rollout``: the GPU trials' ``training.gpu_rollout`` (None: the config's)."""
    found = shapes(config, runs)
    if not found:
        raise LieError("preflight: no runs selected (config runs, or --runs)")
    if gpu:
        log.info("preflight: %d shape(s) of %d run(s), trials with %s", len(found), len(runs),
                 ", ".join(trial_models(config, runs)))  # fmt: skip
        if missing := missing_models(config, runs):
            log.warning("preflight: not downloaded: %s; run `lie preflight --fetch` on a node with network "
                        "first (their trials fail)", ", ".join(missing))  # fmt: skip
    yield from check_image(gpu, vllm_venv(config))
    yield check_driver(gpu)
    yield check_nccl(gpu)
    yield check_flash_attn(gpu)
    yield check_shared_outdir(workdir)
    if gpu:
        for i, shape in enumerate(found):
            yield from trial_checks(config, shape, workdir / f"shape-{i + 1}", gpu=True, rollout=rollout)
    else:
        label = f"{len(found)} shape(s) of {len(runs)} run(s); on a CPU one trial at a small shape"
        log.info("preflight: %s", label)
        yield from trial_checks(config, found[0], workdir / "cpu", gpu=False)


def preflight(
    config: Config, runs: list[str], workdir: Path, gpu: bool, rollout: str | None = None
) -> list[Check]:
    """Every check of :func:`iter_preflight`, once all have finished."""
    return list(iter_preflight(config, runs, workdir, gpu, rollout))


def run_preflight(
    config: Config,
    runs: list[str] | None = None,
    workdir: str | Path | None = None,
    device: str = "auto",
    out: TextIO | None = None,
    rollout: str | None = None,
) -> bool:
    """``lie preflight``: the table printed to ``out`` (default stdout) one row as each check finishes
    (a trial takes minutes), for ``runs`` (default: the config's) in ``workdir`` (default
    ``<outdir>/preflight``; each trial keeps its commands' logs under ``<trial>/logs``, named in its
    rows); ``device``: gpu, cpu, or auto (gpu when visible); ``rollout``: the GPU trials' server
    (``training.gpu_rollout``; None: the config's). Whether every check passed."""
    out = out or sys.stdout
    runs = list(runs) if runs else cfgmod.selected_runs(config)
    folder = Path(workdir) if workdir else config.outdir / "preflight"
    if device == "auto":
        import torch

        gpu = bool(torch.cuda.is_available())
    else:
        gpu = device == "gpu"
    checks = []
    print(header(), file=out, flush=True)
    for check in iter_preflight(config, runs, folder, gpu, rollout):
        checks.append(check)
        print(row(check), file=out, flush=True)
    print(summary(checks), file=out, flush=True)
    return not any(c.status == "fail" for c in checks)
