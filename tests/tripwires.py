"""The upstream tripwires of one Python environment, run in one process: shared imports once, a fork a probe.

A tripwire test asserts that a line of verl or vLLM still does what one of our patches works around
(tests/test_verl_cpu.py, tests/test_vllm_verl.py), in a fresh interpreter of the environment the patch
is for. Each probe used to start its own interpreter and spend ~10 s importing torch (and vLLM).
``run_probes`` starts one ``python tests/tripwires.py`` of that environment instead: it imports the
``preload`` modules once, then forks a child per probe that sets the probe's environment variables and
runs its code as ``python -c`` would, with its own stdout, stderr and exit status. Preload only what
no probe looks at: torch, transformers, vLLM itself; never verl or lie, which choose their device
when imported.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

HERE = Path(__file__).resolve()


def run_probes(
    python: str | Path,
    probes: dict[str, dict],
    preload: tuple[str, ...],
    env: dict[str, str],
    timeout: float = 600,
) -> dict[str, SimpleNamespace]:
    """Each probe ``{"code": str, "env": {...}}`` under ``python``; returns name -> returncode/stdout/stderr."""
    request = json.dumps({"preload": list(preload), "probes": probes, "timeout": timeout})
    proc = subprocess.run(
        [str(python), str(HERE)],
        input=request,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout + 120,
    )
    assert proc.returncode == 0 and proc.stdout.strip(), f"the probe process failed:\n{proc.stderr[-4000:]}"
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    return {name: SimpleNamespace(**result) for name, result in results.items()}


class ProbeSets:
    """Named sets of probes (``{set: {probe: {"code": ..., "env": ...}}}``), each run by ``run`` once, when a
    test first asks for it: make test asks only for the sets its tests read (the pure tripwires are
    make test-all's)."""

    def __init__(self, run: Callable[[dict[str, dict]], dict[str, SimpleNamespace]], **sets: dict[str, dict]):
        self._run, self._sets, self._results = run, sets, {}

    def __call__(self, name: str) -> dict[str, SimpleNamespace]:
        if name not in self._results:
            self._results[name] = self._run(self._sets[name])
        return self._results[name]


def _child(code: str, env: dict[str, str], out: Path, err: Path) -> None:
    """In the forked child: the probe's environment and output files, then its code; never returns."""
    os.environ.update(env)
    for fd, path in ((1, out), (2, err)):
        handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(handle, fd)
        os.close(handle)
    sys.argv = ["-c"]
    status = 0
    try:
        exec(compile(code, "<string>", "exec"), {"__name__": "__main__"})
    except SystemExit as stop:
        status = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    except BaseException:
        traceback.print_exc()
        status = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def _wait(pid: int, deadline: float) -> int:
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return -signal.SIGKILL


def main() -> int:
    request = json.loads(sys.stdin.read())
    for name in request["preload"]:
        importlib.import_module(name)
    results = {}
    with tempfile.TemporaryDirectory(prefix="tripwires-") as tmp:
        for name, probe in request["probes"].items():
            out, err = Path(tmp) / f"{name}.out", Path(tmp) / f"{name}.err"
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                _child(probe["code"], probe.get("env", {}), out, err)
            returncode = _wait(pid, time.monotonic() + request["timeout"])
            results[name] = {
                "returncode": returncode,
                "stdout": out.read_text(errors="replace") if out.exists() else "",
                "stderr": err.read_text(errors="replace") if err.exists() else "",
            }
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
