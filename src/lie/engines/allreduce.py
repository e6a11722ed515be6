"""One all-reduce across the processes of a node: the preflight's collective-communication row.

``python -m lie.engines.allreduce --backend nccl --device cuda`` starts a process per GPU (torch's
``mp.spawn``), joins them into one process group, all-reduces a 4 MiB tensor and checks the sum; it
prints the number of processes. On a CPU the same code runs with ``--backend gloo --device cpu`` and
two processes, so every line but the CUDA ones runs in the tests. The worker is a function of this
module, not of a ``python -c`` script: processes started with "spawn" import their function by its
module, and a function of ``__main__`` cannot be found there.
"""

from __future__ import annotations

import argparse
import socket
import sys


def _work(rank: int, world: int, port: int, backend: str, device: str) -> None:
    import torch
    import torch.distributed as dist

    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        if device == "cuda":
            torch.cuda.set_device(rank)
        x = torch.ones(1 << 20, device=device) * (rank + 1)
        dist.all_reduce(x)
        expected = world * (world + 1) / 2
        if float(x[0]) != expected:
            raise RuntimeError(f"all-reduce gave {float(x[0])}, expected {expected}")
    finally:
        dist.destroy_process_group()


def all_reduce(world: int, backend: str, device: str) -> int:
    """All-reduce across ``world`` processes; raises if a process fails or the sum is wrong."""
    import torch.multiprocessing as mp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(_work, args=(world, port, backend, device), nprocs=world)
    return world


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lie.engines.allreduce", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--backend", choices=("nccl", "gloo"), default="nccl")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--world", type=int, default=0, help="processes (default: the node's GPUs)")
    args = parser.parse_args(argv)
    world = args.world
    if world <= 0:
        import torch

        world = torch.cuda.device_count() if args.device == "cuda" else 2
        if world == 0:
            sys.exit("lie.engines.allreduce: no GPU visible (torch.cuda.device_count() is 0)")
    print(all_reduce(world, args.backend, args.device))
    return 0


if __name__ == "__main__":
    sys.exit(main())
