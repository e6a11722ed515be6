"""The authors' own files as pinned sources (LINs-lab/LIE at 1b3bb02), offline.

config.yaml takes the in-domain benchmarks from their ``valid.all_qwen3.parquet`` (bare questions:
``valid.all_llama.parquet``) and OctoThinker's training data from their
``deepmath-5k-octothinker_add1k.parquet``, each a raw URL at that commit checked against its git
blob id. The files are put in the download cache (a temporary folder) and built with the hub
offline, exactly as a download would be read: the slices of tests/data/shared under the slices'
blob ids, and the full files of ../shared/data under the pinned ones where they are present.
"""

from __future__ import annotations

import shutil

import pyarrow.parquet as pq
import pytest
from conftest import SHARED, data_file, full, shared_file
from hubcache import repo_config

from lie.cli import main
from lie.config import Config
from lie.core.errors import LieError
from lie.formats.prompts import render_question
from lie.formats.rows import read_metadata
from lie.stages.data.adapters import AUTHORS_INSTRUCTION, FORMATS, Context, normalise_answer
from lie.stages.data.build import VERBATIM, build_dataset
from lie.stages.data.sources import git_blob_sha1, url_cache_path

COMMIT = "1b3bb02fc8b55e07e0defddf77ae531ad0a9e0eb"
QWEN, LLAMA = "lie-authors/valid.all_qwen3.parquet", "lie-authors/valid.all_llama.parquet"
DEEPMATH = "lie-authors/deepmath-5k-octothinker_add1k.parquet"
DAPO = "lie-authors/dapo-math-17k_llama-add1k.parquet"
IN_DOMAIN = {  # benchmark: (the authors' data_source, problems in the slice, in the full file)
    "aime24": ("aime", 4, 30),
    "aime25": ("aime25", 4, 30),
    "amc": ("amc", 4, 83),
    "math500": ("math", 15, 500),
    "olympiadbench": ("olympiad_bench", 6, 675),
    "minerva": ("minerva", 6, 272),
}
ROWS = {"slice": {QWEN: 51, DEEPMATH: 15, DAPO: 17}, "full": {QWEN: 6023, DEEPMATH: 5000, DAPO: 17390}}
ORIGINAL_BLOB = {  # the full files' git blob ids, as ../shared/data/README.md and tests/data/README.md list them
    QWEN: "b7d15c470126a092b90b5727dddb5606bbf985ec",
    LLAMA: "e578eb47e918bc1b6d196f7b2edaf3c41f877e01",
    DEEPMATH: "9c72f4d345bf1e489bded7ed33b3d146fb52f43b",
    DAPO: "046061594b0f526dea84235a35dbf36305632d2f",
}
OPEN = {"slice": data_file, "full": shared_file}


