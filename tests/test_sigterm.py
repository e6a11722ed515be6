"""SIGTERM is Ctrl-C: Slurm's time limit and ``scancel`` send it, and every ``lie`` command that writes
cleans up on it as on an interrupt (``lie.cli`` raises ``lie.core.errors.Terminated``, a KeyboardInterrupt).

Each test sends a real SIGTERM to a ``lie`` process at a chosen point of its write (the process sends it
to itself from inside the write, so the moment is exact) and reads what is left on disk.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
SMOKE = REPO / "workflow" / "configs" / "smoke.yaml"
LIE = str(Path(sys.executable).parent / "lie")


def _python(script: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script), *args], capture_output=True,
                          text=True, timeout=120)  # fmt: skip


def test_sigterm_while_a_command_waits_exits_143_in_one_line_and_writes_nothing(tmp_path):
    out = tmp_path / "out.jsonl"
    proc = subprocess.Popen([LIE, "score", "--in", "-", "--out", str(out)], stdin=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    assert proc.stdin is not None and proc.stderr is not None
    proc.stdin.write(json.dumps({"response": "x", "correct": True, "num_tokens": 1, "ref_len": 3}) + "\n")
    proc.stdin.flush()
    time.sleep(3)  # started, reading its input
    proc.send_signal(signal.SIGTERM)
    err = proc.communicate(timeout=60)[1]
    assert proc.returncode == 143, err[-3000:]
    assert err.strip().splitlines() == ["lie score: terminated (SIGTERM); rerun to resume"]
    assert sorted(tmp_path.iterdir()) == []  # no output, no temporary


# lie report, its inputs stood in for (the real ones take a pipeline run: tests/test_report.py), the
# writers and the all-or-none swap its own; SIGTERM arrives from inside a copy or a rename
REPORT = """
    import os, shutil, signal, sys
    from pathlib import Path
    import lie.report.build as build
    from lie.cli import main

    phase, after = sys.argv[1], int(sys.argv[2])
    build.collect = lambda config, **kw: None
    build._writers = lambda data: {
        p.relative_to(Path(sys.argv[4])).as_posix(): (lambda path: path.write_text("new\\n"))
        for p in build.report_paths(build.Layout(build.Config.of(__import__("yaml").safe_load(open(sys.argv[3])))))
    }
    calls = []
    def killing(real):
        def call(*args, **kwargs):
            calls.append(args)
            result = real(*args, **kwargs)
            if len(calls) == after:
                os.kill(os.getpid(), signal.SIGTERM)
            return result
        return call
    if phase == "copy":
        build.shutil.copyfile = killing(shutil.copyfile)
    else:
        build.os.replace = killing(os.replace)
    sys.exit(main(["report", "--config", sys.argv[3]]))
"""


@pytest.mark.parametrize(("phase", "after", "expected"), [("copy", 3, "old\n"), ("rename", 5, "new\n")])
def test_sigterm_during_lie_report_leaves_one_whole_report(tmp_path, phase, after, expected):
    """During the copies the previous report stays; during the renames they finish first (SIGTERM is
    held over them): either way every file is of one report and no ``.X.new-PID``/``.X.old-PID`` is left."""
    from lie.config import Config
    from lie.config.layout import Layout
    from lie.report.build import report_paths

    config = yaml.safe_load(SMOKE.read_text(encoding="utf-8"))
    config["outdir"] = str(tmp_path / "results")
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    paths = report_paths(Layout(Config.of(config)))
    for p in paths:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("old\n")
    proc = _python(REPORT, phase, str(after), str(path), config["outdir"])
    assert proc.returncode == 143, proc.stderr[-3000:]
    assert proc.stderr.strip().splitlines()[-1] == "lie report: terminated (SIGTERM); rerun to resume"
    assert {p.read_text() for p in paths} == {expected}
    hidden = [q.name for q in Path(config["outdir"]).rglob(".*")]
    assert not hidden, hidden


FIGURE = """
    import os, signal, sys
    from pathlib import Path
    import matplotlib.figure
    from lie.core.errors import Terminated, raise_terminated
    from lie.report.figures import new_figure
    from lie.study.figures import _save

    signal.signal(signal.SIGTERM, raise_terminated)  # as lie.cli installs it for every command
    real = matplotlib.figure.Figure.savefig
    def half_then_killed(self, target, **kwargs):
        real(self, target, **kwargs)
        (target.truncate(100) if hasattr(target, "truncate") else open(target, "r+b").truncate(100))
        os.kill(os.getpid(), signal.SIGTERM)
    matplotlib.figure.Figure.savefig = half_then_killed
    fig = new_figure(4, 3, dpi=50)
    fig.subplots().plot([0, 1], [1, 0])
    try:
        _save(fig, Path(sys.argv[1]))
    except Terminated:
        sys.exit(143)
"""


def test_sigterm_while_a_study_figure_is_written_leaves_the_previous_one(tmp_path):
    figure = tmp_path / "figures" / "study.png"
    figure.parent.mkdir()
    figure.write_bytes(b"the previous figure")
    proc = _python(FIGURE, str(figure))
    assert proc.returncode == 143, proc.stderr[-3000:]
    assert figure.read_bytes() == b"the previous figure"
    assert [p.name for p in figure.parent.iterdir()] == ["study.png"]


def test_every_lie_command_runs_under_the_sigterm_handler(monkeypatch):
    """lie.cli.main installs it around every command, and puts back what was there."""
    import lie.cli
    from lie.core.errors import raise_terminated

    seen = []
    monkeypatch.setattr(lie.cli, "_main", lambda argv: seen.append(signal.getsignal(signal.SIGTERM)) or 0)
    before = signal.getsignal(signal.SIGTERM)
    assert lie.cli.main(["score"]) == 0
    assert seen == [raise_terminated] and signal.getsignal(signal.SIGTERM) is before
    assert os.getpid() > 0
