"""DAPO-Math-17k beside the authors' file: their 17,390 rows (a 17-row slice in tests/data/shared)
against our dedup on the prompt.

The hub set cannot be read here; its layout (verl rows, the problem inside DAPO's instruction,
DAPO's id in ``extra_info.index``) is rebuilt from the authors' own rows, so that what our rule
does to their problems, and what ``lie data --compare-with`` reports, is checked on real text.
"""

from __future__ import annotations

import json
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from conftest import full
from hubcache import add_dataset, repo_config

from lie.cli import main
from lie.stages.data.adapters import DAPO_PREFIX, DAPO_SUFFIX
from lie.stages.data.compare import compare

# rows, distinct texts, texts listed twice, of them with two answers: the slice and the full file
COUNTS = {"authors_dapo": (17, 14, 3, 1), "full_authors_dapo": (17390, 17180, 210, 5)}


@pytest.mark.parametrize("which", ["authors_dapo", full("full_authors_dapo")])
def test_the_authors_file_is_not_a_dedup_on_the_prompt(which, request):
    rows = pq.read_table(request.getfixturevalue(which)).to_pylist()
    total, distinct, repeated, two_answers = COUNTS[which]
    ids = Counter(r["extra_info"]["index"] for r in rows)
    texts = Counter(r["prompt"][0]["content"] for r in rows)
    twice = [t for t, n in texts.items() if n > 1]
    assert (len(rows), len(ids), len(texts), len(twice)) == (total, total, distinct, repeated)
    assert (
        max(texts.values()) == 2 and max(ids.values()) == 1
    )  # one row an id: the same problem under two ids
    answers = {
        t: {r["reward_model"]["ground_truth"] for r in rows if r["prompt"][0]["content"] == t} for t in twice
    }
    assert sum(len(a) > 1 for a in answers.values()) == two_answers  # some even with two answers


@pytest.mark.parametrize("which", ["authors_dapo", full("full_authors_dapo")])
def test_compare_names_the_rows_in_one_file_only(tmp_path, hub, which, request, capsys):
    authors_dapo = request.getfixturevalue(which)
    _, distinct, repeated, _ = COUNTS[which]
    theirs = pq.read_table(authors_dapo).to_pylist()
    dropped = theirs[:3]  # rows of theirs that our "hub" lacks
    extra = ["What is $2+3$?", "What is $7 \\cdot 6$?"]  # problems only ours has
    hub_rows = [
        {"data_source": "math_dapo", "prompt": [{"role": "user", "content": DAPO_PREFIX + text + DAPO_SUFFIX}],
         "ability": "MATH", "reward_model": {"ground_truth": gold, "style": "rule-lighteval/MATH_v2"},
         "extra_info": {"index": uid}}
        for text, gold, uid in [(r["prompt"][0]["content"], r["reward_model"]["ground_truth"],
                                 r["extra_info"]["index"]) for r in theirs[3:]] + [(t, "5", f"ours-{i}")
                                                                                   for i, t in enumerate(extra)]
    ]  # fmt: skip
    add_dataset(
        hub, "BytedTsinghua-SIA/DAPO-Math-17k", {"data/dapo-math-17k.parquet": pa.Table.from_pylist(hub_rows)}
    )
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump(repo_config()), encoding="utf-8")
    out = tmp_path / "dapo.parquet"
    args = ["data", "dapo", "--config", str(cfg), "--out", str(out), "--no-progress",
            "--compare-with", str(authors_dapo)]  # fmt: skip
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    # a dedup on the prompt keeps one row of each of their 210 twice-listed problems
    assert report["ours"]["rows"] == report["ours"]["distinct_questions"] == distinct - 3 + 2
    assert report["repeated_questions"] == {"ours": 0, "theirs": repeated}
    assert [r["question"] for r in report["only_ours"]["rows"]] == extra
    assert [r["source_id"] for r in report["only_theirs"]["rows"]] == [
        r["extra_info"]["index"] for r in dropped
    ]
    ids = report["source_ids"]  # their second id of a twice-listed problem is not in ours either
    assert (ids["shared"], ids["only_theirs"]["count"], ids["only_ours"]["count"]) == (
        distinct - 3,
        3 + repeated,
        2,
    )
    assert compare(out, authors_dapo, limit=1)["only_ours"] == {
        "count": 2,
        "rows": report["only_ours"]["rows"][:1],
    }
