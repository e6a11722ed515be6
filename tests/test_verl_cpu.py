"""verl's real trainer on the CPU backend (lie.engines.verl.cpu): the sampler, the patches, and (make
test-all) ``python -m verl.trainer.main_ppo`` killed and resumed, and resumed at another world size.
tests/test_verl_main_ppo.py reads the smoke DAG's verl runs."""

from __future__ import annotations

import copy
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import yaml

pytest.importorskip("verl")

from small import arithmetic_rows, small_config, validation_rows, write_config, write_parquet  # noqa: E402
from tripwires import ProbeSets, run_probes  # noqa: E402

from lie.engines.sampling import TokenRequest, sample_batch  # noqa: E402
from lie.formats.runs import RunDir, read_metrics, read_rollouts  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def _answer_at_varied_lengths(model, tokenizer) -> None:
    """A few AdamW steps on answers after 0-8 filler words, closed by the end-of-turn token: rollouts
    then end at different lengths, with uneven per-token entropy (a token mean of the entropy and a
    mean of per-response means differ)."""
    from lie.formats.prompts import prompt_token_ids

    rng = random.Random(0)
    rows = arithmetic_rows(40)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    model.train()
    for _ in range(60):
        batch = []
        for row in rng.sample(rows, 8):
            prompt = prompt_token_ids(tokenizer, row["prompt"], enable_thinking=False)
            answer = (
                " so" * rng.randint(0, 8)
                + f" The answer is \\boxed{{{row['reward_model']['ground_truth']}}}."
            )
            batch.append(
                (prompt, tokenizer(answer, add_special_tokens=False).input_ids + [tokenizer.eos_token_id])
            )
        width = max(len(p) + len(r) for p, r in batch)
        ids = torch.full((len(batch), width), tokenizer.pad_token_id)
        labels = torch.full((len(batch), width), -100)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for i, (p, r) in enumerate(batch):
            ids[i, : len(p) + len(r)] = torch.tensor(p + r)
            labels[i, len(p) : len(p) + len(r)] = torch.tensor(r)
            mask[i, : len(p) + len(r)] = 1
        model(input_ids=ids, attention_mask=mask, labels=labels).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    model.eval()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, arith_tiny) -> Path:
    """The arithmetic tiny model (tests/conftest.py) after _answer_at_varied_lengths, in a folder of its own."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out = tmp_path_factory.mktemp("tiny") / "model"
    model = AutoModelForCausalLM.from_pretrained(arith_tiny, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(arith_tiny)
    _answer_at_varied_lengths(model, tokenizer)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def model(tiny):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(tiny, dtype=torch.float32, attn_implementation="sdpa").eval()


PROMPTS = [[5, 9, 31, 44, 7], [12, 3], [8, 8, 8, 60, 61, 62, 63, 2, 9]]


# ---- the batched sampler ------------------------------------------------------------------------


def _forward_log_probs(model, prompt: list[int], response: list[int]) -> list[float]:
    ids = torch.tensor([prompt + response])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0].float()
    log_probs = torch.log_softmax(logits, dim=-1)
    return [float(log_probs[len(prompt) - 1 + i, tok]) for i, tok in enumerate(response)]


def test_a_left_padded_batch_samples_what_each_prompt_alone_would(model):
    """Log-probs equal a teacher-forced forward of each row alone; greedy rows equal argmax decoding."""
    requests = [TokenRequest(p, max_tokens=12, temperature=1.0, seed=i) for i, p in enumerate(PROMPTS)]
    requests.append(TokenRequest(PROMPTS[0], max_tokens=12, temperature=0.0))
    samples = sample_batch(model, requests, eos_ids=[], pad_id=0)
    for request, sample in zip(requests, samples):
        assert len(sample.token_ids) == 12 and sample.finish_reason == "length"
        expected = _forward_log_probs(model, list(request.prompt_ids), sample.token_ids)
        assert sample.log_probs == pytest.approx(expected, abs=1e-4)
    greedy, ids = samples[-1].token_ids, list(PROMPTS[0])
    for token in greedy:
        with torch.no_grad():
            assert int(model(input_ids=torch.tensor([ids])).logits[0, -1].argmax()) == token
        ids.append(token)


def test_a_rows_banned_tokens_are_never_drawn_and_its_log_probs_stay_raw(model):
    """The forced-depth probe's hook: a row's rule bans tokens given what it drew so far; the other rows
    draw as without it, and the log-probs are the raw distribution's."""
    vocab = model.config.vocab_size
    allowed = {5, 6}

    def only_two(drawn):
        return [t for t in range(vocab) if t not in allowed] if len(drawn) < 6 else []

    requests = [TokenRequest(p, max_tokens=10, seed=i) for i, p in enumerate(PROMPTS[:2])]
    free = sample_batch(model, requests, eos_ids=[], pad_id=0)
    ruled = sample_batch(model, requests, eos_ids=[], pad_id=0, banned=[only_two, None])
    assert set(ruled[0].token_ids[:6]) <= allowed and ruled[1].token_ids == free[1].token_ids
    expected = _forward_log_probs(model, list(PROMPTS[0]), ruled[0].token_ids)
    assert ruled[0].log_probs == pytest.approx(expected, abs=1e-4)
    with pytest.raises(ValueError, match="row 0: every token is banned"):
        sample_batch(model, requests[:1], eos_ids=[], pad_id=0, banned=[lambda drawn: range(vocab)])