@pytest.fixture(params=["slice"])
def cache(request, tmp_path, monkeypatch):
    """An offline download cache holding the authors' four files (or their slices) under the pinned URLs."""
    from huggingface_hub import constants

    where = request.param
    monkeypatch.setenv("LIE_URL_CACHE", str(tmp_path / "urls"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    config = repo_config()
    entries = [config["datasets"]["eval"][name] for name in IN_DOMAIN]
    entries += [entry["bare"] for entry in entries]
    entries += [config["datasets"]["train"][name] for name in ("deepmath-5k", "dapo-llama")]
    for entry in entries:
        src = OPEN[where](f"lie-authors/{entry['url'].rsplit('/', 1)[1]}")
        if where == "slice":  # the slice stands in for the file: the pin names its blob id
            entry["sha1"] = git_blob_sha1(src.read_bytes())
        cached = url_cache_path(entry["url"])
        cached.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, cached)
    config["where"] = where  # which files the test reads (not a config key: the builds never look)
    return config


def build(tmp_path, config, name, **kwargs):
    out = tmp_path / f"{name}{'.bare' if kwargs.get('bare') else ''}.parquet"
    build_dataset(Config.of(config), name, out, progress=False, **kwargs)
    return pq.read_table(out).to_pylist(), read_metadata(out)


def first_rows(relative: str, where: str, source: str | None = None) -> list[dict]:
    """The first row of every problem of one ``data_source`` (or all rows), in file order."""
    rows, seen = [], set()
    for row in pq.read_table(OPEN[where](relative)).to_pylist():
        if source is not None:
            if row["data_source"] != source or row["extra_info"]["index"] in seen:
                continue
            seen.add(row["extra_info"]["index"])
        rows.append(row)
    return rows


@pytest.mark.parametrize(
    "group, name, relative",
    [("eval", b, QWEN) for b in IN_DOMAIN]
    + [("train", "deepmath-5k", DEEPMATH), ("train", "dapo-llama", DAPO)],
)
def test_config_pins_the_authors_files_at_their_commit(group, name, relative):
    entry = repo_config()["datasets"][group][name]
    assert (
        entry["url"]
        == f"https://raw.githubusercontent.com/LINs-lab/LIE/{COMMIT}/data/{relative.split('/')[1]}"
    )
    assert entry["sha1"] == ORIGINAL_BLOB[relative]
    assert (entry["format"], entry["local"]) == ("lie-authors", None)
    if group == "eval":
        assert entry["bare"]["url"].endswith(f"{COMMIT}/data/valid.all_llama.parquet")
        assert entry["bare"]["sha1"] == ORIGINAL_BLOB[LLAMA]


@SHARED
@pytest.mark.parametrize("relative", list(ORIGINAL_BLOB))
def test_the_full_files_have_the_pinned_blob_ids(relative):
    assert git_blob_sha1(shared_file(relative).read_bytes()) == ORIGINAL_BLOB[relative]


@pytest.mark.parametrize("cache", ["slice", full("full")], indirect=True)
@pytest.mark.parametrize("name", list(IN_DOMAIN))
def test_in_domain_sets_are_the_authors_problems_and_prompts(tmp_path, cache, name):
    where = cache["where"]
    source, problems = IN_DOMAIN[name][0], IN_DOMAIN[name][1 if where == "slice" else 2]
    rows, meta = build(tmp_path, cache, name)
    theirs = first_rows(QWEN, where, source)
    assert len(rows) == len(theirs) == problems
    assert cache["datasets"]["eval"][name]["expected_rows"] == IN_DOMAIN[name][2]
    for ours, row in zip(rows, theirs):
        assert ours["prompt"] == [{"role": "user", "content": row["prompt"][0]["content"]}]  # verbatim
        assert ours["reward_model"]["ground_truth"] == normalise_answer(row["reward_model"]["ground_truth"])
        assert ours["extra_info"]["source_id"] == str(row["extra_info"]["index"])
        assert ours["data_source"] == name and ours["extra_info"]["kind"] == "math"
    # their template is the config's: the question through prompt.math is their prompt, byte for byte
    template = cache["prompt"]["math"]
    assert all(
        render_question(template, question=r["extra_info"]["question"]) == r["prompt"][0]["content"]
        for r in rows
    )
    entry = cache["datasets"]["eval"][name]
    assert meta["source"] == {"type": "url", "url": entry["url"], "sha1": entry["sha1"]}
    assert meta["template"] == VERBATIM and meta["filter"] == {"data_source": [source]}
    assert meta["rows"]["read"] == ROWS[where][QWEN] and meta["rows"]["written"] == problems


def test_bare_questions_are_the_authors_llama_file(tmp_path, cache):
    rows, _ = build(tmp_path, cache, "aime24")
    bare, meta = build(tmp_path, cache, "aime24", bare=True)
    llama = first_rows(LLAMA, "slice", "aime")
    assert [r["prompt"][0]["content"] for r in bare] == [r["prompt"][0]["content"] for r in llama]
    assert [r["prompt"][0]["content"] + AUTHORS_INSTRUCTION for r in bare] == [
        r["prompt"][0]["content"] for r in rows
    ]
    assert [r["reward_model"] for r in bare] == [r["reward_model"] for r in rows]
    assert (
        meta["bare"] is True and meta["source"]["url"] == cache["datasets"]["eval"]["aime24"]["bare"]["url"]
    )


def test_a_set_without_a_bare_file_puts_the_question_alone(tmp_path):
    config = repo_config()
    config["datasets"]["eval"]["math500-hub"].update(local=str(data_file("qwen25-math-eval/math500.jsonl")))
    rows, meta = build(tmp_path, config, "math500-hub", bare=True)
    assert all(r["prompt"][0]["content"] == r["extra_info"]["question"] for r in rows)
    assert meta["template"] == "{question}"
    with pytest.raises(LieError, match="--bare is for evaluation sets; 'dapo' is in datasets.train"):
        build(tmp_path, config, "dapo", bare=True)


@pytest.mark.parametrize("cache", ["slice", full("full")], indirect=True)
def test_octothinker_trains_on_the_authors_deepmath_file(tmp_path, cache):
    where = cache["where"]
    rows, meta = build(tmp_path, cache, "deepmath-5k")
    theirs = first_rows(DEEPMATH, where)
    assert len(rows) == len(theirs) == ROWS[where][DEEPMATH]
    assert [r["prompt"][0]["content"] for r in rows] == [r["prompt"][0]["content"] for r in theirs]
    assert all(r["prompt"][0]["content"].endswith(AUTHORS_INSTRUCTION) for r in rows)
    assert [r["reward_model"]["ground_truth"] for r in rows] == [
        normalise_answer(r["reward_model"]["ground_truth"]) for r in theirs
    ]
    assert (
        meta["sample"] is None and meta["source"]["sha1"] == cache["datasets"]["train"]["deepmath-5k"]["sha1"]
    )
    draw = cache["datasets"]["train"]["deepmath-5k-draw"]  # the paper's words, kept as an option
    assert (draw["hf_id"], draw["sample"], draw["seed"]) == ("zwhe99/DeepMath-103K", 5000, 42)
    dapo, _ = build(tmp_path, cache, "dapo-llama")
    assert len(dapo) == ROWS[where][DAPO] and not any(
        AUTHORS_INSTRUCTION in r["prompt"][0]["content"] for r in dapo
    )


def test_a_changed_file_in_the_cache_is_refused(tmp_path, cache):
    entry = cache["datasets"]["eval"]["math500"]
    cached = url_cache_path(entry["url"])
    cached.write_bytes(cached.read_bytes() + b"\0")
    with pytest.raises(LieError, match=f"has git blob id .* expected {entry['sha1'][:8]}"):
        build(tmp_path, cache, "math500")


def test_cli_bare_flag(tmp_path, cache):
    import yaml

    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump({k: v for k, v in cache.items() if k != "where"}), encoding="utf-8")
    out = tmp_path / "bare" / "amc.parquet"
    args = ["data", "amc", "--config", str(cfg), "--bare", "--out", str(out), "--no-progress"]
    assert main(args) == 0
    rows = pq.read_table(out).to_pylist()
    assert len(rows) == 4 and not rows[0]["prompt"][0]["content"].endswith(AUTHORS_INSTRUCTION)


