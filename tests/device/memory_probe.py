"""GPU memory of verl's actor at the paper's token budgets, measured without verl (torch + transformers only).

A borrowed GPU machine has torch and transformers but none of verl, Ray or flash-attn, and no network. So
this probe builds Qwen3-8B- and Qwen3-4B-shaped models from their published shapes (SHAPES, no download)
with 2 and 4 decoder layers, in bf16 with gradient checkpointing and SDPA attention, and runs what verl's
FSDP actor runs on one micro-batch of dynamic batching's token budget (``3 x (prompt + response)`` tokens,
``ppo_max_token_len_per_gpu`` in lie.engines.verl.overrides): logits -> log-probs of the sampled tokens ->
the entropy (``torch.compile``d, as verl's ``use_torch_compile`` does; eager when compiling fails, and the
output says so) -> a loss -> backward. Three passes per model:

- ``log-prob``: no gradient, log-probs and the compiled entropy (verl's compute_log_prob: ``calculate_entropy``);
- ``update``: log-probs -> loss -> backward (verl's update_actor at ``entropy_coeff: 0``, the paper's);
- ``update+entropy``: the entropy in the loss too (an ``entropy_coeff`` other than 0; the upper bound).

``torch.cuda.max_memory_allocated`` above what the model holds before the pass, at 2 and 4 layers, gives
the activations of one more layer (their difference / 2); extrapolated to the full depth (36 layers) and
added to what FSDP keeps on each of the node's GPUs (fp32 parameters and gradients sharded over
``--world`` GPUs, the gathered bf16 units; at the optimizer step the sharded Adam states instead of the
activations), it is printed beside the estimate written before any measurement (ESTIMATE_GB).

On a CPU (``--device cpu``, tiny shapes) the same code runs, without allocator statistics: the lines
say ``n/a``. tests/test_device_probe.py runs it so in seconds. Run on a GPU:
``python3 tests/device/memory_probe.py --device cuda --out $OUT/probe.json`` (a few minutes).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

# The published config.json of each model (Hugging Face: Qwen/Qwen3-8B-Base and Qwen/Qwen3-4B-Base; the
# post-trained Qwen3-8B and Qwen3-4B have the same shapes): hidden_size, intermediate_size,
# num_attention_heads, num_key_value_heads, head_dim, num_hidden_layers, vocab_size, tie_word_embeddings.
# Only the shapes matter for memory; the weights are random. "tiny" is for a CPU run of the same code.
SHAPES: dict[str, dict] = {
    "qwen3-8b": dict(hidden_size=4096, intermediate_size=12288, num_attention_heads=32, num_key_value_heads=8,
                     head_dim=128, num_hidden_layers=36, vocab_size=151936, tie_word_embeddings=False),
    "qwen3-4b": dict(hidden_size=2560, intermediate_size=9728, num_attention_heads=32, num_key_value_heads=8,
                     head_dim=128, num_hidden_layers=36, vocab_size=151936, tie_word_embeddings=True),
    "tiny": dict(hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
                 head_dim=16, num_hidden_layers=36, vocab_size=512, tie_word_embeddings=False),
}  # fmt: skip

# Each case: a model and a run's prompt + response limits (config.yaml: training.max_prompt_length 1024,
# max_response_length 8192; the 12k continual stage 12288). A micro-batch holds 3 x (prompt + response)
# tokens: 3 x 9,216 = 27,648 for 8B at 8k, 3 x 13,312 = 39,936 for 4B at 12k.
CASES: dict[str, tuple[str, int, int]] = {
    "8b-8k": ("qwen3-8b", 1024, 8192),
    "4b-12k": ("qwen3-4b", 1024, 12288),
    "tiny": ("tiny", 16, 16),
}
# written before any GPU measured it (docs/cluster.md, "verl's trainer on one borrowed GPU"): a GPU's peak in a step
ESTIMATE_GB = {"8b-8k": "~40-45 GB", "4b-12k": "~35 GB"}
PASSES = ("log-prob", "update", "update+entropy")
GiB = 1024**3


# ---- what verl's actor computes on the logits (its formulas; this code is the probe's own) ------------


def entropy_of(logits):
    """The entropy of each row's softmax: logsumexp(x) - sum(softmax(x) * x) (verl's entropy_from_logits)."""
    import torch

    probs = torch.softmax(logits, dim=-1)
    return torch.logsumexp(logits, dim=-1) - (probs * logits).sum(dim=-1)


def label_log_probs(logits, labels, chunk: int = 2048):
    """log softmax(logits)[label] per row, holding only the logits, their log-sum-exp and (in backward) one
    gradient of the logits' size: the memory of flash-attn's cross-entropy kernel, which verl's actor uses
    where flash-attn is installed (the image), without flash-attn."""
    import torch

    class LabelLogProb(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            lse = torch.empty(x.shape[0], dtype=torch.float32, device=x.device)
            for start in range(0, x.shape[0], chunk):
                lse[start : start + chunk] = torch.logsumexp(x[start : start + chunk].float(), dim=-1)
            ctx.save_for_backward(x, y, lse)
            return x.gather(-1, y[:, None]).squeeze(-1).float() - lse

        @staticmethod
        def backward(ctx, grad):
            x, y, lse = ctx.saved_tensors
            dx = torch.empty_like(x)
            for start in range(0, x.shape[0], chunk):
                end = start + chunk
                probs = torch.exp(x[start:end].float() - lse[start:end, None])
                dx[start:end] = (-probs * grad[start:end, None]).to(x.dtype)
            dx.scatter_add_(-1, y[:, None], grad[:, None].to(x.dtype))
            return dx, None

    return LabelLogProb.apply(logits, labels)


def compiled_entropy(device: str, log: list[str]):
    """verl's ``torch.compile(entropy_from_logits, dynamic=True)``, tried once on a small input of
    ``device``; on failure the eager function, and the reason in ``log``."""
    import torch

    try:
        fn = torch.compile(entropy_of, dynamic=True)
        trial = torch.randn(4, 8, device=device, dtype=torch.bfloat16, requires_grad=True)
        fn(trial).float().sum().backward()  # compiles forward and backward
        return fn, "compiled"
    except Exception as exc:  # inductor needs a compiler and triton; any failure falls back
        reason = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else type(exc).__name__
        log.append(f"entropy: torch.compile failed ({type(exc).__name__}: {reason}); eager instead")
        return entropy_of, "eager (torch.compile failed)"


# ---- one measured pass ----------------------------------------------------------------------------


@dataclass
class Pass:
    case: str
    layers: int
    name: str
    tokens: int
    held_bytes: int | None  # allocated before the pass: the model (and nothing else)
    peak_bytes: int | None  # max_memory_allocated during the pass
    seconds: float
    loss: float

    @property
    def activation_bytes(self) -> int | None:
        if self.peak_bytes is None or self.held_bytes is None:
            return None
        return self.peak_bytes - self.held_bytes


def build_model(shape: dict, layers: int, device: str):
    import torch
    from transformers import AutoModelForCausalLM, Qwen3Config

    config = Qwen3Config(
        **{**shape, "num_hidden_layers": layers}, use_cache=False, attn_implementation="sdpa"
    )
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16, attn_implementation="sdpa")
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})  # as verl
    model.train()
    return model


def run_pass(
    model, name: str, tokens: int, entropy_fn, device: str, seed: int = 0
) -> tuple[int | None, int | None, float, float]:
    """One micro-batch of ``tokens`` packed tokens (one row, causal: SDPA's memory-efficient kernels keep
    attention linear in the length, as flash-attn's varlen kernel does for verl's packed rows)."""
    import torch

    cuda = device.startswith("cuda")
    generator = torch.Generator(device="cpu").manual_seed(seed)
    vocab = model.config.vocab_size
    ids = torch.randint(vocab, (1, tokens), generator=generator).to(device)
    labels = torch.roll(ids, -1, dims=1).squeeze(0)
    advantages = torch.randn(tokens, generator=generator).to(device)
    model.zero_grad(set_to_none=True)
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    held = torch.cuda.memory_allocated() if cuda else None
    started = time.perf_counter()
    position_ids = torch.arange(tokens, device=device)[None]
    if name == "log-prob":
        with torch.no_grad():
            logits = model(input_ids=ids, position_ids=position_ids).logits.squeeze(0)
            entropy = entropy_fn(logits)
            log_probs = label_log_probs(logits, labels)
            loss = float((log_probs.mean() + entropy.float().mean()).item())
    else:
        logits = model(input_ids=ids, position_ids=position_ids).logits.squeeze(0)
        log_probs = label_log_probs(logits, labels)
        objective = -(log_probs * advantages).mean()
        if name == "update+entropy":
            objective = objective - 1e-3 * entropy_fn(logits).float().mean()
        objective.backward()
        loss = float(objective.item())
        del logits, log_probs, objective
    if cuda:
        torch.cuda.synchronize()
    seconds = time.perf_counter() - started
    peak = torch.cuda.max_memory_allocated() if cuda else None
    model.zero_grad(set_to_none=True)
    return held, peak, seconds, loss


# ---- the extrapolation ------------------------------------------------------------------------------


def layer_params(shape: dict) -> int:
    """Parameters of one Qwen3 decoder layer: q, k, v, o, q/k norms, the SwiGLU MLP, two RMSNorms."""
    h, i, d = shape["hidden_size"], shape["intermediate_size"], shape["head_dim"]
    q, kv = shape["num_attention_heads"] * d, shape["num_key_value_heads"] * d
    return h * q + 2 * h * kv + q * h + 2 * d + 3 * h * i + 2 * h


def outer_params(shape: dict) -> int:
    """Embedding, final norm and (untied) lm_head: the FSDP root unit."""
    embed = shape["vocab_size"] * shape["hidden_size"]
    return embed * (1 if shape["tie_word_embeddings"] else 2) + shape["hidden_size"]


def total_params(shape: dict) -> int:
    return outer_params(shape) + shape["num_hidden_layers"] * layer_params(shape)


@dataclass
class Estimate:
    case: str
    pass_name: str
    per_layer_bytes: float  # activations of one more layer (4 layers - 2 layers, halved)
    activation_bytes: float  # extrapolated to the full depth
    fsdp_bytes: float  # sharded fp32 params + grads, gathered bf16 root unit and two layers
    optimizer_step_bytes: float  # sharded fp32 params + grads + Adam's two moments
    total_bytes: float = field(init=False)

    def __post_init__(self) -> None:
        self.total_bytes = max(self.activation_bytes + self.fsdp_bytes, self.optimizer_step_bytes)


def estimate(
    case: str, pass_name: str, shape: dict, low: tuple[int, float], high: tuple[int, float], world: int
) -> Estimate:
    """A GPU's peak in a step of the full-depth model on ``world`` GPUs, from the activations measured at
    two depths, ``(layers, bytes)`` each (2 and 4): activations grow linearly with depth (gradient
    checkpointing keeps each layer's input; the recomputation inside one layer and the logits do not)."""
    depth = shape["num_hidden_layers"]
    per_layer = (high[1] - low[1]) / (high[0] - low[0])
    activations = low[1] + (depth - low[0]) * per_layer
    params = total_params(shape)
    sharded = 4 * params / world  # fp32, verl's FSDP keeps master weights (and gradients) in fp32
    gathered = 2 * (
        outer_params(shape) + 2 * layer_params(shape)
    )  # bf16 root unit + a layer and its prefetch
    fsdp = 2 * sharded + gathered
    adam = 2 * sharded  # exp_avg and exp_avg_sq in fp32, loaded onto the GPU for the step (optimizer_offload)
    return Estimate(case, pass_name, per_layer, activations, fsdp, 2 * sharded + adam)


# ---- the command ------------------------------------------------------------------------------------


def gib(value: float | None) -> str:
    return "n/a" if value is None else f"{value / GiB:.2f} GiB"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--device", default="cuda", help="cuda (the measurement) or cpu (the code path, tiny shapes)"
    )
    parser.add_argument(
        "--cases", default=None, help=f"comma-separated of {sorted(CASES)} (cuda: 8b-8k,4b-12k; cpu: tiny)"
    )
    parser.add_argument("--layers", default="2,4", help="two depths to measure (default 2,4)")
    parser.add_argument(
        "--world", type=int, default=4, help="GPUs FSDP shards over (training.n_gpus_per_node: 4)"
    )
    parser.add_argument(
        "--entropy",
        choices=("compiled", "eager"),
        default="compiled",
        help="verl's torch.compile'd entropy (default; eager when compiling fails) or eager",
    )
    parser.add_argument("--out", type=Path, default=None, help="also write every figure as JSON here")
    args = parser.parse_args(argv)

    import torch

    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print(
            "memory probe: --device cuda but torch sees no GPU (use --device cpu for the code path)",
            file=sys.stderr,
        )
        return 2
    cases = (args.cases or ("8b-8k,4b-12k" if args.device.startswith("cuda") else "tiny")).split(",")
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        print(f"memory probe: unknown case(s) {unknown}; known: {sorted(CASES)}", file=sys.stderr)
        return 2
    depths = [int(x) for x in args.layers.split(",")]
    if len(depths) != 2 or depths[0] >= depths[1]:
        print(f"memory probe: --layers takes two increasing depths, not {args.layers!r}", file=sys.stderr)
        return 2
    notes: list[str] = []
    if args.entropy == "compiled":
        entropy_fn, entropy_mode = compiled_entropy(args.device, notes)
    else:
        entropy_fn, entropy_mode = entropy_of, "eager (--entropy eager)"
    for note in notes:
        print(note, flush=True)
    device_name = torch.cuda.get_device_name(0) if args.device.startswith("cuda") else "cpu"
    print(f"memory probe: torch {torch.__version__}, {device_name}, entropy {entropy_mode}, "
          f"FSDP world {args.world}", flush=True)  # fmt: skip
    passes: list[Pass] = []
    estimates: list[Estimate] = []
    for case in cases:
        model_name, prompt, response = CASES[case]
        shape, tokens = SHAPES[model_name], 3 * (prompt + response)
        measured: dict[tuple[str, int], Pass] = {}
        for layers in depths:
            model = build_model(shape, layers, args.device)
            for name in PASSES:
                try:
                    held, peak, seconds, loss = run_pass(model, name, tokens, entropy_fn, args.device)
                except torch.cuda.OutOfMemoryError as exc:
                    print(
                        f"{case} {layers} layers {name}: out of GPU memory ({str(exc).splitlines()[0][:120]})",
                        flush=True,
                    )
                    torch.cuda.empty_cache()
                    continue
                if not math.isfinite(loss):
                    print(f"{case} {layers} layers {name}: loss {loss} is not finite", flush=True)
                    return 1
                result = Pass(case, layers, name, tokens, held, peak, seconds, loss)
                measured[(name, layers)] = result
                passes.append(result)
                print(f"{case} {layers} layers {name}: 3 x {prompt + response:,} tokens, held {gib(held)}, "
                      f"peak {gib(peak)}, activations {gib(result.activation_bytes)}, {seconds:.2f} s", flush=True)  # fmt: skip
            del model
            if args.device.startswith("cuda"):
                torch.cuda.empty_cache()
        for name in PASSES:
            low, high = measured.get((name, depths[0])), measured.get((name, depths[1]))
            if low is None or high is None or low.activation_bytes is None or high.activation_bytes is None:
                print(
                    f"{case} {name}: estimate n/a (no allocator statistics on {args.device}, or a pass failed)"
                )
                continue
            e = estimate(case, name, shape, (depths[0], low.activation_bytes),
                         (depths[1], high.activation_bytes), args.world)  # fmt: skip
            estimates.append(e)
            print(f"{case} {name}: per layer {gib(e.per_layer_bytes)}; at {shape['num_hidden_layers']} layers "
                  f"activations {gib(e.activation_bytes)} + FSDP {gib(e.fsdp_bytes)} (optimizer step "
                  f"{gib(e.optimizer_step_bytes)}) = {gib(e.total_bytes)} = {e.total_bytes / 1e9:.1f} GB per GPU "
                  f"of {args.world}; estimate {ESTIMATE_GB.get(case, 'none')}", flush=True)  # fmt: skip
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        record = {"torch": torch.__version__, "device": device_name, "entropy": entropy_mode, "world": args.world,
                  "notes": notes, "passes": [{**asdict(p), "activation_bytes": p.activation_bytes} for p in passes],
                  "estimates": [asdict(e) for e in estimates]}  # fmt: skip
        partial = args.out.with_name(args.out.name + ".partial")
        partial.write_text(json.dumps(record, indent=1) + "\n")
        partial.replace(args.out)
    print(f"memory probe: {len(passes)} passes, {len(estimates)} estimates", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