def test_seeded_rows_do_not_depend_on_their_batch(model):
    alone = sample_batch(model, [TokenRequest(PROMPTS[1], max_tokens=10, seed=7)], eos_ids=[], pad_id=0)
    mixed = sample_batch(
        model,
        [TokenRequest(PROMPTS[2], max_tokens=4, seed=1), TokenRequest(PROMPTS[1], max_tokens=10, seed=7)],
        eos_ids=[],
        pad_id=0,
    )
    assert alone[0].token_ids == mixed[1].token_ids
    assert sample_batch(model, [], eos_ids=[], pad_id=0) == []  # an empty batch: no forward pass


def test_each_rollout_request_gets_a_seed_of_its_own_whatever_the_arrival_timing():
    """verl sends no seed: the server numbers a step's requests by prompt and settings, so the n
    samples of a prompt get n seeds that depend on the step and the prompt, never on timing."""
    from types import SimpleNamespace

    from lie.engines.verl.cpu.rollout import TransformersServer
    from lie.engines.verl.cpu.seeds import SampleSeeds

    def server():
        return SimpleNamespace(config=SimpleNamespace(seed=42), global_steps=0, seeds=SampleSeeds(42))

    def seeds(srv, requests, step):
        srv.global_steps = step
        return [TransformersServer.request_seed(srv, r) for r in requests]

    a, b = TokenRequest([1, 2, 3], max_tokens=8), TokenRequest([4, 5], max_tokens=8)
    first = server()
    group = seeds(first, [a, a, a, a], 0)
    assert len(set(group)) == 4  # four samples of one prompt, four streams
    b_alone = seeds(server(), [b, b], 0)
    other = server()  # another run, another arrival order: b's requests first, interleaved
    assert seeds(other, [b, a, b, a, a, a], 0) == [b_alone[0], group[0], b_alone[1], *group[1:]]
    assert seeds(first, [a], 1)[0] not in group  # the next step starts again, on other seeds
    greedy = TokenRequest([1, 2, 3], max_tokens=8, temperature=0.0)
    assert seeds(server(), [greedy], 0)[0] != group[0]  # other settings, another key

    # tagged by our agent loop with (dataset index, session id): a sample's seed, whatever arrives first
    def tagged(srv, order):
        srv.global_steps = 0
        return {tag: TransformersServer.request_seed(srv, a, list(tag)) for tag in order}

    tags = [(7, 0), (7, 1), (7, 2), (7, 3)]
    assert (
        tagged(server(), tags)
        == tagged(server(), tags[::-1])
        == tagged(server(), [tags[2], *tags[:2], tags[3]])
    )
    assert len(set(tagged(server(), tags).values())) == 4


def test_the_rollout_configs_ignore_eos_reaches_every_request_as_in_verls_vllm_server():
    """verl's vLLM server defaults a request's ignore_eos to rollout.ignore_eos
    (vllm_async_server.py:624); the preflight's trial sets it so that every sample runs to the limit."""
    from types import SimpleNamespace

    from lie.engines.verl.cpu.rollout import TransformersServer

    def request(params, **config):
        cfg = SimpleNamespace(max_model_len=64, response_length=16, prompt_length=48, **config)
        return TransformersServer._request(SimpleNamespace(config=cfg), [1, 2, 3], params)

    assert request({}, ignore_eos=True).ignore_eos is True
    assert request({"ignore_eos": False}, ignore_eos=True).ignore_eos is False  # the request's own wins
    assert request({}).ignore_eos is False and request({}, ignore_eos=False).ignore_eos is False


@pytest.fixture
def server(tiny):
    """The CPU rollout server verl starts as a Ray actor, here in the test's process (its torch threads
    restored after: the server sets them as its actor would)."""
    from types import SimpleNamespace

    from lie.engines.verl.cpu.rollout import TransformersServer

    threads = torch.get_num_threads()
    config = SimpleNamespace(seed=0, max_model_len=64, response_length=16, prompt_length=48)
    yield TransformersServer(config, SimpleNamespace(local_path=str(tiny)), replica_rank=0)
    torch.set_num_threads(threads)


def test_a_weight_sync_that_misses_or_adds_a_tensor_is_an_error_and_a_full_prompt_is_refused(server):
    """A sync that leaves a tensor out (or brings one the model lacks) never leaves the server sampling
    from half-old weights unnoticed; a prompt that fills the context is refused before any sampling."""
    from types import SimpleNamespace

    from lie.engines.verl.cpu.rollout import TransformersServer

    state = {name: tensor.clone() for name, tensor in server.model.state_dict().items()}
    assert server.update_weights(state, global_steps=3) == len(state) and server.global_steps == 3
    name = next(n for n in state if n != "lm_head.weight")
    with pytest.raises(RuntimeError, match=rf"weight sync: missing \['{re.escape(name)}'\], unexpected \[\]"):
        server.update_weights({n: t for n, t in state.items() if n != name})
    with pytest.raises(RuntimeError, match=r"missing \[\], unexpected \['extra'\]"):
        server.update_weights({**state, "extra": torch.zeros(1)})
    with pytest.raises(ValueError, match="a prompt of 64 tokens leaves no room within 64"):
        server._request(list(range(64)), {})
    with pytest.raises(ValueError, match="verl's model config names no model path"):
        TransformersServer(server.config, SimpleNamespace(local_path=None, path=None), replica_rank=0)


def test_a_failed_batch_fails_each_request_in_it_and_the_server_serves_on(server, monkeypatch):
    """Requests that arrive together are sampled as one batch; if it fails, every caller waiting on it
    gets the error (none waits forever), and the next request is served."""
    import asyncio

    sample = server._sample
    monkeypatch.setattr(server, "_sample", lambda requests: (_ for _ in ()).throw(
        RuntimeError(f"a batch of {len(requests)} failed")))  # fmt: skip

    async def requests(count: int) -> list:
        calls = (server.generate([5, 9, 31 + i], {"temperature": 1.0}, f"r{i}") for i in range(count))
        return await asyncio.gather(*calls, return_exceptions=True)

    async def failed_then_served() -> tuple[list, list]:
        failed = await requests(2)
        monkeypatch.setattr(server, "_sample", sample)
        return failed, await requests(1)

    failed, served = asyncio.run(failed_then_served())
    assert [str(r) for r in failed] == ["a batch of 2 failed"] * 2
    assert len(served[0].token_ids) >= 1 and served[0].stop_reason == "completed"


