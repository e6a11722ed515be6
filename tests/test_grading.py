"""Math grading: agreement with direct math-verify on real answers, statuses, hard time limits."""

from __future__ import annotations

import json
import threading
import time

import pyarrow.parquet as pq
import pytest
from conftest import data_file, full, shared_file
from math_verify import parse, verify

from lie.core.errors import LieError
from lie.grading import GradeResult, GradingExecutor, default_workers, grade_item, grade_many, grade_math
from lie.grading import mathverify as mv

TOWER = "2^{2^{2^{2^{2^{2}}}}}"
FRAC_CHAIN = "$" + "\\frac{1}{1+" * 800 + "1" + "}" * 800 + "$"


VALIDATION = "lie-authors/valid.all_qwen3.parquet"
OPEN = {"slice": data_file, "full": shared_file}  # the committed slice; the whole file where present


def authors(where: str, data_source: str | None = None) -> list[tuple[str, str]]:
    """(data_source, gold) of each distinct problem of the authors' validation file."""
    rows = pq.read_table(OPEN[where](VALIDATION)).to_pylist()
    seen, out = set(), []
    for row in rows:
        key = (row["data_source"], row["extra_info"]["index"])
        if key not in seen and data_source in (None, row["data_source"]):
            seen.add(key)
            out.append((row["data_source"], row["reward_model"]["ground_truth"]))
    return out


def direct(response: str, gold: str) -> bool:
    """The authors' check, verbatim in spirit: gold first, the whole response."""
    return verify(parse("$" + gold + "$"), parse(response)) is True


def real_items(where: str) -> list[dict]:
    """Right, wrong and re-written answers for every AIME/AMC problem and up to 25 of each other set."""
    golds = authors(where)
    chosen = [g for g in golds if g[0] in ("aime", "aime25", "amc")]
    for source in ("math", "olympiad_bench", "minerva"):
        chosen += [g for g in golds if g[0] == source][:: 20 if where == "full" else 1][:25]
    solution = json.loads(OPEN[where]("qwen25-math-eval/math500.jsonl").read_text().splitlines()[4])[
        "solution"
    ]
    items = []
    for i, (source, gold) in enumerate(chosen):
        answer = gold.strip().strip("$")
        other = chosen[(i * 7 + 3) % len(chosen)][1].strip().strip("$")
        items.append(
            {"response": f"We get $x = {answer}$.\n\nThe answer is $\\boxed{{{answer}}}$.", "gold": gold}
        )
        items.append({"response": f"{solution}\n\nSo the final answer is \\boxed{{{other}}}", "gold": gold})
        if source == "amc":  # the authors' AMC golds are floats: 142.0 against an integer answer
            items.append({"response": f"Answer: \\boxed{{{int(float(gold))}}}", "gold": gold})
    return [dict(item, kind="math") for item in items]


@pytest.mark.parametrize("where", ["slice", full("full")])
def test_pool_and_in_process_agree_with_direct_math_verify_on_real_answers(where):
    items = real_items(where)
    assert len(items) > {"slice": 70, "full": 300}[where]
    expected = [direct(it["response"], it["gold"]) for it in items]
    pooled = grade_many(items, timeout_s=20, workers=2, progress=False)
    assert [r.correct for r in pooled] == expected
    assert [grade_math(it["response"], it["gold"]).correct for it in items[:60]] == expected[:60]
    # sanity: the right answers are right (AMC's 142.0 matches 142), the wrong ones mostly wrong
    right = [
        r.correct for it, r in zip(items, pooled) if "We get" in it["response"] or "Answer:" in it["response"]
    ]
    assert sum(right) / len(right) > 0.97
    assert {r.status for r in pooled} <= {"ok"}
    assert all(r.pred for r in pooled)


@pytest.mark.parametrize("where, problems, stray", [("slice", 39, 0), full("full", 1590, 5)])
def test_every_gold_of_the_authors_file_agrees_in_process(where, problems, stray):
    golds = authors(where)
    assert len(golds) == problems
    responses = [f"The answer is $\\boxed{{{gold.strip().strip('$')}}}$." for _, gold in golds]
    ours = [grade_math(r, g) for r, (_, g) in zip(responses, golds)]
    assert [x.correct for x in ours] == [direct(r, g) for r, (_, g) in zip(responses, golds)]
    assert not [g for (_, g), x in zip(golds, ours) if x.status == "error"]  # every gold parses
    assert sum(x.correct for x in ours) >= problems - stray  # two full-file golds carry a stray "$"


def test_statuses_and_predictions():
    ok = grade_math("Thus $x=3$, and the answer is \\boxed{\\frac{1}{2}}.", "0.5")
    assert (ok.correct, ok.pred, ok.status) == (True, "\\frac{1}{2}", "ok")
    wrong = grade_math("so \\boxed{7}", "204")
    assert (wrong.correct, wrong.pred, wrong.status) == (False, "7", "ok")
    none = grade_math("I could not solve it.", "204")
    assert (none.correct, none.pred, none.status) == (False, None, "no_answer")
    # an unparsable gold is reported, never scored, even when the response repeats it
    for gold in ("", "\\"):
        bad = grade_math(f"\\boxed{{{gold}}} {gold}", gold)
        assert (bad.correct, bad.status) == (False, "error") and "gold answer" in bad.message
    with pytest.raises(ValueError):
        GradeResult(True, "1", "timeout")


