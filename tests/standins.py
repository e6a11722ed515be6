"""Stand-ins for the cluster's command-line tools (sbatch, srun, scontrol, apptainer, ...) in tests, and a
local HTTP server for the stand-ins of web services (a URL's file, the hub's API)."""

from __future__ import annotations

import contextlib
import http.server
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path


def write_tools(bin_dir: Path, tools: dict[str, str]) -> Path:
    """Each ``name: bash body`` as an executable script ``bin_dir/name``; returns ``bin_dir`` (for PATH)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name, body in tools.items():
        path = bin_dir / name
        path.write_text("#!/usr/bin/env bash\n" + body + "\n")
        path.chmod(0o755)
    return bin_dir


def start(cmd: list[str], folder: Path, **popen) -> subprocess.Popen:
    """``cmd`` started with its output to ``folder/command.{out,err}``: several stand-in runs at once."""
    with open(folder / "command.out", "w") as stdout, open(folder / "command.err", "w") as stderr:
        return subprocess.Popen(cmd, stdout=stdout, stderr=stderr, text=True, **popen)


def finish(proc: subprocess.Popen, folder: Path, timeout: float = 300) -> tuple[int, str]:
    """Wait for a run of :func:`start`: its exit status and its output (stdout, then stderr)."""
    returncode = proc.wait(timeout=timeout)
    return returncode, (folder / "command.out").read_text() + (folder / "command.err").read_text()


# `apptainer exec [--opt [value]]... IMAGE CMD...` run on the host, with --env K=V set, where only
# what --bind names is visible (as on a site whose apptainer.conf mounts neither home nor /tmp): a
# path in the command (`bash -c` strings split as the shell would) whose real path no bind holds fails
# as it would inside the image. `apptainer --version` and other subcommands print a version.
APPTAINER_EXEC = """[[ "$1" == exec ]] || { echo "apptainer version 1.3.4"; exit 0; }
exec python3 - "$@" <<'EOF'
import os, shlex, sys
args, bound, env = sys.argv[2:], [], dict(os.environ)
while args[0].startswith("--"):
    if args[0] == "--env":
        key, _, value = args[1].partition("=")
        env[key], args = value, args[2:]
    elif args[0] == "--bind":
        bound += [os.path.realpath(b.split(":")[0]) for b in args[1].split(",")]
        args = args[2:]
    elif args[0] in ("--home", "--pwd"):
        args = args[2:]
    else:
        args = args[1:]
command = args[1:]
words = command[2:] and shlex.split(command[2]) if command[:2] == ["bash", "-c"] else command
for word in words:
    path = word.split("=", 1)[-1]
    if path and os.path.lexists(path):
        real = os.path.realpath(path)
        if not any(real == b or real.startswith(b + os.sep) for b in bound):
            sys.exit(f"apptainer stand-in: {path} ({real}) is not visible inside the image; bound: {bound}")
if "ray.nodes" in " ".join(command):
    print(sum('"tool": "ray"' in line for line in open(os.environ["CALLS"])))
    sys.exit(0)
os.execvpe(command[0], command, env)
EOF"""


@contextlib.contextmanager
def http_server(
    handler: Callable[..., http.server.BaseHTTPRequestHandler],
) -> Iterator[tuple[str, Callable[[], None]]]:
    """The standard library's threaded server on 127.0.0.1 with ``handler``: its base URL, and a function
    that stops it (also called on exit)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    stopped: list[bool] = []

    def stop() -> None:
        if not stopped:
            stopped.append(True)
            server.shutdown()
            server.server_close()

    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", stop
    finally:
        stop()