def test_the_adapter_in_verls_worker_sends_full_tensors_and_refuses_another_wire_format(tmp_path):
    """The rollout verl builds in its FSDP worker: a DTensor shard (FSDP2's parameters) is sent whole,
    as a plain CPU tensor of its own; verl's delta flushes are refused by name; resume and release
    (verl's sleep and wake of GPU memory) have nothing to do. One gloo rank in this process."""
    import asyncio
    from types import SimpleNamespace

    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor, Shard, distribute_tensor

    from lie.engines.verl.cpu.rollout import TransformersAdapter, full_cpu_state

    config = SimpleNamespace(
        tensor_model_parallel_size=1, data_parallel_size=1, pipeline_model_parallel_size=1
    )
    adapter = TransformersAdapter(config, SimpleNamespace(local_path=None), None, replica_rank=0)
    assert adapter.is_leader and adapter.replica_rank == 0
    with pytest.raises(ValueError, match="the CPU rollout takes full named tensors, not 'delta_flush'"):
        asyncio.run(adapter.update_weights(iter([]), wire_format="delta_flush"))
    assert asyncio.run(adapter.resume(["weights"])) is None and asyncio.run(adapter.release()) is None
    whole, bias = torch.arange(6.0).reshape(2, 3), torch.ones(2)
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'rendezvous'}", rank=0, world_size=1)
    try:
        shard = distribute_tensor(whole, init_device_mesh("cpu", (1,)), [Shard(0)])
        assert isinstance(shard, DTensor)
        state = full_cpu_state([("w", shard), ("b", bias)])
    finally:
        dist.destroy_process_group()
    assert type(state["w"]) is torch.Tensor and torch.equal(state["w"], whole)
    assert torch.equal(state["b"], bias) and state["b"].data_ptr() != bias.data_ptr()  # a copy


def test_the_server_answers_every_call_verls_replica_makes_on_its_servers(server):
    """verl's RolloutReplica (verl/workers/rollout/replica.py, read from the installed verl) calls these
    methods on each server (wake_up, sleep, abort_all_requests, the KV-cache calls, profiling): the CPU
    server has each, taking the same arguments, with nothing to do on a CPU. A call verl adds fails here,
    naming it, before a run meets it."""
    import ast
    import asyncio
    import inspect

    import verl.workers.rollout.replica as replica

    calls = {}
    for node in ast.walk(ast.parse(inspect.getsource(replica))):
        target = node.func if isinstance(node, ast.Call) else None
        if (isinstance(target, ast.Attribute) and target.attr == "remote" and isinstance(target.value, ast.Attribute)
                and isinstance(target.value.value, ast.Name) and target.value.value.id == "server"):  # fmt: skip
            calls[target.value.attr] = {kw.arg: True for kw in node.keywords if kw.arg}
    assert {"wake_up", "sleep", "abort_all_requests", "clear_kv_cache"} <= set(calls), calls
    missing = sorted(name for name in calls if not hasattr(server, name))
    assert not missing, f"verl's replica calls {missing}, which the CPU server lacks"

    async def each():
        return {name: await getattr(server, name)(**kwargs) for name, kwargs in calls.items()}

    answers = asyncio.run(each())
    assert answers.pop("abort_all_requests") == {"aborted_count": 0, "request_ids": []}
    assert set(answers.values()) == {None}


def test_top_k_one_and_a_tiny_top_p_are_greedy_and_temperature_matters(model):
    greedy = sample_batch(model, [TokenRequest(PROMPTS[0], 10, temperature=0.0)], [], 0)[0].token_ids
    for request in (TokenRequest(PROMPTS[0], 10, temperature=1.5, top_k=1, seed=3),
                    TokenRequest(PROMPTS[0], 10, temperature=1.5, top_p=1e-6, seed=3)):  # fmt: skip
        assert sample_batch(model, [request], [], 0)[0].token_ids == greedy
    hot = [
        sample_batch(model, [TokenRequest(PROMPTS[0], 10, temperature=5.0, seed=s)], [], 0)[0]
        for s in range(4)
    ]
    assert any(s.token_ids != greedy for s in hot)


def test_end_of_sequence_stops_a_row_unless_ignored(model):
    first = sample_batch(model, [TokenRequest(PROMPTS[2], 8, temperature=0.0)], [], 0)[0].token_ids[0]
    rows = sample_batch(
        model,
        [
            TokenRequest(PROMPTS[2], 8, temperature=0.0),
            TokenRequest(PROMPTS[2], 8, temperature=0.0, ignore_eos=True),
        ],
        eos_ids=[first],
        pad_id=0,
    )
    assert rows[0].token_ids == [first] and rows[0].finish_reason == "stop"  # the EOS is kept, as vLLM does
    assert len(rows[1].token_ids) == 8 and rows[1].finish_reason == "length"


