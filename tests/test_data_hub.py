"""``lie data`` through the hub path: a pre-filled hub cache read with ``HF_HUB_OFFLINE=1``.

The repos are laid out as on the hub (README ``configs:``, ``data/*.parquet``, CSV) under the
ids and revisions config.yaml names, so the real entries of config.yaml are what is tested. Their
content is real where we have it: AMC's problems and AIME 2024 from the slices in tests/data/shared
(AMC's 83 from ../shared/data where present), DAPO's and DeepMath's problems from the authors' files.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from conftest import data_file, full, shared_file
from hubcache import REPO, add_dataset, readme_configs, repo_config, standin_hub_api

from lie.config import Config
from lie.core.errors import LieError
from lie.formats.jsonl import read_jsonl
from lie.formats.rows import read_metadata
from lie.stages.data.adapters import DAPO_PREFIX, DAPO_SUFFIX
from lie.stages.data.build import build_dataset

SUFFIX = " Let's think step by step and output the final answer within \\boxed{}."


def build(tmp_path, config, name, **kwargs):
    out = tmp_path / f"{name}.parquet"
    build_dataset(Config.of(config), name, out, progress=False, **kwargs)
    return pq.read_table(out).to_pylist(), read_metadata(out)


def authors_amc(where: str) -> pa.Table:
    path = {"slice": data_file, "full": shared_file}[where]("lie-authors/valid.all_qwen3.parquet")
    table = pq.read_table(path).to_pylist()
    seen: dict[int, dict] = {}
    for row in table:
        if row["data_source"] == "amc":
            seen.setdefault(row["extra_info"]["index"], row)
    rows = [seen[k] for k in sorted(seen)]
    return pa.table(
        {
            "id": list(range(len(rows))),
            "problem": [r["prompt"][0]["content"].removesuffix(SUFFIX) for r in rows],
            "answer": [float(r["reward_model"]["ground_truth"]) for r in rows],
            "url": ["https://artofproblemsolving.com/wiki"] * len(rows),
        }
    )


def aime_table(rows: int = 30) -> pa.Table:
    records = [r for _, r in read_jsonl(str(data_file("qwen25-math-eval/aime24.jsonl")))][:rows]
    keep = ("id", "problem", "solution", "answer", "url")
    return pa.table({k: [r[k] for r in records] for k in keep})


@pytest.mark.parametrize("where, problems", [("slice", 4), full("full", 83)])
def test_amc_problems_from_the_hub_cache(tmp_path, hub, where, problems):
    commit = add_dataset(
        hub, "AI-MO/aimo-validation-amc", {"data/train-00000-of-00001.parquet": authors_amc(where)}
    )
    rows, meta = build(tmp_path, repo_config(), "amc-hub")
    assert len(rows) == problems
    assert rows[0]["reward_model"]["ground_truth"] == "142"  # 142.0 on the hub
    assert all(r["reward_model"]["ground_truth"].lstrip("-").isdigit() for r in rows)
    assert rows[0]["prompt"][0]["content"].endswith(SUFFIX) and rows[0]["data_source"] == "amc-hub"
    assert meta["source"] == {
        "type": "hub",
        "hf_id": "AI-MO/aimo-validation-amc",
        "revision": "69d78a4a2c840e82d69af6bc742bda09005f6316",  # pinned in config.yaml
        "commit": commit,
        "config": None,
        "split": "train",
        "files": ["data/train-00000-of-00001.parquet"],
    }


def test_revision_resolution(tmp_path, hub):
    old = add_dataset(
        hub,
        "HuggingFaceH4/aime_2024",
        {"data/train-00000-of-00001.parquet": aime_table(3)},
        refs=("v1",),
        commit=None,
    )
    new = add_dataset(hub, "HuggingFaceH4/aime_2024", {"data/train-00000-of-00001.parquet": aime_table(4)})
    config = repo_config()
    rows, meta = build(tmp_path, config, "aime24-hub")
    assert (len(rows), meta["source"]["commit"]) == (4, new)
    for revision in (old, "v1"):
        config["datasets"]["eval"]["aime24-hub"]["revision"] = revision
        rows, meta = build(tmp_path, config, "aime24-hub")
        assert (len(rows), meta["source"]["commit"], meta["source"]["revision"]) == (3, old, revision)
    config["datasets"]["eval"]["aime24-hub"]["revision"] = "f" * 40
    with pytest.raises(
        LieError, match="'aime24-hub' .* is not in the hub cache .*HF_HUB_OFFLINE is set.*local"
    ):
        build(tmp_path, config, "aime24-hub")


def dapo_raw(problems: int = 12, copies: int = 100) -> tuple[pa.Table, list[str], list[str]]:
    """DAPO-Math-17k's raw layout: verl rows, the problem inside DAPO's instruction, many copies."""
    authors = pq.read_table(data_file("lie-authors/dapo-math-17k_llama-add1k.parquet")).to_pylist()
    seen, picked = set(), []
    for row in authors:
        text = row["prompt"][0]["content"]
        if text not in seen:
            seen.add(text)
            picked.append(row)
        if len(picked) == problems:
            break
    bare = [r["prompt"][0]["content"] for r in picked]
    gold = [r["reward_model"]["ground_truth"] for r in picked]
    order = [i for _ in range(copies) for i in range(problems)]
    table = pa.Table.from_pylist(
        [
            {
                "data_source": "math_dapo",
                "prompt": [{"content": DAPO_PREFIX + bare[i] + DAPO_SUFFIX, "role": "user"}],
                "ability": "MATH",
                "reward_model": {"ground_truth": gold[i], "style": "rule-lighteval/MATH_v2"},
                "extra_info": {"index": f"uuid-{i}-{n}"},
            }
            for n, i in enumerate(order)
        ]
    )
    return table, bare, gold


def test_dapo_dedup_and_bare_problems(tmp_path, hub):
    table, bare, gold = dapo_raw()
    add_dataset(hub, "BytedTsinghua-SIA/DAPO-Math-17k", {"data/dapo-math-17k.parquet": table})
    rows, meta = build(tmp_path, repo_config(), "dapo")
    assert meta["rows"] == {"read": 1200, "after_dedup": 12, "written": 12, "skipped_empty": 0}
    assert [r["extra_info"]["question"] for r in rows] == bare  # the authors' bare statements
    assert [r["reward_model"]["ground_truth"] for r in rows] == gold
    assert rows[0]["prompt"][0]["content"] == bare[0] + SUFFIX
    assert rows[0]["extra_info"]["source_id"] == "uuid-0-0" and rows[0]["data_source"] == "dapo"
    assert {r["extra_info"]["split"] for r in rows} == {"train"}


def deepmath_repo(hub) -> dict[str, float]:
    authors = pq.read_table(data_file("lie-authors/deepmath-5k-octothinker_add1k.parquet")).to_pylist()
    rows = len(authors)
    questions = [r["prompt"][0]["content"].removesuffix(SUFFIX) for r in authors]
    difficulty = [float(1 + i % 10) for i in range(rows)]
    table = pa.table(
        {
            "question": questions,
            "final_answer": [r["reward_model"]["ground_truth"] for r in authors],
            "difficulty": difficulty,
            "topic": ["Mathematics"] * rows,
            "r1_solution_1": ["long solution " * 200] * rows,
        }
    )
    half = rows // 2
    add_dataset(
        hub,
        "zwhe99/DeepMath-103K",
        {
            "data/train-00000-of-00002.parquet": table.slice(0, half),
            "data/train-00001-of-00002.parquet": table.slice(half),
        },
    )
    return dict(zip(questions, difficulty))


def test_deepmath_seeded_draw_reads_only_needed_columns(tmp_path, hub):
    difficulty = deepmath_repo(hub)
    config = repo_config()
    config["datasets"]["train"]["deepmath-5k-draw"].update(sample=5, seed=42)
    rows, meta = build(tmp_path, config, "deepmath-5k-draw")
    again, _ = build(tmp_path, config, "deepmath-5k-draw")
    assert len(rows) == 5 and rows == again
    assert meta["columns"] == ["question", "final_answer"]
    assert (
        meta["sample"]["size"] == 5
        and meta["sample"]["seed"] == 42
        and "default_rng" in meta["sample"]["method"]
    )
    assert meta["filter"] is None and meta["rows"]["read"] == 15
    config["datasets"]["train"]["deepmath-5k-draw"].update(
        seed=7, filter={"difficulty": {"min": 5, "max": 8}}
    )
    other, meta = build(tmp_path, config, "deepmath-5k-draw")
    assert {r["extra_info"]["question"] for r in other} != {r["extra_info"]["question"] for r in rows}
    assert all(5 <= difficulty[r["extra_info"]["question"]] <= 8 for r in other)
    assert meta["filter"] == {"difficulty": {"min": 5, "max": 8}} and meta["rows"]["after_filter"] == 5
    assert meta["columns"] == ["question", "final_answer", "difficulty"]
    config["datasets"]["train"]["deepmath-5k-draw"].update(sample=6)
    with pytest.raises(LieError, match="sample is 6 but only 5 rows pass the filter"):
        build(tmp_path, config, "deepmath-5k-draw")


def arc_table(rows: list[tuple[str, list[str], list[str], str]]) -> pa.Table:
    return pa.Table.from_pylist(
        [
            {"id": f"q{i}", "question": q, "choices": {"text": t, "label": lab}, "answerKey": k}
            for i, (q, t, lab, k) in enumerate(rows)
        ]
    )


def test_arc_config_split_and_numeric_labels(tmp_path, hub):
    challenge = arc_table(
        [
            ("Which is a gas?", ["ice", "steam", "rock"], ["A", "B", "C"], "B"),
            ("Pick four.", ["1", "2", "3", "4"], ["1", "2", "3", "4"], "4"),
            ("Five options?", ["a", "b", "c", "d", "e"], ["A", "B", "C", "D", "E"], "E"),
        ]
    )
    easy = arc_table([("Easy?", ["yes", "no"], ["A", "B"], "A")])
    add_dataset(
        hub,
        "allenai/ai2_arc",
        {
            "README.md": readme_configs(
                {
                    "ARC-Challenge": {"test": "ARC-Challenge/test-*", "train": "ARC-Challenge/train-*"},
                    "ARC-Easy": {"test": "ARC-Easy/test-*"},
                }
            ),
            "ARC-Challenge/test-00000-of-00001.parquet": challenge,
            "ARC-Challenge/train-00000-of-00001.parquet": easy,
            "ARC-Easy/test-00000-of-00001.parquet": easy,
        },
    )
    config = repo_config()
    rows, meta = build(tmp_path, config, "arc-c")
    assert [r["reward_model"]["ground_truth"] for r in rows] == ["B", "D", "E"]
    assert [r["extra_info"]["letters"] for r in rows] == [list("ABC"), list("ABCD"), list("ABCDE")]
    assert rows[1]["prompt"][0]["content"].startswith("Pick four.\n\nA. 1\nB. 2\nC. 3\nD. 4\n\n")
    assert {r["ability"] for r in rows} == {"choice"} and meta["source"]["files"] == [
        "ARC-Challenge/test-00000-of-00001.parquet"
    ]
    config["datasets"]["eval"]["arc-c"]["split"] = "validation"
    with pytest.raises(
        LieError, match="split 'validation' is not in .*it has test, train; fix datasets.eval.arc-c.split"
    ):
        build(tmp_path, config, "arc-c")
    config["datasets"]["eval"]["arc-c"].update(split="test", config="ARC-Hard")
    with pytest.raises(LieError, match="config 'ARC-Hard'.*fix datasets.eval.arc-c.config"):
        build(tmp_path, config, "arc-c")


GPQA_CSV = (
    "Record ID,Question,Correct Answer,Incorrect Answer 1,Incorrect Answer 2,Incorrect Answer 3,High-level domain\n"
    + "".join(
        f'rec{i},"What is\nitem {i}?", right {i} ,wrong a{i},wrong b{i},"wrong, c{i}",Physics\n'
        for i in range(12)
    )
)


def gpqa_repo(hub) -> None:
    add_dataset(
        hub,
        "Idavidrein/gpqa",
        {
            "README.md": readme_configs(
                {"gpqa_diamond": {"train": "gpqa_diamond.csv"}, "gpqa_main": {"train": "gpqa_main.csv"}}
            ),
            "gpqa_diamond.csv": GPQA_CSV,
            "gpqa_main.csv": GPQA_CSV,
        },
    )


def test_gpqa_from_the_cache_with_recorded_shuffle(tmp_path, hub):
    gpqa_repo(hub)
    rows, meta = build(tmp_path, repo_config(), "gpqa-diamond")
    assert len(rows) == 12 and meta["shuffle"]["seed"] == 0 and meta["source"]["config"] == "gpqa_diamond"
    for i, row in enumerate(rows):
        info = row["extra_info"]
        assert info["question"] == f"What is\nitem {i}?" and info["source_id"] == f"rec{i}"
        assert info["choices"][info["letters"].index(row["reward_model"]["ground_truth"])] == f"right {i}"
        assert f"wrong, c{i}" in info["choices"]
    assert len(Counter(r["reward_model"]["ground_truth"] for r in rows)) > 1


def test_gpqa_without_a_token_says_what_to_do(tmp_path, hub, monkeypatch):
    import huggingface_hub
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)  # online: the token is checked before any request
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: None)
    expected = "set HF_TOKEN to a token that has accepted the GPQA terms at https://huggingface.co/datasets/Idavidrein/gpqa"
    with pytest.raises(LieError, match="'gpqa-diamond'") as info:
        build(tmp_path, repo_config(), "gpqa-diamond")
    assert expected in str(info.value)


def test_mmlu_pro_and_polaris_jsonl(tmp_path, hub):
    mmlu = pa.table(
        {
            "question_id": [1, 2],
            "question": ["Ten?", "Four?"],
            "options": [[f"opt{i}" for i in range(10)], ["w", "x", "y", "z"]],
            "answer": ["J", "C"],
            "answer_index": [9, 2],
            "cot_content": ["", ""],
            "category": ["math", "law"],
        }
    )
    add_dataset(
        hub,
        "TIGER-Lab/MMLU-Pro",
        {
            "data/test-00000-of-00001.parquet": mmlu,
            "data/validation-00000-of-00001.parquet": mmlu.slice(0, 1),
        },
    )
    rows, _ = build(tmp_path, repo_config(), "mmlu-pro")
    assert [r["reward_model"]["ground_truth"] for r in rows] == ["J", "C"]
    assert (
        rows[0]["extra_info"]["letters"] == list("ABCDEFGHIJ")
        and "J. opt9" in rows[0]["prompt"][0]["content"]
    )
    polaris = [
        {"problem": "What is $1+1$?", "answer": "2", "difficulty": "3/8"},
        {"problem": "Half of 3?", "answer": 1.5, "difficulty": "8/8"},
    ]
    add_dataset(hub, "POLARIS-Project/Polaris-Dataset-53K", {"polaris-data-53K.jsonl": polaris})
    rows, meta = build(tmp_path, repo_config(), "polaris")
    assert [r["reward_model"]["ground_truth"] for r in rows] == ["2", "1.5"]
    assert meta["source"]["files"] == ["polaris-data-53K.jsonl"]


def test_missing_data_set_and_missing_column(tmp_path, hub):
    with pytest.raises(
        LieError,
        match="data set .math500-hub. \\(HuggingFaceH4/MATH-500 at revision 6e4ed1a2a79a[0-9a-f]*\\) is not in the hub cache",
    ):
        build(tmp_path, repo_config(), "math500-hub")
    add_dataset(
        hub,
        "yentinglin/aime_2025",
        {"data/train-00000-of-00001.parquet": aime_table().drop_columns(["answer"])},
    )
    with pytest.raises(
        LieError, match="datasets.eval.aime25-hub: column 'answer' missing in .*train-00000-of-00001.parquet"
    ):
        build(tmp_path, repo_config(), "aime25-hub")
    assert not list(tmp_path.glob("*.parquet"))


def test_cli_offline_env_and_the_token_never_leaks(tmp_path):
    """A real process: HF_HOME, HF_HUB_OFFLINE=1 and HF_TOKEN from the environment, DEBUG logs."""
    secret = "hf_SECRETtoken1234567890abcdef"
    gpqa_repo(tmp_path / "home" / "hub")
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump(repo_config()), encoding="utf-8")
    out = tmp_path / "gpqa.parquet"
    env = dict(
        os.environ,
        HF_HOME=str(tmp_path / "home"),
        HF_HUB_OFFLINE="1",
        HF_TOKEN=secret,
        PYTHONPATH=str(REPO / "src"),
    )
    env.pop("HF_HUB_CACHE", None)
    cmd = [
        sys.executable,
        "-m",
        "lie",
        "data",
        "--config",
        str(cfg),
        "gpqa-diamond",
        "--out",
        str(out),
        "--log-level",
        "DEBUG",
    ]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert pq.read_table(out).num_rows == 12
    assert "offline: hub cache only" in proc.stderr  # the logs are there, the token is not
    for blob in (proc.stdout, proc.stderr, out.read_bytes().decode("latin-1")):
        assert secret not in blob


def test_local_mirror_folder_reads_like_the_hub(tmp_path, hub):
    """``hf download --local-dir`` layout (its .cache/ folder included) set as ``local:``."""
    from hubcache import to_bytes

    mirror = tmp_path / "mirror" / "gpqa"
    files = {
        "README.md": readme_configs(
            {"gpqa_diamond": {"train": "gpqa_diamond.csv"}, "gpqa_main": {"train": "gpqa_main.csv"}}
        ),
        "gpqa_diamond.csv": GPQA_CSV,
        "gpqa_main.csv": GPQA_CSV.replace("rec", "main"),
        ".cache/huggingface/download/gpqa_diamond.csv.metadata": "abc\n",
    }
    for path, content in files.items():
        (mirror / path).parent.mkdir(parents=True, exist_ok=True)
        (mirror / path).write_bytes(to_bytes(content))
    config = repo_config()
    config["datasets"]["eval"]["gpqa-diamond"]["local"] = str(mirror)
    gpqa_repo(hub)
    from_hub, _ = build(tmp_path, repo_config(), "gpqa-diamond")
    rows, meta = build(tmp_path, config, "gpqa-diamond")  # no token needed, nothing fetched
    assert rows == from_hub
    assert meta["source"] == {
        "type": "local",
        "path": str(mirror),
        "config": "gpqa_diamond",
        "split": "train",
        "files": ["gpqa_diamond.csv"],
    }


@pytest.fixture
def answering_hub(hub, monkeypatch):
    """The hub's HTTP API stood in for (tests/hubcache.py), online, with a token set."""
    with standin_hub_api(monkeypatch) as answer:
        yield answer


