"""verl's vLLM rollout pieces on vLLM's CPU build (``.venv-vllm``): what runs, and the lines that block the rest.

verl's worker extension and its bucketed weight sync over shared memory run under vLLM's
``AsyncLLM`` with two patches (``lie.engines.verl.cpu.vllm_worker``); each patched line has a test
here that fails once verl or vLLM changes it, so that the patch goes then. ``main_ppo`` with verl's
vLLM rollout runs in the smoke DAG's continual child (``make smoke``; ``make test-all``:
tests/test_verl_main_ppo.py checks that every step's sync reached the server).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from test_vllm_cpu import VLLM_VENV, cpu_env, vllm_lie
from tripwires import ProbeSets, run_probes
from vllm_tiny import shaped_tiny

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def test_verl_weight_sync_reaches_vllm_async_engine(tmp_path):
    """verl's sender pushes new weights; vLLM's greedy continuation becomes the new model's. The sync
    alone, outside main_ppo (where it was first made to work; ~40 s where main_ppo with a vLLM server
    takes ~4 min); ``make test-all`` also checks it through main_ppo: the smoke's continual run starts its
    server on dummy weights and its log-probs match the actor's at every step
    (test_the_continual_run_samples_with_verls_vllm_server_on_the_synced_weights)."""
    old, new = shaped_tiny(tmp_path / "old", seed=0), shaped_tiny(tmp_path / "new", seed=5)
    script = REPO / "tests" / "vllm_weight_sync.py"
    vllm_lie()
    env = {**cpu_env(), "VERL_PLATFORM": "cpu"}
    env.pop("VLLM_ENABLE_V1_MULTIPROCESSING")  # AsyncLLM runs its engine core in its own process
    result = subprocess.run(
        [str(VLLM_VENV / "bin" / "python"), str(script), str(old), str(new)],
        env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-4000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["after"] == out["transformers"] and out["after"] != out["before"]


@pytest.fixture(scope="module")
def probes() -> ProbeSets:
    """Probes in fresh interpreters of .venv-vllm (one process importing torch and vLLM once, a fork a
    probe: tests/tripwires.py): the upstream lines our patches work around, or ours."""
    vllm_lie()  # fails with the fix when .venv-vllm is missing
    shimmed = (  # the first module accepted as the shim does it, the second imported as it is
        "import importlib.metadata as m\n"
        "original = m.version\n"
        "m.version = lambda name: original('vllm-cpu') + '+cpu' if name == 'vllm' else original(name)\n"
        "import verl.third_party.vllm\n"
        "m.version = original\n"
        "import verl.workers.rollout.vllm_rollout\n"
    )
    packing = (
        "import inspect\n"
        "from vllm.model_executor.layers.linear import UnquantizedLinearMethod as m\n"
        "print(inspect.getsource(m.process_weights_after_loading))\n"
    )
    extension = (
        "import lie.engines.verl.cpu.vllm_worker as w\n"
        "from verl.workers.rollout.vllm_rollout.utils import vLLMColocateWorkerExtension as v\n"
        "import verl.utils.device as d\n"
        "import vllm.model_executor.layers.utils as u\n"
        "w.keep_linear_weights()\n"
        "patched = u.dispatch_cpu_unquantized_gemm\n"
        "w.keep_linear_weights()  # a second call (another import path) patches nothing more\n"
        "print(w.vLLMColocateWorkerExtension is v, d.is_support_ipc(), d.get_device_name(),\n"
        "      u.dispatch_cpu_unquantized_gemm is patched, patched.__wrapped__ is not patched)\n"
    )
    server = (  # the lines of verl's vLLM server that lie.engines.verl.cpu.vllm_rollout works around
        "import inspect, json\n"
        "from lie.engines.verl.cpu.vllm_version import import_verl_vllm\n"
        "import_verl_vllm()\n"
        "from verl.workers.rollout.vllm_rollout.vllm_async_server import vLLMHttpServer as s\n"
        "from vllm.platforms import current_platform as p\n"
        "import lie.engines.verl.cpu.vllm_rollout as ours\n"
        "from types import SimpleNamespace as N\n"
        "server, refused = object.__new__(ours.CPUvLLMHttpServer), []  # its config check alone\n"
        "server.model_config = N(hf_config=N(max_position_embeddings=128))\n"
        "for sleep in (True, False):\n"
        "    server.config = N(enable_sleep_mode=sleep, max_model_len=64, enable_chunked_prefill=True,\n"
        "                      max_num_batched_tokens=64)\n"
        "    try:\n"
        "        server._validate_configs()\n"
        "        refused.append(None)\n"
        "    except ValueError as exc:\n"
        "        refused.append(str(exc))\n"
        "print(json.dumps([s._get_worker_extension_cls(None), list(inspect.signature(s.generate).parameters)[:4],\n"
        "                  p.is_sleep_mode_available(), ours.CPUvLLMHttpServer._get_worker_extension_cls(None),\n"
        "                  issubclass(ours.CPUvLLMHttpServer, s), refused]))\n"
    )
    versions = (
        "import importlib.metadata as m, torch, transformers, verl, vllm\n"
        "from vllm.platforms import current_platform as p\n"
        "print(p.device_type, m.version('vllm-cpu'), torch.__version__, transformers.__version__, verl.__version__)\n"
    )
    cpu = {"VERL_PLATFORM": "cpu"}
    return ProbeSets(
        lambda probes: run_probes(
            VLLM_VENV / "bin" / "python", probes, preload=("torch", "transformers", "vllm"), env=cpu_env()
        ),
        tripwires={  # the upstream lines alone: make test-all (they change only with envs/*.lock)
            "refused": {"code": "import verl.third_party.vllm"},
            "shimmed": {"code": shimmed, "env": cpu},
            "packing": {"code": packing},
        },
        ours={  # the environment's versions, our worker extension and our server's config check
            "versions": {"code": versions},
            "extension": {"code": extension, "env": cpu},
            "server": {"code": server, "env": cpu},
        },
    )


def test_vllm_runs_on_its_cpu_platform_with_the_image_versions(probes):
    result = probes("ours")["versions"]
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == [
        "cpu",
        "0.24.0",
        "2.11.0+cu130",
        "5.9.0",
        "0.9.1",
    ]  # the image's CUDA torch


@pytest.mark.heavy
def test_verl_still_refuses_the_cpu_build_by_its_distribution_name(probes):
    """verl/third_party/vllm/__init__.py:30-31 and verl/workers/rollout/vllm_rollout/__init__.py:26-27:
    once either accepts ``vllm-cpu``, drop ``vllm_cpu_version`` (lie.engines.verl.cpu.vllm_worker)."""
    refused = probes("tripwires")["refused"]
    assert refused.returncode != 0 and "vllm version None not supported" in refused.stderr, refused.stderr[
        -2000:
    ]
    refused = probes("tripwires")["shimmed"]
    assert refused.returncode != 0, refused.stderr[-2000:]
    assert "please ensure the 'vllm' package is properly installed" in refused.stderr, refused.stderr[-2000:]


@pytest.mark.heavy
def test_vllm_cpu_still_drops_linear_weights_after_packing(probes):
    """vllm/model_executor/layers/linear.py:215: once vLLM keeps the weights on the CPU (or reloads
    them), drop ``keep_linear_weights`` (lie.engines.verl.cpu.vllm_worker)."""
    result = probes("tripwires")["packing"]
    assert result.returncode == 0, result.stderr[-2000:]
    assert "dispatch_cpu_unquantized_gemm(layer, remove_weight=True)" in result.stdout


def test_the_worker_extension_is_verls_own_class(probes):
    result = probes("ours")["extension"]
    assert result.returncode == 0, result.stderr[-2000:]
    # shared memory, not CUDA IPC; the linear-weight patch applied once however often it is called
    assert result.stdout.splitlines()[-1].split() == ["True", "False", "cpu", "True", "True"]


def test_verls_vllm_server_still_names_its_own_extension_and_the_cpu_has_no_sleep_mode(probes):
    """The three lines lie.engines.verl.cpu.vllm_rollout works around (issue 32), each a tripwire:
    ``vllm_async_server.py:1273-1275`` names verl's worker extension (ours is the same class, imported
    after the version shim and the linear-weight patch); ``generate(prompt_ids, sampling_params,
    request_id, ...)`` is what our override forwards; vLLM's CPU platform has no sleep mode, and verl's
    rollout.yaml has no ``enable_sleep_mode`` key (a dataclass default, True: hence the ``+`` override),
    and our server's config check refuses it."""
    result = probes("ours")["server"]
    assert result.returncode == 0, result.stderr[-3000:]
    verls, params, sleep, ours, subclass, refused = json.loads(result.stdout.strip().splitlines()[-1])
    assert verls == "verl.workers.rollout.vllm_rollout.utils.vLLMColocateWorkerExtension"
    assert params == ["self", "prompt_ids", "sampling_params", "request_id"]
    assert sleep is False
    assert ours == "lie.engines.verl.cpu.vllm_worker.vLLMColocateWorkerExtension" and subclass
    # a config that asks for sleep mode stops the server at verl's own config check, naming the override
    assert refused[0].startswith("vLLM's CPU build has no sleep mode: add ") and refused[1] is None
    site = next((VLLM_VENV / "lib").glob("python3.*/site-packages"))
    assert "enable_sleep_mode" not in (site / "verl/trainer/config/rollout/rollout.yaml").read_text()