# ---- the patches: each exists because a verl line still fails on a CPU ---------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def probes(tiny) -> ProbeSets:
    """Probes in fresh interpreters of this environment (one process, a fork a probe: tests/tripwires.py),
    without verl settings of the calling process: the upstream lines our patches work around, or ours."""
    process_group = (  # If this changes, verl builds a valid CPU backend now: remove patches._init_process_group
        "import lie.engines.verl.cpu.platform\n"
        "import verl.utils.distributed as d\n"
        "try:\n    d.initialize_global_process_group_ray()\n    print('RAN')\n"
        "except Exception as e:\n    print('FAILED', e)\n"
    )
    distributed = {"VERL_PLATFORM": "cpu", "RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1",
                   "MASTER_PORT": str(_free_port())}  # fmt: skip
    value_head = (  # If this changes, verl (or TRL) fixed the import: remove patches._no_value_head_patch
        "from transformers import AutoModelForCausalLM\n"
        "from verl.models.transformers.monkey_patch import apply_monkey_patch\n"
        f"m = AutoModelForCausalLM.from_pretrained({str(tiny)!r})\n"
        "try:\n    apply_monkey_patch(m, use_remove_padding=True)\n    print('RAN')\n"
        "except ImportError as e:\n    print('FAILED', e)\n"
    )
    gpu_visible = (  # the plugin itself, imported where torch sees a GPU
        "import sys, torch\n"
        "torch.cuda.is_available = lambda: True\n"
        "try:\n    import lie.engines.verl.cpu.plugin\n"
        "except RuntimeError as e:\n    print('REFUSED', e)\n"
        "print(sorted(m for m in sys.modules if m.startswith('lie.engines.verl.cpu.')))"
    )
    registries = (  # rollout vllm names our classes on both sides, and nothing of vLLM is imported
        "import json, sys\n"
        "import lie.engines.verl.cpu.plugin\n"
        "from verl.workers.rollout import base\n"
        "from verl.workers.rollout.replica import RolloutReplicaRegistry as r\n"
        "print(json.dumps([r._registry['vllm'].__module__, base._ROLLOUT_REGISTRY[('vllm', 'async')],\n"
        "                  r._registry['transformers']().__name__, 'vllm' in sys.modules]))\n"
    )
    fsdp1 = (  # verl's FSDP1 engine (the cluster's strategy) on a CPU without patches.py: torch, then verl
        "import torch, torch.distributed as dist\n"
        "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
        "dist.init_process_group('gloo')\n"
        "try:\n    FSDP(torch.nn.Linear(4, 4), sync_module_states=True, device_id=torch.device('cpu'))\n"
        "    print('SYNC RAN')\n"
        "except ValueError as e:\n    print('SYNC FAILED', e)\n"
        "import lie.engines.verl.cpu.platform\n"
        "from verl.utils import fsdp_utils\n"
        "model = FSDP(torch.nn.Linear(4, 4), device_id=torch.device('cpu'))\n"
        "try:\n    fsdp_utils.load_fsdp_model_to_gpu(model)\n    print('LOAD RAN')\n"
        "except RuntimeError as e:\n    print('LOAD FAILED', e)\n"
    )
    rollout_on_gpu = (  # a GPU run with gpu_rollout transformers: the rollout server, none of the CPU backend
        "import json, sys, torch\n"
        "torch.cuda.is_available = lambda: True\n"
        "import lie.engines.verl.cpu.rollout_plugin\n"
        "from verl.workers.rollout import base\n"
        "from verl.workers.rollout.replica import RolloutReplicaRegistry as r\n"
        "from verl.experimental.agent_loop.agent_loop import _agent_loop_registry as loops\n"
        "print(json.dumps([r._registry['transformers']().__name__, base._ROLLOUT_REGISTRY[('transformers', 'async')],\n"
        "                  'lie_single_turn' in loops,\n"
        "                  sorted(m for m in sys.modules if m.startswith('lie.engines.verl.cpu.'))]))\n"
    )
    clean = {k: v for k, v in os.environ.items() if not k.startswith("VERL_")}
    return ProbeSets(
        lambda probes: run_probes(sys.executable, probes, preload=("torch", "transformers"), env=clean),
        tripwires={  # the upstream lines alone: make test-all (they change only with envs/*.lock)
            "process_group": {"code": process_group, "env": distributed},
            "value_head": {"code": value_head},
            "fsdp1": {"code": fsdp1, "env": {**distributed, "MASTER_PORT": str(_free_port())}},
        },
        ours={  # our own modules: what the plugin loads and refuses
            "gpu_visible": {"code": gpu_visible},
            "registries": {"code": registries, "env": {"VERL_PLATFORM": "cpu"}},
            "rollout_on_gpu": {"code": rollout_on_gpu},
        },
    )


@pytest.mark.heavy
def test_verls_default_process_group_backend_still_fails_on_a_cpu(probes):
    """If this fails, verl builds a valid CPU backend now: remove patches._init_process_group."""
    out = probes("tripwires")["process_group"]
    assert "FAILED" in out.stdout and "Duplicate device type" in out.stdout, out.stdout + out.stderr


@pytest.mark.heavy
def test_verls_trl_value_head_import_still_fails(probes):
    """If this fails, verl (or TRL) fixed the import: remove patches._no_value_head_patch."""
    out = probes("tripwires")["value_head"]
    assert "FAILED" in out.stdout and "AutoModelForCausalLMWithValueHead" in out.stdout, (
        out.stdout + out.stderr
    )


@pytest.mark.heavy
def test_torchs_fsdp1_still_refuses_to_sync_cpu_module_states(probes):
    """If this fails, torch's FSDP1 syncs CPU states itself now: remove patches._states_on_any_device."""
    out = probes("tripwires")["fsdp1"]
    assert "SYNC FAILED The module has CPU parameters or buffers" in out.stdout, out.stdout + out.stderr


@pytest.mark.heavy
def test_verls_fsdp1_load_still_names_the_cpu_device_cpu_cpu(probes):
    """If this fails, verl's load_fsdp_model_to_gpu names a CPU device torch accepts: remove
    patches._load_fsdp_model_to_device."""
    out = probes("tripwires")["fsdp1"]
    assert "LOAD FAILED Invalid device string: 'cpu:cpu'" in out.stdout, out.stdout + out.stderr


