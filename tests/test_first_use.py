"""What a first user meets before reading the code: the formats a command's --help promises work as
shown (``lie grade``'s input items, each kind)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent


def test_the_items_lie_grade_help_shows_grade_as_shown(tmp_path):
    help_text = subprocess.run(
        [BIN / "lie", "grade", "--help"], capture_output=True, text=True, check=True
    ).stdout
    flat = re.sub(r"\s*\n\s*", " ", help_text)
    items = [json.loads(m) for m in re.findall(r"\{\"response\".*?\}(?= \(|,| or)", flat)]
    assert [i["kind"] for i in items] == ["math", "choice"], flat
    assert items[1]["choices"] == ["A", "B", "C", "D"]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items), encoding="utf-8")
    subprocess.run(
        [BIN / "lie", "grade", "--in", tmp_path / "in.jsonl", "--out", tmp_path / "out.jsonl", "--workers", "1",
         "--no-progress"],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    graded = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [(g["status"], g["correct"]) for g in graded] == [("ok", True), ("ok", True)], graded
