"""Run a command and say how much CPU it and everything it waited for used (user + system), and its wall time.

``make study`` runs under it: the study's target is stated in CPU-minutes (issue 36), which a machine's
speed or load cannot hide the way a wall time can. Usage: ``cpu_time.py LABEL -- COMMAND...``; the line
goes to standard error. Exits with the command's status.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("usage: cpu_time.py LABEL -- COMMAND...", file=sys.stderr)
        return 2
    label, command = argv[0], argv[2:]
    start = time.monotonic()
    status = subprocess.call(command)
    wall = time.monotonic() - start
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = used.ru_utime + used.ru_stime
    print(
        f"{label}: {cpu / 60:.1f} CPU-minutes (user {used.ru_utime / 60:.1f} + system {used.ru_stime / 60:.1f}), "
        f"wall {wall / 60:.1f} min on {os.cpu_count()} cores, exit {status}",
        file=sys.stderr,
    )
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