def test_the_backend_is_refused_where_a_gpu_is_visible(probes):
    from lie.engines.verl import cpu as verl_cpu

    env = verl_cpu.environment({"CUDA_VISIBLE_DEVICES": "", "VERL_USE_EXTERNAL_MODULES": "other"})
    assert "CUDA_VISIBLE_DEVICES" not in env and env["VERL_PLATFORM"] == "cpu"
    assert env["VERL_USE_EXTERNAL_MODULES"] == f"other,{verl_cpu.PLUGIN}"
    # the plugin itself, imported where torch sees a GPU: refused before any of the backend loads
    out = probes("ours")["gpu_visible"]
    assert out.returncode == 0, out.stderr[-3000:]
    assert "REFUSED lie.engines.verl.cpu is verl's CPU backend" in out.stdout, out.stdout
    assert "unset VERL_USE_EXTERNAL_MODULES" in out.stdout
    assert out.stdout.strip().endswith("\n[]")  # no platform, engine or rollout module was loaded


def test_rollout_vllm_is_ours_in_verls_registries_and_loads_vllm_only_when_used(probes):
    """Issue 32: the plugin points verl's replica registry and its worker-side rollout registry for
    ``vllm`` at lie.engines.verl.cpu.vllm_rollout (verl's own server, our worker extension), lazily:
    in this environment, which has no vLLM, importing the plugin imports none."""
    out = probes("ours")["registries"]
    assert out.returncode == 0, out.stderr[-3000:]
    loader, adapter, transformers, vllm_loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert loader == "lie.engines.verl.cpu.vllm_registry"
    assert adapter == "lie.engines.verl.cpu.vllm_rollout.ServerAdapter"
    assert transformers == "TransformersReplica" and vllm_loaded is False


def test_the_cpu_rollout_is_chosen_per_run_and_vllm_adds_only_what_the_cpu_build_needs():
    from lie.engines.verl import cpu as verl_cpu

    plain, vllm = verl_cpu.overrides(1, 1), verl_cpu.overrides(1, 1, "vllm")
    assert plain["actor_rollout_ref.rollout.name"] == "transformers"
    assert {k: v for k, v in vllm.items() if plain.get(k) != v} == verl_cpu.VLLM_OVERRIDES
    with pytest.raises(ValueError, match="CPU rollout 'sglang' is not one of"):
        verl_cpu.overrides(1, 1, "sglang")


def test_a_gpu_run_samples_with_the_transformers_server_where_vllm_is_not_installed(probes):
    """training.gpu_rollout transformers: verl's cluster composition (FSDP1 on the GPUs) with only the rollout
    and its agent loop changed, checked by verl; every verl process imports rollout_plugin, which registers
    the server where a GPU is visible and loads nothing of the CPU platform, engines or patches."""
    from small import paper_config

    from lie.config import Config
    from lie.engines.verl import cpu as verl_cpu
    from lie.engines.verl import overrides as verl_overrides

    config = paper_config()
    config["training"]["gpu_rollout"] = "transformers"
    cfg = Config.of(config)
    run = "qwen3-4b-base_dapo_gspo_lie"
    inputs = verl_overrides.VerlInputs("train.parquet", ("val.parquet",), "m")
    with_server = verl_overrides.compose(verl_overrides.overrides(cfg, cfg.run(run), inputs, device="gpu"))
    verl_overrides.check_composed(with_server)
    cluster = Config.of(paper_config())
    plain = verl_overrides.compose(verl_overrides.overrides(cluster, cluster.run(run), inputs, device="gpu"))
    rollout = with_server.actor_rollout_ref.rollout
    assert (rollout.name, rollout.agent.default_agent_loop) == ("transformers", verl_cpu.AGENT_LOOP)
    assert plain.actor_rollout_ref.rollout.name == "vllm"
    # such a machine lacks flash-attn too: verl's actor takes torch's attention
    assert with_server.actor_rollout_ref.model.override_config.attn_implementation == "sdpa"
    assert with_server.actor_rollout_ref.actor == plain.actor_rollout_ref.actor  # the cluster's actor, FSDP1
    assert with_server.trainer == plain.trainer and with_server.actor_rollout_ref.actor.strategy == "fsdp"
    env = verl_cpu.with_module({"VERL_USE_EXTERNAL_MODULES": "other"}, verl_cpu.ROLLOUT_PLUGIN)
    assert (
        env["VERL_USE_EXTERNAL_MODULES"] == f"other,{verl_cpu.ROLLOUT_PLUGIN}" and "VERL_PLATFORM" not in env
    )
    out = probes("ours")["rollout_on_gpu"]
    assert out.returncode == 0, out.stderr[-3000:]
    replica, adapter, loop, loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert replica == "TransformersReplica" and adapter == "lie.engines.verl.cpu.rollout.TransformersAdapter"
    assert loop and not {"lie.engines.verl.cpu.platform", "lie.engines.verl.cpu.patches"} & set(loaded)