def test_math_verify_timeouts_are_reported(monkeypatch):
    monkeypatch.setattr(mv, "PARSE_TIMEOUT_S", 1)
    monkeypatch.setattr(mv, "VERIFY_TIMEOUT_S", 1)
    result = grade_math(f"\\boxed{{{TOWER}}}", "5")
    assert (result.correct, result.status, result.pred) == (False, "timeout", TOWER)


def test_off_the_main_thread_math_verify_runs_without_signals():
    out: list = []
    thread = threading.Thread(target=lambda: out.append(grade_math("\\boxed{204}", "204")))
    thread.start()
    thread.join(30)
    assert out and out[0].correct and out[0].status == "ok"


def _workers_of_the_forkserver() -> list:
    """The grading worker processes (children of multiprocessing's fork server)."""
    import multiprocessing.forkserver as fs

    import psutil

    pid = getattr(fs._forkserver, "_forkserver_pid", None)
    return psutil.Process(pid).children() if pid else []


def _workers_since(before: set[int]) -> list:
    """The fork server's workers not in ``before``: an executor's own, whatever other executors of this
    test process (an earlier test's, under pytest-xdist another module's) still run beside it."""
    return [p for p in _workers_of_the_forkserver() if p.pid not in before]


def test_slow_items_cost_only_themselves_and_the_limit_counts_running_time():
    """Guards of 1 s, a 4 s limit: pathological items end as math-verify timeouts, the rest stay right,
    and queueing behind them (one worker, items waiting far longer than the limit) costs nothing."""
    good = {"response": "\\boxed{204}", "gold": "204", "kind": "math"}
    bad = [
        {"response": f"So \\boxed{{{TOWER}}}", "gold": "5", "kind": "math"},
        {"response": FRAC_CHAIN, "gold": TOWER, "kind": "math"},
        {"response": "\\boxed{(10^{7})!}", "gold": "5", "kind": "math"},
    ]
    items = [bad[0], good, bad[1], good, bad[2], good, bad[0]]
    items.append({"response": "(B)", "gold": "B", "kind": "choice", "choices": ["A", "B"]})
    start = time.perf_counter()
    results = grade_many(items, timeout_s=4, workers=1, progress=False, guard_s=1)
    waited = time.perf_counter() - start
    assert waited > 4  # the last items waited longer than the limit in the queue (4 guards of 1 s before it)
    assert [r.status for r in results] == ["timeout", "ok", "timeout", "ok", "timeout", "ok", "timeout", "ok"]
    assert [r.correct for r in results] == [False, True, False, True, False, True, False, True]
    # each pathological item ended at math-verify's guard, none at the hard limit
    assert all(r.message == "math-verify timed out" for r in results if r.status == "timeout")
    # an item is charged its own running time, never its wait: the last one, quick, waited the longest
    assert results[-1].seconds < waited / 4


def test_an_item_past_the_hard_limit_kills_only_its_worker():
    """A worker that stops making progress mid-item (as in a long call into C) is killed at the limit."""
    before = {p.pid for p in _workers_of_the_forkserver()}
    with GradingExecutor(timeout_s=4, workers=1, guard_s=1) as executor:
        assert executor.grade_many([{"response": "\\boxed{1}", "gold": "1", "kind": "math"}], progress=False)[
            0
        ].correct
        (worker,) = _workers_since(before)
        future = executor.submit({"response": f"\\boxed{{{TOWER}}}", "gold": "5", "kind": "math"})
        time.sleep(0.3)  # the worker has the item and is parsing it
        worker.suspend()
        start = time.perf_counter()
        result = executor.result_of(future)
        assert time.perf_counter() - start > 3  # killed at the 4 s limit, not before it
        assert (result.correct, result.status) == (False, "timeout")
        assert result.message.startswith("killed after 4 s")
        assert not worker.is_running()
        after = executor.grade_many([{"response": "\\boxed{7}", "gold": "7", "kind": "math"}], progress=False)
        assert after[0].correct and after[0].status == "ok"  # a fresh worker took over


def test_a_worker_that_dies_costs_only_its_item():
    before = {p.pid for p in _workers_of_the_forkserver()}
    with GradingExecutor(timeout_s=30, workers=1) as executor:
        executor.grade_many([{"response": "1", "gold": "1", "kind": "math"}], progress=False)
        (worker,) = _workers_since(before)
        future = executor.submit({"response": f"\\boxed{{{TOWER}}}", "gold": "5", "kind": "math"})
        time.sleep(0.5)  # busy with the tower (math-verify gives up on it at 5 s)
        worker.kill()
        result = executor.result_of(future)
        assert result.status == "error" and "worker died (exit code -9)" in result.message
        after = executor.grade_many([{"response": "\\boxed{1}", "gold": "1", "kind": "math"}], progress=False)
        assert after[0].correct and after[0].status == "ok"


