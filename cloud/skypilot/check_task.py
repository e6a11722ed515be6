"""``make check-sky``: SkyPilot's own parser reads the task file, and refuses it with one key misspelt.

Run in .venv-sky (``make venv-sky``), offline and without cloud credentials: ``sky.Task.from_yaml_config``
validates the file against SkyPilot's task schema and builds the task (its resources, its bucket mount,
with the ``--env`` values a launch would pass) without contacting a cloud. Then the same file with its
first top-level key misspelt must be refused by that schema, in one line naming the key. Prints one line
for each; exit 1 when either fails.

    .venv-sky/bin/python cloud/skypilot/check_task.py cloud/skypilot/lie.yaml
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

# What `sky launch --env` sets for the task's null envs (docs/cluster.md); a launch without them is refused.
LAUNCH_ENVS = [("LIE_BUCKET", "lie-check-bucket")]
MISSPELT = {"num_nodes": "num_node", "resources": "resource", "workdir": "work_dir", "run": "runs"}


def read_task(config: dict):
    """The task SkyPilot builds from ``config`` (a dict as its YAML loader gives it)."""
    import sky

    return sky.Task.from_yaml_config(config, env_overrides=LAUNCH_ENVS)


def describe(task) -> str:
    (res,) = list(task.resources)
    mounts = ", ".join(
        f"{path} <- bucket {store.name} ({store.mode.value})" for path, store in task.storage_mounts.items()
    )
    return f"{task.num_nodes} node(s) x {res.accelerators}, image {', '.join(res.image_id.values())}, workdir {task.workdir}, {mounts}"


def main(path: str) -> int:
    import sky

    text = Path(path).read_text()
    try:
        task = read_task(yaml.safe_load(text))
    except Exception as exc:  # SkyPilot's own error, whatever its class
        print(f"{path}: refused by SkyPilot {sky.__version__}: {_one_line(exc)}", file=sys.stderr)
        return 1
    print(f"{path}: accepted by SkyPilot {sky.__version__}: {describe(task)}")
    config = yaml.safe_load(text)
    key = next(k for k in config if k in MISSPELT)
    bad = {MISSPELT[k] if k == key else k: v for k, v in config.items()}
    try:
        read_task(bad)
    except Exception as exc:
        line = _one_line(exc)
        if MISSPELT[key] not in line:
            print(
                f"{path}: the misspelt key {MISSPELT[key]!r} was refused without its name: {line}",
                file=sys.stderr,
            )
            return 1
        print(f"{path} with {key!r} misspelt {MISSPELT[key]!r}: refused: {line}")
        return 0
    print(f"{path}: SkyPilot accepted a misspelt key {MISSPELT[key]!r} (for {key!r})", file=sys.stderr)
    return 1


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: check_task.py TASK.yaml")
    sys.exit(main(sys.argv[1]))