def test_the_cpu_backend_keeps_the_clusters_shape_and_strategy(monkeypatch):
    """nnodes x n_gpus_per_node ranks as verl's node pools (they ran as nnodes ranks on one pool), the
    actor's strategy the recipe's (it was forced to fsdp2); without RAY_ADDRESS a Ray of verl's own (ray.init
    joined any cluster another process had started on the machine, and then refused the resources); with
    it (a running Ray cluster, as the Slurm launcher starts) no resources for ray.init, and the CPU
    backend's environment carried to the cluster's workers in the job's runtime_env."""
    from lie.engines.verl import cpu as verl_cpu

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    local = verl_cpu.overrides(2, 4)
    assert (local["trainer.nnodes"], local["trainer.n_gpus_per_node"]) == (2, 4)
    assert local["+ray_kwargs.ray_init.num_gpus"] == 8
    assert local["+ray_kwargs.ray_init.address"] == "local"  # never a Ray another process started here
    assert not any("strategy" in key for key in local)
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:6380")
    joined = verl_cpu.overrides(2, 2)
    assert (joined["trainer.nnodes"], joined["trainer.n_gpus_per_node"]) == (2, 2)
    ray_init = {k.removeprefix("+ray_kwargs.ray_init."): v for k, v in joined.items() if "ray_init." in k}
    # only the environment the cluster's workers lack (they inherit the raylets', not this process's)
    assert ray_init == {f"runtime_env.env_vars.{k}": verl_cpu.environment()[k] for k in verl_cpu.WORKER_ENV}
    assert ray_init["runtime_env.env_vars.VERL_PLATFORM"] == "cpu"


def test_every_call_of_verls_platform_interface_runs_on_the_cpu_platform():
    """verl's ``PlatformBase`` (its abstract methods, read from the installed verl) on CPUPlatform, each
    called as verl calls it: seeds seed torch's generator, the stream and memory calls do nothing and
    touch no CUDA, the profiler range is a context, and the device module answers what ``torch.cuda``
    would with ``torch.cpu``'s own for the rest. A method verl adds makes the class abstract: it fails."""
    from verl.plugin.platform.platform_base import PlatformBase

    from lie.engines.verl.cpu.platform import DEVICE_MODULE, CPUPlatform

    platform = CPUPlatform()  # TypeError if verl declares a method the class lacks
    abstract = set(PlatformBase.__abstractmethods__)
    calls = {
        "device_name": lambda: platform.device_name == "cpu",
        "vendor_name": lambda: platform.vendor_name == "cpu",
        "device_module": lambda: platform.device_module is DEVICE_MODULE,
        "is_available": lambda: platform.is_available() is True,
        "current_device": lambda: platform.current_device() == torch.device("cpu"),
        "device_count": lambda: platform.device_count() == 1,
        "set_device": lambda: platform.set_device(0) is None,
        "synchronize": lambda: platform.synchronize() is None and platform.synchronize(0) is None,
        "set_allocator_settings": lambda: platform.set_allocator_settings("expandable_segments:True") is None,
        "empty_cache": lambda: platform.empty_cache() is None,
        "get_device_capability": lambda: platform.get_device_capability() == (None, None),
        "communication_backend_name": lambda: platform.communication_backend_name() == "gloo",
        "visible_devices_envvar": lambda: platform.visible_devices_envvar() == "CUDA_VISIBLE_DEVICES",
        "profiler_start": lambda: platform.profiler_start() is None,
        "profiler_stop": lambda: platform.profiler_stop() is None,
        "ray_resource_name": lambda: platform.ray_resource_name() == "GPU",
        "ray_noset_envvars": lambda: platform.ray_noset_envvars() == [],
        "is_ipc_supported": lambda: platform.is_ipc_supported() is False,
        "cudart": lambda: platform.cudart() is None,
    }

    def seeds(seed_call) -> bool:
        seed_call(1234)
        first = torch.rand(3)
        torch.manual_seed(1234)
        return torch.equal(first, torch.rand(3))

    calls["manual_seed"] = lambda: seeds(platform.manual_seed)
    calls["manual_seed_all"] = lambda: seeds(platform.manual_seed_all)

    def ranged() -> bool:
        with platform.nvtx_range("step"):
            return True

    calls["nvtx_range"] = ranged
    assert abstract <= set(calls), f"verl's platform interface adds {sorted(abstract - set(calls))}"
    failed = [name for name in sorted(abstract) if not calls[name]()]
    assert not failed, failed
    assert DEVICE_MODULE.Stream is torch.cpu.Stream  # anything else: torch.cpu's own
    assert not torch.cuda.is_initialized()


def test_the_replay_buffer_polls_fast_on_the_cpu_only(monkeypatch):
    """LIETrainer polls verl's replay buffer every CPU_POLL_S on the CPU backend, verl's 2 s on GPUs;
    verl's poll still sleeps for the buffer's ``poll_interval`` (else the setting does nothing)."""
    import inspect
    from types import SimpleNamespace

    from verl.trainer.ppo.v1 import PPOTrainerSync
    from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer

    from lie.engines.verl.trainer import CPU_POLL_S, LIETrainer

    assert "time.sleep(self.poll_interval)" in inspect.getsource(ReplayBuffer._wait_for_next_poll)
    assert inspect.signature(ReplayBuffer).parameters["poll_interval"].default == 2.0
    monkeypatch.setattr(
        PPOTrainerSync, "_build_replay_buffer", lambda self: SimpleNamespace(poll_interval=2.0)
    )
    for device, poll in (("cpu", CPU_POLL_S), ("cuda", 2.0)):
        trainer = LIETrainer.__new__(LIETrainer)  # the method alone: no Ray, no workers
        trainer.config = SimpleNamespace(trainer=SimpleNamespace(device=device))
        assert trainer._build_replay_buffer().poll_interval == poll


