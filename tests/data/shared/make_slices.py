"""Rebuild the slices in this folder from the full files of ../shared/data (python make_slices.py SHARED).

The rows kept are chosen by rule, so that a slice keeps what the tests check: the authors' first rows
of every benchmark (with two copies of each repeated problem), rows where their length cap is active
or their length is 0, prompts they list twice (one with two answers), and the MATH-500 solutions that
box a choice letter. The same problems are kept in the authors' file and in the jsonl beside it.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
MATH = [*range(12), 227, 255, 296]  # 227, 255, 296 box a choice letter in their solutions
OLYMPIAD_LINES = 6  # the first six OlympiadBench problems whose jsonl line is under 2,000 bytes
AIME_LINES = [0, 1, 2, 7]  # answers 204, 113, 371 and the zero-padded 025
AIME_AUTHORS = [0, 1, 9, 10]  # the same four problems in the authors' order
REPEATED = {"aime": AIME_AUTHORS, "amc": [0, 1, 2, 3], "aime25": [0, 1, 2, 3]}


def jsonl_lines(src: Path, keep) -> list[int]:
    lines = src.read_text(encoding="utf-8").splitlines(keepends=True)
    picked = keep(lines)
    (HERE / "qwen25-math-eval" / src.name).write_text("".join(lines[i] for i in picked), encoding="utf-8")
    return picked


def validation(src: Path, olympiad: list[int]) -> None:
    table = pq.read_table(src)
    wanted = {"math": MATH, "olympiad_bench": olympiad, "minerva": list(range(6)), **REPEATED}
    copies: Counter = Counter()
    rows = []
    for i, row in enumerate(table.select(["data_source", "extra_info"]).to_pylist()):
        key = (row["data_source"], row["extra_info"]["index"])
        if key[1] in wanted[key[0]] and copies[key] < 2:
            copies[key] += 1
            rows.append(i)
    pq.write_table(table.take(rows), HERE / "lie-authors" / src.name)


def training(src: Path, first: int) -> None:
    table = pq.read_table(src)
    rows = table.to_pylist()
    keep = list(range(first))
    info = [r["extra_info"] for r in rows]
    keep += [i for i, x in enumerate(info) if x["avg_response_len"] == 0][:1]
    keep += [i for i, x in enumerate(info) if x["avg_response_len"] >= 8192][:2]
    keep += [i for i, x in enumerate(info) if x["avg_response_len"] > 16384][:1]
    keep += [i for i, x in enumerate(info) if x["ori_acc"] == 1][:1]
    texts: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        texts.setdefault(r["prompt"][0]["content"], []).append(i)
    twice = [v for v in texts.values() if len(v) > 1]
    two_answers = [v for v in twice if len({rows[i]["reward_model"]["ground_truth"] for i in v}) > 1]
    for pair in twice[:2] + two_answers[:1]:
        keep += pair
    keep = sorted(set(keep))
    pq.write_table(table.take(keep), HERE / "lie-authors" / src.name)


def main(shared: Path) -> None:
    (HERE / "lie-authors").mkdir(exist_ok=True)
    (HERE / "qwen25-math-eval").mkdir(exist_ok=True)
    bench = shared / "qwen25-math-eval"
    jsonl_lines(bench / "aime24.jsonl", lambda lines: AIME_LINES)
    jsonl_lines(bench / "amc23.jsonl", lambda lines: list(range(4)))
    jsonl_lines(bench / "math500.jsonl", lambda lines: MATH)
    jsonl_lines(bench / "minerva_math.jsonl", lambda lines: list(range(6)))
    olympiad = jsonl_lines(
        bench / "olympiadbench.jsonl",
        lambda lines: [i for i, line in enumerate(lines) if len(line) < 2000][:OLYMPIAD_LINES],
    )
    for name in ("valid.all_qwen3.parquet", "valid.all_llama.parquet"):
        validation(shared / "lie-authors" / name, olympiad)
    training(shared / "lie-authors" / "dapo-math-17k_llama-add1k.parquet", first=8)
    training(shared / "lie-authors" / "deepmath-5k-octothinker_add1k.parquet", first=8)
    json.dump({"olympiadbench_lines": olympiad}, sys.stdout)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