@pytest.mark.parametrize(
    ("name", "status", "code", "message"),
    [
        (
            "math500-hub",
            404,
            "RepoNotFound",
            r"no such data set on the hub; fix datasets\.eval\.math500-hub\.hf_id",
        ),
        ("math500-hub", 404, "RevisionNotFound", r"the revision does not exist on the hub; fix .*\.revision"),
        (
            "gpqa-diamond",
            403,
            "GatedRepo",
            "is gated: set HF_TOKEN to a token that has accepted the GPQA terms",
        ),
        ("gpqa-diamond", 401, None, "is gated: set HF_TOKEN"),
        ("math500-hub", 500, None, r"the hub answered HTTP 500; try again later or use .*\.local"),
    ],
)
def test_what_the_hub_answers_online_is_one_line(tmp_path, answering_hub, name, status, code, message):
    answering_hub.update(status=status, code=code)
    with pytest.raises(LieError, match=message) as info:
        build(tmp_path, repo_config(), name)
    assert "\n" not in str(info.value) and "hf_standin" not in str(info.value)
    assert not (tmp_path / f"{name}.parquet").exists()


def test_a_config_name_the_repo_does_not_declare_falls_back_to_its_file_of_that_name(tmp_path):
    """A hub snapshot without a README list of configs (the ``datasets`` builder knows only
    ``default``): ``config: main`` reads the repo's ``main.jsonl``; a name no file has is one line
    naming the entry's ``config`` key."""
    from lie.stages.data.sources import files_for_split

    (tmp_path / "data").mkdir()
    for name in ("main", "other"):
        (tmp_path / "data" / f"{name}.jsonl").write_text(
            '{"problem": "a", "answer": "1"}\n', encoding="utf-8"
        )
    assert files_for_split(tmp_path, "main", "test", "datasets.eval.x") == [tmp_path / "data" / "main.jsonl"]
    with pytest.raises(
        LieError,
        match=r"datasets.eval.x: cannot find the files of config 'nope' .*fix datasets.eval.x.config",
    ):
        files_for_split(tmp_path, "nope", "test", "datasets.eval.x")


def test_a_test_that_forgets_the_hub_fixture_still_reads_the_hub_offline():
    """tests/conftest.py's session guard: a hub name not in any cache fails at once instead of waiting
    on the network (where no test may go)."""
    from huggingface_hub import constants

    from lie.engines.generation import load_model

    assert constants.HF_HUB_OFFLINE is True
    with pytest.raises(LieError, match="cannot load a model from 'no-such-org/no-such-model'"):
        load_model("no-such-org/no-such-model")