def test_the_trainer_saves_ahead_of_the_jobs_end_where_verl_would_not(monkeypatch):
    """verl's v1 trainer saves on save_freq and at the last step only; LIETrainer also saves when the
    job's end (verl's MLP_CURRENT_CAPACITY_BLOCK_EXPIRATION_TIMESTAMP) leaves no room for another step
    and a save, by verl's own should_save_ckpt_esi; through main_ppo: the heavy test below."""
    from types import SimpleNamespace

    from verl.trainer.ppo.v1 import PPOTrainerSync

    from lie.engines.verl.trainer import LIETrainer

    monkeypatch.setattr(PPOTrainerSync, "on_step_end", lambda self: None)  # verl's weight sync
    saved = []

    def trainer(step: int, save_freq: int = 10) -> LIETrainer:
        t = LIETrainer.__new__(LIETrainer)  # the methods alone: no Ray, no workers
        t.config = SimpleNamespace(trainer=SimpleNamespace(save_freq=save_freq, esi_redundant_time=300.0))
        t.global_steps, t.total_training_steps, t._longest_step_s = step, 100, 120.0
        t.timing_raw = {}
        t._save_checkpoint = lambda: saved.append(step)
        t.on_step_begin()
        return t

    monkeypatch.delenv("SAGEMAKER_CURRENT_CAPACITY_BLOCK_EXPIRATION_TIMESTAMP", raising=False)
    monkeypatch.setenv("MLP_CURRENT_CAPACITY_BLOCK_EXPIRATION_TIMESTAMP", str(time.time() + 3600))
    trainer(7).on_step_end()  # an hour left: 60 s save + 120 s step + 300 s margin fit
    assert saved == []
    monkeypatch.setenv("MLP_CURRENT_CAPACITY_BLOCK_EXPIRATION_TIMESTAMP", str(time.time() + 400))
    ahead = trainer(7)
    ahead.on_step_end()
    assert "save_checkpoint" in ahead.timing_raw  # timed as verl's own saves: the preflight sees it
    trainer(10).on_step_end()  # verl saved this step itself (save_freq)
    trainer(99, save_freq=0).on_step_end()  # saving off
    assert saved == [7]
    monkeypatch.delenv("MLP_CURRENT_CAPACITY_BLOCK_EXPIRATION_TIMESTAMP")
    trainer(8).on_step_end()  # no end known
    assert saved == [7]
    # verl validates after on_step_end and logs the step after that: the margin holds the longest validation
    monkeypatch.setattr(PPOTrainerSync, "on_validate_begin", lambda self: None)
    monkeypatch.setattr(PPOTrainerSync, "on_validate_end", lambda self: None)
    monkeypatch.setenv("MLP_CURRENT_CAPACITY_BLOCK_EXPIRATION_TIMESTAMP", str(time.time() + 700))
    trainer(11).on_step_end()  # 700 s left: room for a 120 s step and the save
    assert saved == [7]
    validated = trainer(11)
    clock = iter([1000.0, 1400.0])  # a 400 s validation
    monkeypatch.setattr(time, "monotonic", lambda: next(clock))
    validated.on_validate_begin()
    validated.on_validate_end()
    monkeypatch.setattr(time, "monotonic", lambda: 2000.0)
    validated._step_started = 2000.0
    validated.on_step_end()  # 120 s step + 400 s validation + 60 s save + 300 s margin > 700 s left
    assert saved == [7, 11]


# ---- verl's main_ppo, end to end on the CPU -----------------------------------------------------


def _setup(root: Path, tiny: Path, **training) -> Path:
    """A two-run config on the tiny model (thinking off), an arithmetic training set and a validation set."""
    settings = {
        "save_freq": 1,
        "max_steps": 2,
        "val_sets": ["arith-val"],
        "test_freq": 2,
        "keep_checkpoints": 3,
    }
    config = small_config(root / "out", tiny, **{**settings, **training})
    config["models"]["tiny"]["enable_thinking"] = False
    config["datasets"]["eval"]["arith-val"] = copy.deepcopy(config["datasets"]["eval"]["math500"])
    config["experiments"]["tiny_gspo_lie"]["extra_tokens"] = 8
    config["reward"]["tolerance"] = 8  # L_ref 40 - 8 > the 24-token limit: every wrong answer gets R_len
    write_parquet(root / "train.parquet", arithmetic_rows(8, ref_len=40))
    write_parquet(root / "val.parquet", validation_rows(4, "arith-val"))
    return write_config(root / "config.yaml", config)


def _lie(*args: str, **kwargs) -> subprocess.Popen | subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lie", *args], capture_output=True, text=True, **kwargs)


def _train_args(root: Path, tiny: Path, run: str = "tiny_gspo_lie") -> list[str]:
    return ["train", run, "--config", str(root / "config.yaml"), "--engine", "verl",
            "--train-file", str(root / "train.parquet"), "--val-file", str(root / "val.parquet"),
            "--model", str(tiny)]  # fmt: skip


