"""Check a ``pip install --dry-run --report`` of envs/gpu.lock against the lock and the image's needs.

Usage: python envs/scripts/check_gpu_report.py REPORT.json envs/gpu.lock

- every ``name==version`` pin resolves as pinned, and the verl[vllm] stack is the one verl 0.9.1 pins;
- flash-attn (verl's default attention for the actor) is pinned to a prebuilt wheel whose tags
  match the resolved torch (``torchX.Y``), CUDA runtime (``cuXY0``) and CPython 3.11 on x86-64 Linux;
- trl is absent (verl 0.9.1 imports a class TRL 1.16 no longer has whenever trl is installed).
"""

from __future__ import annotations

import json
import re
import sys

STACK = {"verl": "0.9.1", "vllm": "0.24.0", "torch": "2.11.0", "transformers": "5.9.0"}
ABSENT = ("trl",)
WHEEL = re.compile(
    r"flash_attn-(?P<version>[\d.]+)\+cu(?P<cuda>\d+)torch(?P<torch>\d+\.\d+)-(?P<py>cp\d+)-(?P=py)-(?P<platform>\w+)\.whl$"
)


def _norm(name: str) -> str:
    return name.lower().replace("_", "-")


def read_lock(path: str) -> tuple[dict[str, str], dict[str, str]]:
    """(``name==version`` pins, ``name @ url`` pins) of a lock file."""
    pins, urls = {}, {}
    for line in open(path, encoding="utf-8"):
        line = line.split("#", 1)[0].strip()
        if " @ " in line:
            name, _, url = line.partition(" @ ")
            urls[_norm(name)] = url.strip()
        elif line:
            name, _, version = line.partition("==")
            pins[_norm(name)] = version
    return pins, urls


def flash_attn_problems(urls: dict[str, str], resolved: dict[str, str]) -> list[str]:
    url = urls.get("flash-attn")
    if url is None:
        return ["flash-attn: not in the lock; verl's actor loads its model with flash_attention_2"]
    match = WHEEL.search(url)
    if match is None:
        return [
            f"flash-attn: {url} is not a prebuilt wheel named flash_attn-V+cuXYtorchX.Y-cpXY-cpXY-PLATFORM.whl"
        ]
    torch = ".".join(resolved.get("torch", "?").split(".")[:2])
    runtime = resolved.get("nvidia-cuda-runtime", "")
    cuda = "".join(runtime.split(".")[:2]) if runtime else "?"
    problems = []
    if match["torch"] != torch:
        problems.append(
            f"flash-attn: the wheel is built for torch {match['torch']}, the lock has torch {torch}"
        )
    if match["cuda"].rstrip("0") != cuda.rstrip("0"):
        problems.append(
            f"flash-attn: the wheel is built for CUDA {match['cuda']}, the lock's runtime is {runtime}"
        )
    if match["py"] != "cp311" or match["platform"] != "linux_x86_64":
        problems.append(
            f"flash-attn: the wheel is for {match['py']} {match['platform']}, the image is cp311 linux_x86_64"
        )
    return problems


def main(argv: list[str]) -> int:
    report, lock = argv[1], argv[2]
    resolved = {
        _norm(i["metadata"]["name"]): i["metadata"]["version"] for i in json.load(open(report))["install"]
    }
    pinned, urls = read_lock(lock)
    problems = [
        f"{n}: pinned {v}, resolved {resolved.get(n)}" for n, v in pinned.items() if resolved.get(n) != v
    ]
    problems += [
        f"{n}: the verl[vllm] stack needs {v}, lock has {pinned.get(n)}"
        for n, v in STACK.items()
        if pinned.get(n) != v
    ]
    problems += [
        f"{n}: must not be in the GPU image (see envs/gpu.in)" for n in ABSENT if n in pinned or n in resolved
    ]
    problems += flash_attn_problems(urls, resolved)
    for problem in problems:
        print(problem, file=sys.stderr)
    if not problems:
        print(
            f"envs/gpu.lock resolves: {len(resolved)} packages; "
            + ", ".join(f"{n} {resolved[n]}" for n in STACK)
            + f"; flash-attn {urls['flash-attn'].rsplit('/', 1)[1]}"
        )
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