def test_authors_rows_parse_without_their_instruction():
    parse = FORMATS["lie-authors"].parse
    row = {"prompt": [{"role": "user", "content": "What is 1+1?" + AUTHORS_INSTRUCTION}],
           "reward_model": {"ground_truth": "2.0"}, "extra_info": {"index": -1}}  # fmt: skip
    item = parse(row, Context("datasets.train.x", 0))
    assert (item.question, item.answer, item.source_id) == ("What is 1+1?", "2", "")
    assert item.prompt == row["prompt"][0]["content"]
    bare = parse({**row, "prompt": [{"role": "user", "content": "What is 1+1?"}]}, Context("x", 0))
    assert bare.question == bare.prompt == "What is 1+1?"


def test_octothinker_keys_read_the_bare_files():
    from lie.config.layout import bare_questions, eval_data_file

    config = repo_config()
    root = eval_data_file(Config.of(config), "qwen3-4b-base", "aime24").parent
    assert (
        eval_data_file(Config.of(config), "qwen3-4b-base_dapo_gspo_lie", "aime24") == root / "aime24.parquet"
    )
    for key in ("octothinker-3b", "octothinker-3b_deepmath-5k_gspo_lie"):
        assert (
            bare_questions(Config.of(config), key)
            and eval_data_file(Config.of(config), key, "amc") == root / "bare" / "amc.parquet"
        )
    config["evaluation"]["bare_questions"] = []
    assert eval_data_file(Config.of(config), "octothinker-3b", "amc") == root / "amc.parquet"
