"""``lie data`` through the local-file and URL paths on slices of the real benchmark files (tests/data/shared).

The authors' validation file (LINs-lab/LIE ``data/valid.all_qwen3.parquet``, the default source
of the in-domain sets: tests/test_data_authors.py) was built from the same Qwen2.5-Math files with
the same template: the optional sources (``*-hub``, ``*-qwen25``) must match its prompts and answers.
"""

from __future__ import annotations

import os
import re
import shutil

import pyarrow.parquet as pq
import pytest
import yaml
from conftest import SHARED, data_file, full, shared_file
from hubcache import repo_config

from lie.cli import main
from lie.config import Config
from lie.core.errors import LieError
from lie.formats.rows import read_metadata, row_schema
from lie.stages.data.adapters import normalise_answer
from lie.stages.data.build import build_dataset
from lie.stages.data.sources import git_blob_sha1, url_cache_path

LOCAL = {
    "aime24-hub": "qwen25-math-eval/aime24.jsonl",
    "amc-hub": "qwen25-math-eval/amc23.jsonl",
    "math500-hub": "qwen25-math-eval/math500.jsonl",
    "minerva-qwen25": "qwen25-math-eval/minerva_math.jsonl",
    "olympiadbench-qwen25": "qwen25-math-eval/olympiadbench.jsonl",
}
AUTHORS_NAME = {"math500-hub": "math", "minerva-qwen25": "minerva", "olympiadbench-qwen25": "olympiad_bench"}


OPEN = {"slice": data_file, "full": shared_file}  # the committed slices; the whole files where present


def local_config(name: str, where: str = "slice") -> dict:
    config = repo_config()
    config["datasets"]["eval"][name].update(
        local=str(OPEN[where](LOCAL[name])), url=None, sha1=None, hf_id=None
    )
    return config


def authors_rows(source: str, where: str = "slice") -> list[dict]:
    """The distinct problems of one benchmark in the authors' file, in their index order."""
    table = pq.read_table(OPEN[where]("lie-authors/valid.all_qwen3.parquet")).to_pylist()
    first: dict[int, dict] = {}
    for row in table:
        if row["data_source"] == source:
            first.setdefault(row["extra_info"]["index"], row)
    return [first[k] for k in sorted(first)]


def build(tmp_path, config, name, **kwargs):
    out = tmp_path / f"{name}.parquet"
    build_dataset(Config.of(config), name, out, progress=False, **kwargs)
    return pq.read_table(out), out


@pytest.mark.parametrize("name", ["math500-hub", "minerva-qwen25", "olympiadbench-qwen25"])
@pytest.mark.parametrize("where", ["slice", full("full")])
def test_rows_match_the_authors_validation_file(tmp_path, name, where):
    table, out = build(tmp_path, local_config(name, where), name)
    ours = table.to_pylist()
    theirs = authors_rows(AUTHORS_NAME[name], where)
    problems = {"math500-hub": (15, 500), "minerva-qwen25": (6, 272), "olympiadbench-qwen25": (6, 675)}[name]
    assert len(ours) == len(theirs) == problems[where == "full"]
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert a["prompt"] == [{"role": "user", "content": b["prompt"][0]["content"]}], f"{name} row {i}"
        assert a["reward_model"]["ground_truth"] == normalise_answer(b["reward_model"]["ground_truth"]), (
            f"{name} row {i}"
        )
        assert a["extra_info"]["index"] == i and a["extra_info"]["kind"] == "math"
    assert table.schema.remove_metadata() == row_schema()
    meta = read_metadata(out)
    assert meta["source"]["type"] == "local" and meta["source"]["path"].endswith(LOCAL[name].split("/")[-1])
    assert meta["template"] == repo_config()["prompt"]["math"]


def test_aime24_answers_lose_their_zero_padding(tmp_path):
    ours = build(tmp_path, local_config("aime24-hub"), "aime24-hub")[0].to_pylist()
    theirs = authors_rows("aime")
    assert len(ours) == 4
    assert sorted(r["reward_model"]["ground_truth"] for r in ours) == sorted(
        normalise_answer(r["reward_model"]["ground_truth"]) for r in theirs
    )
    assert not any(r["reward_model"]["ground_truth"].startswith("0") for r in ours)
    assert "025" in {r["reward_model"]["ground_truth"] for r in theirs}  # the file really is padded