def test_the_async_face_grades_concurrently_with_the_same_workers():
    import asyncio

    items = [{"response": f"\\boxed{{{i}}}", "gold": str(i % 3), "kind": "math"} for i in range(12)]

    async def main(executor):
        return await asyncio.gather(*(executor.grade(item) for item in items))

    with GradingExecutor(timeout_s=20, workers=2) as executor:
        results = asyncio.run(main(executor))
    assert [r.correct for r in results] == [i < 3 for i in range(12)]


def test_grade_item_dispatches_and_bad_items_name_their_field():
    assert grade_item({"response": "\\boxed{2}", "gold": 2, "kind": "math"}).correct
    assert grade_item({"response": "Answer: b", "gold": "B", "kind": "choice", "choices": ["a", "b"]}).correct
    cases = [
        ({"gold": "1", "kind": "math"}, "item 1: missing field 'response'"),
        ({"response": "x", "gold": "1", "kind": "proof"}, "item 1: field 'kind' must be one of"),
        ({"response": "x", "gold": "A", "kind": "choice"}, "item 1: a choice item needs field 'choices'"),
        ({"response": "x", "gold": "K", "kind": "choice", "choices": ["A", "K"]}, "distinct letters A-J"),
        (
            {"response": "x", "gold": "E", "kind": "choice", "choices": ["A", "B"]},
            "field 'gold' 'E' is not one",
        ),
        ({"response": 3, "gold": "1", "kind": "math"}, "field 'response' must be a string"),
    ]
    for item, message in cases:
        with pytest.raises(LieError, match=message.replace("(", "\\(")):
            grade_many([{"response": "1", "gold": "1", "kind": "math"}, item], progress=False)


def test_executor_edges():
    assert grade_many([], progress=False) == []
    assert default_workers() >= 1
    one = [{"response": "1", "gold": "1", "kind": "math"}]
    for bad, message in [
        (0, "finite number > 0"),
        (float("nan"), "finite number > 0"),
        (float("inf"), "finite number > 0"),
        ("soon", "a number of seconds"),
        (10, "must exceed math-verify's own guards \\(3 x 5 s = 15 s\\)"),
    ]:
        with pytest.raises(LieError, match=message):
            grade_many(one, timeout_s=bad)
    with pytest.raises(LieError, match="workers must be an integer >= 0"):
        grade_many(one, workers=-1)
    # more workers than items, many items per worker, order kept
    items = [{"response": f"\\boxed{{{i}}}", "gold": str(i % 4), "kind": "math"} for i in range(40)]
    results = grade_many(items, workers=8, progress=False)
    assert [r.correct for r in results] == [i < 4 for i in range(40)]
    assert [r.pred for r in results] == [str(i) for i in range(40)]


STDIN_SCRIPTS = {
    "grade_many": "from lie.grading import grade_many\nprint(grade_many([ITEM] * 3, workers=1, progress=False))",
    "executor": (
        "from lie.grading import GradingExecutor\n"
        "with GradingExecutor(workers=1) as ex:\n"
        "    print(ex.grade_many([ITEM] * 3, progress=False))\n"
        "    print(ex.grade_many([ITEM] * 3, progress=False))"  # the second batch once the pool has broken
    ),
    "async": (
        "import asyncio\nfrom lie.grading import GradingExecutor\n"
        "async def main(ex):\n    return await asyncio.gather(*(ex.grade(ITEM) for _ in range(3)))\n"
        "with GradingExecutor(workers=1) as ex:\n    print(asyncio.run(main(ex)))"
    ),
}


@pytest.mark.parametrize("face", sorted(STDIN_SCRIPTS))
def test_workers_that_cannot_start_stop_the_run_with_one_clear_error(face):
    """A script read from standard input cannot be re-imported by the forkserver's workers: every face
    says so and exits, where it used to grade every item wrong ("All workers expired") or wait forever."""
    import subprocess
    import sys

    item = '{"response": "\\\\boxed{2}", "gold": "2", "kind": "math"}'
    code = f"ITEM = {item}\n" + STDIN_SCRIPTS[face]
    done = subprocess.run(
        [sys.executable, "-"], input=code, capture_output=True, text=True, timeout=180
    )  # the limit guards the old hang only
    assert done.returncode != 0 and "GradeResult(" not in done.stdout, done.stdout
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("lie.core.errors.LieError: the grading workers could not start or all died")
    assert "if __name__ == '__main__':" in last


def test_a_guarded_script_grades_in_the_workers(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "grade.py"
    script.write_text(
        "from lie.grading import grade_many\n"
        "if __name__ == '__main__':\n"
        "    (r,) = grade_many([{'response': '\\\\boxed{2}', 'gold': '2', 'kind': 'math'}], workers=1, progress=False)\n"
        "    print(r.status, r.correct)\n"
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0 and done.stdout.strip() == "ok True", done.stderr
