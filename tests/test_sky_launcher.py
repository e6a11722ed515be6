"""The SkyPilot/Ray launcher (workflow/scripts/ray_on_sky.sh), each node's `run:` block a process of its own,
against a stand-in `ray` that records its calls and a stand-in `python3` that answers the launcher's two
questions (does the head listen; how many nodes are alive) from what the stand-in Ray nodes have done."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from standins import write_tools

REPO = Path(__file__).resolve().parents[1]
LAUNCHER = REPO / "workflow" / "scripts" / "ray_on_sky.sh"
TASK = "sky-2026-12-07-14-30-00-123456_lie-run_1"

FAKES = {
    # `ray start --head ... --block`: up (a file) until stopped (SIGTERM, as the launcher stops it);
    # `ray start --address ... --block`: a worker, up while the head is, then gone as Ray's would be
    "ray": """echo "ray $*" >> "$LOG"; echo "auth ${RAY_AUTH_MODE:-unset}" >> "$LOG.auth"
if [[ " $* " == *" --head "* ]]; then
  trap 'rm -f "$STATE/head"; echo "head stopped" >> "$LOG"; exit 0' TERM
  touch "$STATE/head"; while true; do sleep 0.1; done
fi
while [[ -e "$STATE/head" ]]; do sleep 0.1; done
exit 1""",
    # the launcher's questions, answered from the stand-in cluster; anything else to the real Python
    "python3": """if [[ "$*" == *create_connection* ]]; then [[ -e "$STATE/head" ]]; exit; fi
if [[ "$*" == *ray.nodes* ]]; then
  [[ -e "$STATE/head" ]] || exit 1
  up=$(grep -c "^ray start" "$LOG" || true); echo $(( up < NODES_UP ? up : NODES_UP )); exit 0
fi
exec "$REAL_PYTHON" "$@\"""",
}


def posix_cksum(data: bytes) -> int:
    """POSIX cksum's CRC (what launch_lib.sh's sky_ray_ports hashes a task id with)."""
    crc = 0
    for byte in data + len(data).to_bytes((len(data).bit_length() + 7) // 8 or 1, "little").rstrip(b"\0"):
        crc ^= byte << 24
        for _ in range(8):
            crc = ((crc << 1) ^ 0x04C11DB7 if crc & 0x80000000 else crc << 1) & 0xFFFFFFFF
    return ~crc & 0xFFFFFFFF


@pytest.fixture
def sky(tmp_path):
    bin_dir = write_tools(tmp_path / "bin", FAKES)
    state = tmp_path / "state"
    state.mkdir()
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "REAL_PYTHON": sys.executable,
        "LOG": str(tmp_path / "calls.log"),
        "STATE": str(state),
        "NODES_UP": "3",
        "SKYPILOT_TASK_ID": TASK,
        "SKYPILOT_NUM_GPUS_PER_NODE": "4",
        "LIE_CPUS_PER_NODE": "32",
        "LIE_RAY_WAIT_S": "20",
        "LIE_RAY_POLL_S": "0.2",
    }
    for key in (
        "RAY_ADDRESS",
        "RAY_PORT",
        "RAY_PORT_BASE",
        "LIE_RAY_HEAD_IP",
        "LIE_GPUS_PER_NODE",
        "RAY_AUTH_MODE",
        "RAY_AUTH_TOKEN",
    ):
        env.pop(key, None)
    return env


def _node(env: dict, rank: int, ips: list[str], *command: str) -> subprocess.Popen:
    node_env = {**env, "SKYPILOT_NODE_RANK": str(rank), "SKYPILOT_NUM_NODES": str(len(ips)),
                "SKYPILOT_NODE_IPS": "\n".join(ips)}  # fmt: skip
    return subprocess.Popen(["bash", str(LAUNCHER), *command], env=node_env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip


def _finish(proc: subprocess.Popen) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=60)
    return proc.returncode, out, err


def _port(task: str) -> int:
    key = posix_cksum(task.encode())
    return 6379 + (key + (key % 1000 == 1)) % 1000


def _calls(env: dict) -> list[str]:
    log = Path(env["LOG"])
    return log.read_text().splitlines() if log.exists() else []


SHOW = ("bash", "-c", 'echo "COMMAND at $RAY_ADDRESS"')


def test_the_cksum_of_the_test_is_posix_cksum():
    for text in ("", "a", TASK, "x" * 300):
        real = subprocess.run(["cksum"], input=text.encode(), capture_output=True, check=True)
        assert posix_cksum(text.encode()) == int(real.stdout.split()[0]), text


def test_one_node_runs_the_command_against_its_own_ray_then_stops_it(sky):
    code, out, err = _finish(_node(sky, 0, ["127.0.0.1"], *SHOW))
    assert code == 0, err
    port = _port(TASK)
    assert f"COMMAND at 127.0.0.1:{port}\n" in out  # RAY_ADDRESS handed to the command
    calls = _calls(sky)
    (head,) = [c for c in calls if c.startswith("ray start")]
    assert "--head" in head and "--node-ip-address=127.0.0.1" in head and f"--port={port}" in head
    assert "--num-gpus=4" in head and "--num-cpus=32" in head and "--block" in head
    assert calls[-1] == "head stopped"  # its own Ray, by its process: no `ray stop` (SkyPilot's Ray too)
    assert not any(c.startswith("ray stop") for c in calls)