def test_amc_float_answers_become_integers(tmp_path):
    rows = build(tmp_path, local_config("amc-hub"), "amc-hub")[0].to_pylist()
    assert len(rows) == 4
    assert rows[0]["reward_model"]["ground_truth"] == "27"  # 27.0 in the file
    assert all(r["reward_model"]["ground_truth"].lstrip("-").isdigit() for r in rows)


def test_cli_writes_atomically_with_limit(tmp_path):
    config = local_config("math500-hub")
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump(config), encoding="utf-8")
    out = tmp_path / "out" / "math500.parquet"
    assert (
        main(
            [
                "data",
                "--config",
                str(cfg),
                "math500-hub",
                "--out",
                str(out),
                "--limit",
                "7",
                "--no-progress",
            ]
        )
        == 0
    )
    assert pq.read_table(out).num_rows == 7
    assert read_metadata(out)["rows"] == {"read": 15, "after_limit": 7, "written": 7, "skipped_empty": 0}
    assert sorted(os.listdir(out.parent)) == ["math500.parquet"]


def test_a_failed_build_leaves_no_file(tmp_path, capsys):
    config = local_config("math500-hub")
    config["datasets"]["eval"]["math500-hub"]["format"] = "olympiadbench"  # reads `question`, absent here
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump(config), encoding="utf-8")
    out = tmp_path / "math500.parquet"
    assert main(["data", "math500-hub", "--config", str(cfg), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "datasets.eval.math500-hub" in err and "column 'question', 'final_answer' missing" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.yaml"]


def test_missing_local_path_names_the_key(tmp_path):
    config = local_config("minerva-qwen25")
    config["datasets"]["eval"]["minerva-qwen25"]["local"] = str(tmp_path / "nope.jsonl")
    with pytest.raises(LieError, match="datasets.eval.minerva-qwen25.local is .*does not exist"):
        build(tmp_path, config, "minerva-qwen25")


@pytest.mark.parametrize(
    "text, message",
    [
        (b"\xff\xfe{}\n", "line 1: not valid UTF-8"),
        (b"[" * 5000 + b"]" * 5000 + b"\n", "math500.jsonl: JSON nested deeper than"),
        (b'{"problem": "1+1", "answer": ' + b"9" * 5000 + b"}\n", "line 1: "),
        (b'{"problem": "1+1", "answer": NaN}\n', "line 1: "),
        (b'[{"problem": "1+1", "answer": NaN}]', "math500.jsonl: "),
        (b"\xff[", "math500.jsonl line 1: not valid UTF-8"),
    ],
)
def test_a_local_file_that_is_not_strict_json_is_one_line(tmp_path, text, message):
    """Issue 33: local data sets bypassed the strict JSON reader (a traceback on bad bytes, deep
    nesting, huge numbers; NaN accepted). Both forms, JSON lines and one array, are read strictly."""
    path = tmp_path / "math500.jsonl"
    path.write_bytes(text)
    config = local_config("math500-hub")
    config["datasets"]["eval"]["math500-hub"]["local"] = str(path)
    with pytest.raises(LieError, match=re.escape(message)):
        build(tmp_path, config, "math500-hub")


@pytest.fixture
def url_cache(tmp_path, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setenv("LIE_URL_CACHE", str(tmp_path / "urls"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    return tmp_path / "urls"


@SHARED
def test_the_pinned_url_names_the_full_files_blob_id():
    spec = repo_config()["datasets"]["eval"]["olympiadbench-qwen25"]
    assert spec["sha1"] == "ec36280b1de8f5bbee92da696c2ae84f5f6e6beb"  # ../shared/data/README.md's id
    assert git_blob_sha1(shared_file(LOCAL["olympiadbench-qwen25"]).read_bytes()) == spec["sha1"]


def test_url_source_offline_from_the_download_cache(tmp_path, url_cache):
    config = repo_config()  # the pinned Qwen2.5-Math URL of OlympiadBench, with the slice's git blob id
    name = "olympiadbench-qwen25"
    spec = config["datasets"]["eval"][name]
    src = data_file(LOCAL[name])
    spec["sha1"] = git_blob_sha1(src.read_bytes())
    with pytest.raises(LieError, match="not in the download cache .* HF_HUB_OFFLINE is set"):
        build(tmp_path, config, name)
    cached = url_cache_path(spec["url"])
    cached.parent.mkdir(parents=True)
    shutil.copy(src, cached)
    table, out = build(tmp_path, config, name)
    local, _ = build(tmp_path / "l", local_config(name), name)
    assert table.num_rows == 6 and table.to_pylist() == local.to_pylist()
    assert read_metadata(out)["source"] == {"type": "url", "url": spec["url"], "sha1": spec["sha1"]}
    cached.write_bytes(src.read_bytes()[:-10])
    with pytest.raises(LieError, match=f"has git blob id .* expected {spec['sha1'][:8]}"):
        build(tmp_path, config, name)


@pytest.fixture
def file_server(tmp_path):
    """A local HTTP server (the standard library's) for the files of ``tmp_path / "served"``; the paths
    it was asked for, and a function that stops it."""
    import functools
    import http.server

    from standins import http_server

    served = tmp_path / "served"
    served.mkdir()
    asked: list[str] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):  # the requests, not stderr
            asked.append(self.path)

    with http_server(functools.partial(Handler, directory=served)) as (url, stop):
        yield url, served, asked, stop


def test_url_source_downloads_checks_and_caches_the_file(tmp_path, monkeypatch, file_server, caplog):
    """The download itself (a local server): the bytes checked against the pinned blob id before they
    are cached; a wrong id or an unreachable server is one line and caches nothing; a cached file is
    read without asking the server again."""
    from huggingface_hub import constants

    monkeypatch.setenv("LIE_URL_CACHE", str(tmp_path / "urls"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    base, served, asked, stop = file_server
    name = "olympiadbench-qwen25"
    src = data_file(LOCAL[name])
    shutil.copy(src, served / "test.jsonl")
    config = repo_config()
    spec = config["datasets"]["eval"][name]
    spec["url"] = f"{base}/test.jsonl"
    spec["sha1"] = "0" * 40
    with pytest.raises(LieError, match=f"has git blob id {git_blob_sha1(src.read_bytes())}, expected 0000"):
        build(tmp_path, config, name)
    assert not url_cache_path(spec["url"]).exists()
    spec["sha1"] = git_blob_sha1(src.read_bytes())
    table, out = build(tmp_path, config, name)
    local, _ = build(tmp_path / "l", local_config(name), name)
    assert table.to_pylist() == local.to_pylist() and asked == ["/test.jsonl", "/test.jsonl"]
    assert url_cache_path(spec["url"]).read_bytes() == src.read_bytes()
    stop()
    again, _ = build(tmp_path / "again", config, name)  # from the cache: the server is gone
    assert again.to_pylist() == table.to_pylist() and len(asked) == 2
    spec["url"] = f"{base}/other.jsonl"
    with pytest.raises(LieError, match=r"cannot download .*other\.jsonl .*; set .*\.local to a copy"):
        build(tmp_path / "gone", config, name)
    spec["url"], spec["sha1"] = f"{base}/test.jsonl", None  # no pinned id: read, and said unchecked
    unchecked, _ = build(tmp_path / "unchecked", config, name)
    assert unchecked.to_pylist() == table.to_pylist()
    assert f"no sha1 for {spec['url']}, the file is not checked" in caplog.text


def test_rows_without_a_question_or_answer_are_skipped_and_named_and_none_left_is_one_line(tmp_path, caplog):
    """A local JSONL whose rows 1 and 3 have an empty problem or no answer: the other rows are written,
    the skipped source rows named in the log and counted in the metadata; a file of such rows only
    is one line naming the config entry, and nothing is written."""
    import json
    import logging

    rows = [{"problem": "1 + 1?", "answer": "2"}, {"problem": "  ", "answer": "3"},
            {"problem": "2 + 2?", "answer": "4"}, {"problem": "3 + 3?", "answer": None}]  # fmt: skip
    source = tmp_path / "source.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    config = repo_config()
    config["datasets"]["eval"]["aime24-hub"].update(
        local=str(source), url=None, sha1=None, hf_id=None, expected_rows=None
    )
    with caplog.at_level(logging.WARNING):
        table, out = build(tmp_path, config, "aime24-hub")
    assert [r["reward_model"]["ground_truth"] for r in table.to_pylist()] == ["2", "4"]
    assert "aime24-hub: skipped 2 rows without a question or answer (source rows [1, 3])" in caplog.text
    assert read_metadata(out)["rows"]["skipped_empty"] == 2
    source.write_text("".join(json.dumps(r) + "\n" for r in (rows[1], rows[3])), encoding="utf-8")
    with pytest.raises(LieError, match=r"datasets.eval.aime24-hub: no rows left to write; check its source"):
        build(tmp_path, config, "aime24-hub")
    assert read_metadata(out)["rows"]["skipped_empty"] == 2  # the earlier file stays
