"""``lie preflight``: check a GPU node before any long job is booked (the checks: ``lie.stages.preflight``).

Examples:
  lie preflight --fetch --config config.yaml      # first, where the network is: the trials' models
  apptainer exec --nv containers/lie-gpu.sif lie preflight --config config.yaml   # on a GPU node
  lie preflight --config config.yaml --runs qwen3-4b-base_dapo_gspo_lie           # one shape
  make preflight                                                                  # on this machine
Prints a pass/fail table, each row as its check ends; exits 1 when a check failed. GPU-only checks
say "skipped: no GPU" on a CPU. Each trial's commands (lie train, its resume, lie merge, lie generate)
write their whole output to <workdir>/<trial>/logs/*.log, named in the trial's rows.
"""

from __future__ import annotations

import argparse

from lie.commands.argtypes import add_config_option, check_written, load_config_option
from lie.stages.placed import placed_outputs
from lie.stages.preflight import fetch_models, run_preflight


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_option(parser)
    parser.add_argument("--runs", nargs="*", help="runs whose training shapes to try (default: the config's)")
    parser.add_argument(
        "--workdir",
        help="the trials' folder, their logs under <trial>/logs (default: <outdir>/preflight); a trial folder "
        "is emptied first, refused if it holds a file lie did not write",
    )
    parser.add_argument(
        "--device", choices=["auto", "gpu", "cpu"], default="auto", help="auto: gpu when one is visible"
    )
    parser.add_argument(
        "--rollout",
        choices=["vllm", "transformers"],
        help="the server that samples the GPU trials' rollouts (default: the config's training.gpu_rollout, "
        "vllm): transformers where vLLM is not installed, with a tiny model (its vLLM row is then skipped)",
    )
    parser.add_argument(
        "--fetch",
        action="store_true",
        help="only download the models the GPU trials train (lie base-model), on a node with network",
    )


def run(args: argparse.Namespace) -> int:
    config = load_config_option(args)
    if args.fetch:
        fetched = fetch_models(config, args.runs)
        print(
            f"preflight --fetch: {', '.join(fetched) or 'nothing to fetch'}; next: lie preflight on a GPU node"
        )
        return 0
    if not args.workdir:
        check_written(args, placed_outputs(config, "preflight"))
    passed = run_preflight(
        config, args.runs, args.workdir, args.device, rollout=args.rollout
    )  # prints each row as it ends
    return 0 if passed else 1