@pytest.mark.heavy
def test_a_killed_run_resumes_from_its_last_complete_checkpoint(tmp_path, tiny):
    """SIGKILL of the whole process group after step 1's checkpoint; the rerun finishes step 2 once."""
    _setup(tmp_path, tiny, max_steps=3)
    rundir = RunDir(tmp_path / "out", "tiny_gspo_lie")
    tracker = rundir.checkpoints / "latest_checkpointed_iteration.txt"
    proc = subprocess.Popen(
        [sys.executable, "-m", "lie", *_train_args(tmp_path, tiny)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 600
    while not (tracker.exists() and tracker.read_text().strip() == "1"):
        assert proc.poll() is None and time.monotonic() < deadline, "verl stopped before its first checkpoint"
        time.sleep(0.5)
    # into step 2, before its save: its first rollouts are written (after step 1 a tiny step can take less than a
    # second, so a fixed wait could land after step 2's save and the rerun would rightly resume from step 2)
    while not list(rundir.rollouts_dir.glob("step-000002.*")):
        assert proc.poll() is None and time.monotonic() < deadline, "verl stopped before step 2"
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not rundir.final_json.exists()
    result = _lie(*_train_args(tmp_path, tiny), timeout=900)
    assert result.returncode == 0, result.stderr[-4000:]
    # verl's trainer prints the folder it resumes from: step 1's checkpoint, not a fresh start
    assert re.search(r"Resuming from \S*global_step_1\b", result.stdout + result.stderr), result.stdout[
        -3000:
    ]
    rollouts = read_rollouts(rundir)
    assert [sum(r["step"] == s for r in rollouts) for s in (1, 2, 3)] == [8, 8, 8]  # nothing doubled
    assert json.loads(rundir.final_json.read_text())["step"] == 3
    assert [m["step"] for m in read_metrics(rundir)] == [1, 2, 3]


@pytest.mark.heavy
def test_a_resume_at_another_world_size_stops_with_one_line_or_restarts(tmp_path, tiny):
    """verl loads only FSDP shards of its own world size (model_world_size_{W}_rank_{r}.pt): a run
    saved by 2 CPU ranks (`--nnodes 2`, as the Slurm launcher passes it) and launched again with 1
    stops before verl starts, naming both sizes; with training.world_size_change: restart it trains
    afresh at the new size, the old outputs set aside."""
    from lie.engines.verl.overrides import COMPLETED

    config_file = _setup(tmp_path, tiny, max_steps=1)
    rundir = RunDir(tmp_path / "out", "tiny_gspo_lie")
    result = _lie(*_train_args(tmp_path, tiny), "--nnodes", "2", timeout=900)
    assert result.returncode == 0, result.stderr[-4000:]
    assert (rundir.checkpoints / "global_step_1/actor/model_world_size_2_rank_1.pt").is_file()
    # as after a kill between verl's last save and its exit: lie has not marked the run complete
    (rundir.checkpoints / COMPLETED).unlink()
    rundir.final_json.unlink()
    result = _lie(*_train_args(tmp_path, tiny), "--nnodes", "1", timeout=300)
    assert result.returncode != 0 and "running verl" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert "saved by 2 FSDP ranks and this launch has 1" in last and "world_size_change: restart" in last
    assert (rundir.checkpoints / "global_step_1/actor/model_world_size_2_rank_0.pt").is_file()  # untouched

    config = yaml.safe_load(config_file.read_text())
    config["training"]["world_size_change"] = "restart"
    config_file.write_text(yaml.safe_dump(config, sort_keys=False))
    result = _lie(*_train_args(tmp_path, tiny), "--nnodes", "1", timeout=900)
    assert result.returncode == 0, result.stderr[-4000:]
    assert (rundir.checkpoints / "global_step_1/actor/model_world_size_1_rank_0.pt").is_file()
    (moved,) = rundir.superseded.iterdir()
    assert (moved / "checkpoints/global_step_1/actor/model_world_size_2_rank_0.pt").is_file()
    assert len(read_rollouts(moved)) == 8 and len(read_rollouts(rundir)) == 8
    assert json.loads(rundir.final_json.read_text())["step"] == 1


@pytest.mark.heavy
def test_the_jobs_end_forces_a_save_and_a_kill_after_it_resumes_from_that_step(tmp_path, tiny):
    """save_freq 10 of 3 steps saves at step 3 only; a job that ends within esi_redundant_time saves
    step 1 (LIETrainer, verl's should_save_ckpt_esi), and a kill after it resumes from step 1."""
    config_file = _setup(tmp_path, tiny, max_steps=3, save_freq=10, test_freq=3)
    config = yaml.safe_load(config_file.read_text())
    config["cluster"]["esi_redundant_time_s"] = 3600
    config_file.write_text(yaml.safe_dump(config, sort_keys=False))
    rundir = RunDir(tmp_path / "out", "tiny_gspo_lie")
    tracker = rundir.checkpoints / "latest_checkpointed_iteration.txt"
    end = {"MLP_CURRENT_CAPACITY_BLOCK_EXPIRATION_TIMESTAMP": str(time.time() + 1800)}  # as ray_on_slurm.sh
    proc = subprocess.Popen(
        [sys.executable, "-m", "lie", *_train_args(tmp_path, tiny)], env={**os.environ, **end},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 600
    while not (tracker.exists() and tracker.read_text().strip() == "1"):
        assert proc.poll() is None and time.monotonic() < deadline, "no save at step 1 before the run ended"
        time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert (rundir.checkpoints / "global_step_1" / "actor").is_dir() and not rundir.final_json.exists()
    result = _lie(*_train_args(tmp_path, tiny), timeout=900)
    assert result.returncode == 0, result.stderr[-4000:]
    assert re.search(r"Resuming from \S*global_step_1\b", result.stdout + result.stderr), result.stdout[
        -3000:
    ]
    assert json.loads(rundir.final_json.read_text())["step"] == 3
    assert [m["step"] for m in read_metrics(rundir)] == [1, 2, 3]


@pytest.mark.parametrize("text", ["", "four\n", "1e3"])
def test_the_final_checkpoint_with_an_unreadable_tracker_is_one_line(tmp_path, text):
    """verl's tracker file is read one way (lie.engines.verl.checkpoints.tracked_step): a torn or edited
    tracker is a LieError naming it, not a ValueError from int()."""
    from lie.core.errors import LieError
    from lie.engines.verl.checkpoints import TRACKER
    from lie.engines.verl.overrides import final_checkpoint
    from lie.formats.runs import RunDir

    rundir = RunDir(tmp_path, "r")
    rundir.checkpoints.mkdir(parents=True)
    (rundir.checkpoints / TRACKER).write_text(text, encoding="utf-8")
    with pytest.raises(LieError, match=f"{TRACKER} .*names no step"):
        final_checkpoint(rundir, "final")
    (rundir.checkpoints / TRACKER).write_text("4\n", encoding="utf-8")
    assert final_checkpoint(rundir, "final") == rundir.checkpoints / "global_step_4"