def test_three_nodes_the_head_waits_for_both_workers_and_they_leave_with_it(sky):
    ips = ["10.0.0.7", "10.0.0.8", "10.0.0.9"]
    workers = [_node(sky, rank, ips, *SHOW) for rank in (1, 2)]  # booted first: they wait for the head
    code, out, err = _finish(_node(sky, 0, ips, *SHOW))
    assert code == 0, err
    port = _port(TASK)
    assert "all 3 Ray nodes are up" in out and f"COMMAND at 10.0.0.7:{port}" in out
    for worker in workers:
        w_code, w_out, w_err = _finish(worker)
        assert w_code == 0, w_err  # a worker's end is not the task's failure
        assert "COMMAND" not in w_out  # only rank 0 runs it
        assert "has ended" in w_out
    joins = [c for c in _calls(sky) if c.startswith("ray start --address")]
    assert len(joins) == 2 and all(f"--address=10.0.0.7:{port}" in c and "--num-gpus=4" in c for c in joins)


def test_the_head_waits_for_every_node_and_stops_when_one_never_comes(sky):
    sky.update(LIE_RAY_WAIT_S="2")
    code, out, err = _finish(_node(sky, 0, ["10.0.0.7", "10.0.0.8", "10.0.0.9"], *SHOW))
    assert code == 1
    assert "only 1 of 3 Ray nodes joined within 2s" in err
    assert "COMMAND" not in out
    assert _calls(sky)[-1] == "head stopped"


def test_a_worker_without_a_head_gives_up_in_one_line(sky):
    sky.update(LIE_RAY_WAIT_S="1")
    code, _, err = _finish(_node(sky, 1, ["10.0.0.7", "10.0.0.8"], *SHOW))
    assert code == 1
    assert err.strip() == f"ray_on_sky.sh: rank 1: no Ray head at 10.0.0.7:{_port(TASK)} within 1s"


def test_refuses_a_loopback_head_address_on_several_nodes(sky):
    code, _, err = _finish(_node(sky, 0, ["127.0.1.1", "10.0.0.8"], "true"))
    assert code == 1
    (line,) = err.strip().splitlines()
    assert "loopback address" in line and "127.0.1.1" in line and "LIE_RAY_HEAD_IP" in line
    assert not _calls(sky)
    sky["LIE_RAY_HEAD_IP"] = "10.1.0.7"  # the fix the line names
    sky["NODES_UP"] = "1"
    sky["LIE_RAY_WAIT_S"] = "1"
    code, _, err = _finish(_node(sky, 0, ["127.0.1.1", "10.0.0.8"], "true"))
    assert f"--node-ip-address=10.1.0.7 --port={_port(TASK)}" in _calls(sky)[0]


def test_the_gcs_port_is_never_skypilots_own(sky):
    """SkyPilot's Ray listens on 6380 on every node: a task whose id hashes to it takes the next key."""
    task = next(f"sky-task-{i}" for i in range(100000) if posix_cksum(f"sky-task-{i}".encode()) % 1000 == 1)
    sky["SKYPILOT_TASK_ID"] = task
    code, out, err = _finish(_node(sky, 0, ["127.0.0.1"], *SHOW))
    assert code == 0, err
    ports = {int(p) for c in _calls(sky) for p in re.findall(r"port=(\d+)", c)}
    assert 6380 not in ports and "COMMAND at 127.0.0.1:6381" in out
    sky["RAY_PORT"] = "6380"
    code, out, err = _finish(_node(sky, 0, ["127.0.0.1"], *SHOW))
    assert code == 2 and "RAY_PORT=6380 is SkyPilot's own Ray" in err and "COMMAND" not in out


def test_two_tasks_on_one_node_open_no_port_in_common(sky):
    ports = {}
    for task in (TASK, TASK.replace("_1", "_2")):
        Path(sky["LOG"]).write_text("")
        code, _, err = _finish(_node({**sky, "SKYPILOT_TASK_ID": task}, 0, ["127.0.0.1"], "true"))
        assert code == 0, err
        ports[task] = {int(p) for c in _calls(sky) for p in re.findall(r"port=(\d+)", c)}
        assert len(ports[task]) == 9  # GCS, dashboard, client server and six per-node ports: none default
    first, second = ports.values()
    assert not first & second


def test_every_ray_process_and_the_command_share_one_auth_mode(sky):
    """Ray 2.60 turns token auth on for a head started where ~/.ray/auth_token exists and then refuses the
    nodes and drivers without that token (the launcher's own node check included): one mode for all."""
    code, out, err = _finish(_node(sky, 0, ["127.0.0.1"], "bash", "-c", 'echo "MODE $RAY_AUTH_MODE"'))
    assert code == 0, err
    assert "MODE disabled" in out and Path(sky["LOG"] + ".auth").read_text() == "auth disabled\n"
    code, _, err = _finish(_node({**sky, "RAY_AUTH_MODE": "token"}, 0, ["127.0.0.1"], "true"))
    assert code == 2 and "RAY_AUTH_MODE=token needs RAY_AUTH_TOKEN" in err
    code, _, err = _finish(
        _node({**sky, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": "t" * 32}, 0, ["127.0.0.1"], "true")
    )
    assert code == 0, err


@pytest.mark.parametrize(
    ("unset", "ips", "nodes", "message"),
    [
        ("SKYPILOT_NODE_RANK", "10.0.0.7", "1", "not inside a SkyPilot task (SKYPILOT_NODE_RANK is unset)"),
        (None, "10.0.0.7", "2", "SKYPILOT_NODE_IPS lists 1 address(es), SKYPILOT_NUM_NODES says 2"),
    ],
)
def test_outside_a_task_or_with_inconsistent_nodes_it_says_so(sky, unset, ips, nodes, message):
    env = {**sky, "SKYPILOT_NODE_RANK": "0", "SKYPILOT_NODE_IPS": ips, "SKYPILOT_NUM_NODES": nodes}
    if unset:
        del env[unset]
    proc = subprocess.run(
        ["bash", str(LAUNCHER), "true"], env=env, capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 2 and message in proc.stderr and len(proc.stderr.splitlines()) == 1
    assert not _calls(sky)
