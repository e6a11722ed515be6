"""Checks of the GPU environment: the image's self-test, and the host's NVIDIA driver at run time.

``python -m lie.engines.gpu_env`` is the image's ``%test`` (Apptainer) and ``RUN`` check (Docker)
(``--no-cuda``: all but flash-attn and torch's CUDA build, which the CPU preflight runs in ``.venv-vllm``):
every library a GPU job imports, imported; TRL absent (verl 0.9.1 imports a class of TRL that TRL
1.16 no longer has whenever TRL is installed, so every FSDP actor build would fail); torch's CUDA
major version the one the driver check expects.

:func:`check_driver` runs before verl or vLLM start on GPUs: the image's wheels are built for CUDA
13.0, which needs an NVIDIA driver >= 580 on the host; an older driver would otherwise surface as
an obscure CUDA initialisation error deep inside a Ray worker.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import shutil
import subprocess
import sys

from lie.core.errors import LieError

log = logging.getLogger(__name__)

CUDA_MAJOR = 13
MIN_DRIVER = (580, 65)  # CUDA 13.0's minimum Linux driver (580.65.06)
IMPORTS = ("torch", "vllm", "verl", "flash_attn", "math_verify", "pebble", "lie")


def parse_driver(text: str) -> tuple[int, int]:
    """``nvidia-smi --query-gpu=driver_version`` output (one line per GPU) as (major, minor)."""
    line = text.strip().splitlines()[0].strip() if text.strip() else ""
    parts = line.split(".")
    try:
        return int(parts[0]), int(parts[1]) if len(parts) > 1 else 0
    except ValueError:
        raise LieError(f"cannot read the NVIDIA driver version from nvidia-smi: {line!r}") from None


def check_driver(query: str | None = None) -> tuple[int, int]:
    """The host's driver version, or a LieError that says the image needs >= 580 and what to do."""
    if query is None:
        if shutil.which("nvidia-smi") is None:
            raise LieError(
                "nvidia-smi is not on PATH: no NVIDIA driver is visible here (inside Apptainer, run with "
                "--nv); the GPU image needs a driver >= 580"
            )
        result = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
        )
        if result.returncode != 0:
            raise LieError(
                f"nvidia-smi failed ({result.stderr.strip() or result.returncode}): is a GPU visible?"
            )
        query = result.stdout
    version = parse_driver(query)
    if version < MIN_DRIVER:
        raise LieError(
            f"the NVIDIA driver here is {version[0]}.{version[1]}, but the GPU image's wheels (torch 2.11, "
            f"vLLM 0.24, CUDA {CUDA_MAJOR}.0) need a driver >= {MIN_DRIVER[0]}.{MIN_DRIVER[1]}: ask for "
            "nodes with a newer driver (README: Before your first cluster run)"
        )
    return version


CUDA_ONLY = ("flash_attn",)  # a wheel built for CUDA: nothing to import without it


def check_image(cuda: bool = True) -> list[str]:
    """Import what a GPU job imports; return the versions read (a LieError names what is wrong).
    ``cuda=False``: every check but the CUDA-only imports and torch's CUDA build (the preflight on a CPU,
    in ``.venv-vllm``, the environment of verl and vLLM's CPU build)."""
    found = []
    for name in IMPORTS if cuda else [n for n in IMPORTS if n not in CUDA_ONLY]:
        try:
            module = importlib.import_module(name)
        except Exception as exc:  # an import error of a compiled extension is not always ImportError
            raise LieError(f"the image cannot import {name}: {type(exc).__name__}: {exc}") from None
        found.append(f"{name} {getattr(module, '__version__', '?')}")
    if importlib.util.find_spec("trl") is not None:  # what verl's is_trl_available() reads
        raise LieError("trl is installed in the image: verl 0.9.1's actor build then fails (see envs/gpu.in)")
    import torch

    if cuda and not str(torch.version.cuda or "").startswith(f"{CUDA_MAJOR}."):
        raise LieError(f"torch is built for CUDA {torch.version.cuda}, the image expects CUDA {CUDA_MAJOR}")
    return found


def main(argv: list[str] | None = None) -> int:
    cuda = "--no-cuda" not in (sys.argv[1:] if argv is None else argv)
    try:
        print(("GPU image: " if cuda else "GPU image without CUDA: ") + ", ".join(check_image(cuda)))
    except LieError as exc:
        print(f"GPU image check failed: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
