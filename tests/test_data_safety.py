"""Nothing the user owns is deleted or overwritten; nothing unfinished looks finished (issue 21, cases 1-9).

Each case runs the real command (``lie`` in a fresh process, or its stage) the way the issue
reproduced the loss, and checks that the user's files are as they were.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from test_bad_input import lie, one_error_line

from lie.config import Config, RunSettings
from lie.formats.runs import RunDir

REPO = Path(__file__).resolve().parents[1]
SMOKE = REPO / "workflow" / "configs" / "smoke.yaml"
RUN = "smoke_grpo"


def smoke_config(tmp_path: Path, **changes) -> tuple[Path, dict]:
    config = yaml.safe_load(SMOKE.read_text(encoding="utf-8"))
    config["outdir"] = str(tmp_path / "results")
    config.update(changes)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path, config


def user_folder(path: Path) -> Path:
    """A folder of the user's, with a file in it."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "thesis.tex").write_text("years of work\n")
    return path


def trained_run(tmp_path: Path) -> RunDir:
    """A run whose final.json names a TRL checkpoint (empty: the commands must refuse before reading it)."""
    rundir = RunDir(tmp_path / "results", RUN)
    checkpoint = rundir.checkpoints / "checkpoint-4"
    checkpoint.mkdir(parents=True)
    rundir.final_json.write_text(json.dumps({"engine": "trl", "checkpoint": str(checkpoint), "step": 4}))
    return rundir


# 1. merge / base-model never remove a folder they did not make -----------------------------------


def test_merge_refuses_an_out_folder_of_the_user(tmp_path):
    config, _ = smoke_config(tmp_path)
    trained_run(tmp_path)
    mine = user_folder(tmp_path / "k")
    proc = lie("merge", RUN, "--config", str(config), "--out", str(mine))
    assert proc.returncode == 2
    assert "lie did not make" in one_error_line(proc.stderr, "merge")
    assert (mine / "thesis.tex").read_text() == "years of work\n"


def test_merge_out_dot_dot_removes_nothing(tmp_path):
    config, _ = smoke_config(tmp_path)
    trained_run(tmp_path)
    home = user_folder(tmp_path / "home")
    work = home / "project"
    work.mkdir()
    proc = lie("merge", RUN, "--config", str(config), "--out", "..", cwd=work)
    assert proc.returncode == 2, proc.stderr[-2000:]
    one_error_line(proc.stderr, "merge")
    assert (home / "thesis.tex").exists() and work.is_dir()


def test_merge_out_holding_the_run_is_refused(tmp_path):
    config, _ = smoke_config(tmp_path)
    rundir = trained_run(tmp_path)
    proc = lie("merge", RUN, "--config", str(config), "--out", str(tmp_path / "results"))
    assert proc.returncode == 2
    assert "holds the input" in one_error_line(proc.stderr, "merge")
    assert rundir.final_json.exists()


def test_base_model_refuses_an_out_folder_of_the_user(tmp_path):
    config, _ = smoke_config(tmp_path)
    corpus = tmp_path / "arith-train.parquet"
    assert lie("data", "arith-train", "--config", str(config), "--out", str(corpus)).returncode == 0
    mine = user_folder(tmp_path / "models")
    proc = lie("base-model", "tiny", "--config", str(config), "--out", str(mine), "--corpus", str(corpus))
    assert proc.returncode == 2
    assert "lie did not make" in one_error_line(proc.stderr, "base-model")
    assert (mine / "thesis.tex").read_text() == "years of work\n"
    # a folder lie built is replaced whole by a rebuild
    built = tmp_path / "built"
    for _ in range(2):
        proc = lie(
            "base-model", "tiny", "--config", str(config), "--out", str(built), "--corpus", str(corpus)
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
    assert (built / "lie_output.json").is_file() and (built / "config.json").is_file()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".built.")]


# 2. generate / reflen: --out that is --data by another spelling ----------------------------------


@pytest.mark.parametrize("command", ["generate", "reflen"])
def test_out_that_resolves_to_the_data_is_refused(tmp_path, command):
    config, _ = smoke_config(tmp_path)
    name = "arith-test" if command == "generate" else "arith-train"
    data = tmp_path / f"{name}.parquet"
    assert lie("data", name, "--config", str(config), "--out", str(data)).returncode == 0
    before = data.read_bytes()
    os.symlink(data, tmp_path / "link.parquet")
    for out in (f"./{name}.parquet", "link.parquet", f"sub/../{name}.parquet"):
        (tmp_path / "sub").mkdir(exist_ok=True)
        args = [command, *([name] if command == "generate" else []), "--config", str(config)]
        args += ["--model", "tiny", "--data", f"{name}.parquet", "--out", out, "--limit", "2"]
        proc = lie(*args, cwd=tmp_path)
        assert proc.returncode == 2
        line = one_error_line(proc.stderr, command)
        assert "is the input" in line or "symbolic link" in line, line
        assert data.read_bytes() == before


@pytest.mark.parametrize("command", ["generate", "reflen"])
def test_out_inside_the_model_folder_is_refused_before_anything_is_written(tmp_path, command, arith_tiny):
    """Issue 33 item 2: ``--out <model>/model.safetensors`` overwrote the model and exited 0. No output
    (nor its manifest) may land inside an input folder (a copy of the session's tiny model)."""
    config, _ = smoke_config(tmp_path)
    name = "arith-test" if command == "generate" else "arith-train"
    data = tmp_path / "d.parquet"
    assert lie("data", name, "--config", str(config), "--out", str(data)).returncode == 0
    model = shutil.copytree(arith_tiny, tmp_path / "model")
    before = {p.name: p.read_bytes() for p in model.iterdir()}
    for out in (model / "model.safetensors", model / "sub" / ".." / "new.jsonl"):
        args = [command, *([name] if command == "generate" else []), "--config", str(config)]
        args += ["--model", str(model), "--data", str(data), "--out", str(out), "--limit", "2"]
        proc = lie(*args, cwd=tmp_path)
        assert proc.returncode == 2, proc.stderr[-2000:]
        assert f"is inside the input folder --model {model}" in one_error_line(proc.stderr, command)
        assert {p.name: p.read_bytes() for p in model.iterdir()} == before


def test_a_sample_count_beyond_any_run_is_one_line_before_a_model_loads(tmp_path):
    """Issue 33 item 3: ``--n 100000000000`` grew to 21.7 GB until the OOM killer stopped it."""
    config, _ = smoke_config(tmp_path)
    data = tmp_path / "d.parquet"
    assert lie("data", "arith-test", "--config", str(config), "--out", str(data)).returncode == 0
    for flag, value, message in (("--n", "100000000000", "--n must be an integer in [1, 4096]"),
                                 ("--max-tokens", "99999999999", "--max-tokens must be an integer in [1, 1048576]")):  # fmt: skip
        proc = lie("generate", "arith-test", "--config", str(config), "--model", "tiny", "--data", str(data),
                   "--out", str(tmp_path / "g.jsonl"), flag, value, timeout=120)  # fmt: skip
        assert proc.returncode == 2 and message in one_error_line(proc.stderr, "generate"), proc.stderr[
            -2000:
        ]
        assert not list(tmp_path.glob("g*"))


@pytest.mark.parametrize("command", ["score", "grade", "behaviours"])
def test_every_out_is_checked_against_every_input(tmp_path, command):
    """One check in the CLI for every --out*: the input by another spelling is refused before any work."""
    src = _rows(tmp_path)
    before = src.read_text()
    flag = "--gen" if command == "behaviours" else "--in"
    proc = lie(command, flag, "in.jsonl", "--out", "./sub/../in.jsonl", cwd=tmp_path)
    assert proc.returncode == 2
    assert f"--out ./sub/../in.jsonl is the input {flag} in.jsonl" in one_error_line(proc.stderr, command)
    assert src.read_text() == before


# 3. report: its inputs are checked before any old table or figure is touched --------------------


def test_report_keeps_the_old_tables_when_its_input_is_bad(tmp_path):
    config, loaded = smoke_config(tmp_path)
    from lie.config.layout import Layout
    from lie.report.build import report_paths

    layout = Layout(Config.of(loaded))
    for path in report_paths(layout):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("the previous report\n")
    summary = layout.summary(loaded["evaluation"]["base_models"][0])
    summary.parent.mkdir(parents=True, exist_ok=True)
    summary.write_text('{"benchmarks": {"arith-te')  # truncated
    proc = lie("report", "--config", str(config))
    assert proc.returncode == 2
    one_error_line(proc.stderr, "report")
    assert {p.read_text() for p in report_paths(layout)} == {"the previous report\n"}


# 4. a shard that is empty, short or changed is redone, never counted ----------------------------


def _squares(rng: range) -> list[dict]:
    return [{"i": i, "square": i * i, "pad": "x" * 50} for i in rng]


def test_an_empty_or_truncated_shard_is_redone(tmp_path):
    from lie.formats.resumable import iter_shards, run_in_shards

    work = tmp_path / "gen.jsonl.shards"
    paths = run_in_shards(10, 3, work, {"s": 1}, _squares, progress=False)
    whole = list(iter_shards(paths))
    paths[1].write_bytes(b"")  # a crash before the data reached the disk
    paths[2].write_bytes(paths[2].read_bytes()[:70])  # a crash half-way
    paths[3].unlink()
    done = []

    def counting(rng: range) -> list[dict]:
        done.append(list(rng))
        return _squares(rng)

    again = run_in_shards(10, 3, work, {"s": 1}, counting, progress=False)
    assert done == [[3, 4, 5], [6, 7, 8], [9]]
    assert list(iter_shards(again)) == whole


def test_a_shard_without_its_seal_is_redone(tmp_path):
    """A shard file from before seals, or whose seal the crash did not write: not finished."""
    from lie.formats.resumable import run_in_shards

    work = tmp_path / "w"
    paths = run_in_shards(4, 2, work, {"s": 1}, _squares, progress=False)
    (work / "shard-00001.seal.json").unlink()
    done = []
    run_in_shards(4, 2, work, {"s": 1}, lambda r: done.append(list(r)) or _squares(r), progress=False)
    assert done == [[2, 3]] and paths[1].exists()


# 5. checkpoints: a truncated weight file is not a finished checkpoint ----------------------------


def test_a_trl_checkpoint_with_truncated_weights_is_set_aside_and_not_merged(tmp_path):
    from lie.engines.trl.train import latest_complete_checkpoint, seal_checkpoint

    config, _ = smoke_config(tmp_path)
    rundir = trained_run(tmp_path)
    older = rundir.checkpoints / "checkpoint-2"
    for path in (older, rundir.checkpoints / "checkpoint-4"):
        path.mkdir(exist_ok=True)
        (path / "model.safetensors").write_bytes(b"w" * 4096)
        (path / "trainer_state.json").write_text('{"global_step": 4}')
        seal_checkpoint(path)
    weights = rundir.checkpoints / "checkpoint-4" / "model.safetensors"
    assert stat.S_IMODE(weights.stat().st_mode) == 0o666 & ~_umask()
    weights.write_bytes(b"w" * 100)  # truncated after it was sealed
    proc = lie("merge", RUN, "--config", str(config), "--out", str(tmp_path / "merged"))
    assert proc.returncode == 2
    assert "model.safetensors has 100 bytes" in one_error_line(proc.stderr, "merge")
    assert not (tmp_path / "merged").exists()
    assert latest_complete_checkpoint(rundir) == older
    assert list((rundir.superseded / "torn").glob("checkpoint-4-*"))


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def test_a_finished_verl_run_with_a_truncated_shard_is_repaired(tmp_path):
    """``lie_completed.json`` no longer short-circuits the checks: the torn final checkpoint is set aside."""
    import torch

    from lie.engines.verl import checkpoints as verl_checkpoints
    from lie.engines.verl import overrides as verl_overrides

    _, config = smoke_config(tmp_path)
    run = "smoke_gspo_lie"
    rundir = RunDir(tmp_path / "results", run)
    assert (
        verl_overrides.prepare_resume(Config.of(config), RunSettings.of(Config.of(config), run), rundir, 1)
        is False
    )
    for step in (1, 2):
        actor = rundir.checkpoints / f"global_step_{step}" / "actor"
        actor.mkdir(parents=True)
        torch.save({"w": torch.zeros(2000)}, actor / "model_world_size_1_rank_0.pt")
        torch.save({"epoch": 0}, actor.parent / "data.pt")
    (rundir.checkpoints / verl_checkpoints.TRACKER).write_text("2")
    rundir.new_metrics_file().write_text("".join(json.dumps({"step": s, "data": {}}) + "\n" for s in (1, 2)))
    verl_overrides.mark_complete(Config.of(config), run, rundir)
    assert (
        verl_overrides.prepare_resume(Config.of(config), RunSettings.of(Config.of(config), run), rundir, 1)
        is True
    )  # finished: nothing to do
    shard = rundir.checkpoints / "global_step_2" / "actor" / "model_world_size_1_rank_0.pt"
    shard.write_bytes(shard.read_bytes()[:3000])
    assert (
        verl_overrides.prepare_resume(Config.of(config), RunSettings.of(Config.of(config), run), rundir, 1)
        is False
    )  # repaired, then resumed
    assert sorted(verl_checkpoints.steps(rundir.checkpoints)) == [1]
    assert verl_checkpoints.tracked_step(rundir.checkpoints) == 1
    assert list((rundir.superseded / "torn").glob("global_step_2-*"))


# 6. one command per run folder ------------------------------------------------------------------


def test_a_second_train_of_the_same_run_stops_naming_the_first(tmp_path):
    config, _ = smoke_config(tmp_path)
    rundir = RunDir(tmp_path / "results", RUN)
    with rundir.lock(f"train {RUN}"):
        proc = lie("train", RUN, "--config", str(config))
        assert proc.returncode == 2
        line = one_error_line(proc.stderr, "train")
        assert f"`lie train {RUN}` (pid {os.getpid()}" in line, line
        merge = lie("merge", RUN, "--config", str(config))
    assert merge.returncode == 2
    assert "is missing" in one_error_line(merge.stderr, "merge")  # no final.json: the lock is not the issue


# 7. Snakemake never rewrites a config of the user's kept in outdir -------------------------------


def test_snakemake_start_keeps_a_user_config_in_outdir(tmp_path):
    for name in ("Snakefile", "workflow"):
        os.symlink(REPO / name, tmp_path / name)
    config = yaml.safe_load(SMOKE.read_text(encoding="utf-8"))
    config["outdir"] = "out"
    mine = tmp_path / "out" / "config.yaml"
    mine.parent.mkdir()
    text = "# my settings, with comments\n" + yaml.safe_dump(config, sort_keys=False)
    mine.write_text(text)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    cmd = [sys.executable, "-m", "snakemake", "--configfile", "out/config.yaml", "--cores", "1", "--touch", "--force",
           "out/data/arith-test.parquet"]  # fmt: skip
    (tmp_path / "out" / "data").mkdir()
    (tmp_path / "out" / "data" / "arith-test.parquet").touch()
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert "is not a file lie wrote" in proc.stderr, proc.stderr[-3000:]
    assert mine.read_text() == text


# 8. a symlink, FIFO or device is never replaced by --out ----------------------------------------


def _rows(tmp_path: Path) -> Path:
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"response": "x", "correct": True, "num_tokens": 1, "ref_len": 3}) + "\n")
    return src


def test_out_onto_a_symlink_fifo_or_device_is_refused(tmp_path):
    src = _rows(tmp_path)
    target = tmp_path / "precious.jsonl"
    target.write_text("keep\n")
    os.symlink(target, tmp_path / "link.jsonl")
    os.mkfifo(tmp_path / "pipe")
    for out, kind in (
        (tmp_path / "link.jsonl", "symbolic link"),
        (tmp_path / "pipe", "FIFO"),
        ("/dev/null", "device"),
    ):
        proc = lie("score", "--in", str(src), "--out", str(out))
        assert proc.returncode == 2
        assert f"it is a {kind}" in one_error_line(proc.stderr, "score")
    assert (tmp_path / "link.jsonl").is_symlink() and target.read_text() == "keep\n"
    assert stat.S_ISFIFO(os.lstat(tmp_path / "pipe").st_mode)
    assert stat.S_ISCHR(os.lstat("/dev/null").st_mode)


# 9. every output and input is checked before the first write -------------------------------------


def test_evaluate_checks_its_summary_before_it_writes_the_scores(tmp_path):
    from lie.formats.generations import generation_line

    config, _ = smoke_config(tmp_path)
    gen = tmp_path / "gen.jsonl"
    lines = [generation_line("arith-test", i, s, "4", "math", [], 5, 16, 0, [1, 2], "\\boxed{4}", "stop")
             for i in range(2) for s in range(4)]  # fmt: skip
    gen.write_text("".join(json.dumps(line) + "\n" for line in lines))
    scores = tmp_path / "scores.jsonl"
    scores.write_text("the previous scores\n")
    folder = tmp_path / "summary.json"
    folder.mkdir()
    proc = lie("evaluate", "--config", str(config), "--gen", str(gen), "--out-scores", str(scores),
               "--out-summary", str(folder), "--no-progress")  # fmt: skip
    assert proc.returncode == 2
    assert "is a folder" in one_error_line(proc.stderr, "evaluate")
    assert scores.read_text() == "the previous scores\n"


def test_data_checks_compare_with_before_it_writes(tmp_path):
    config, _ = smoke_config(tmp_path)
    other = tmp_path / "theirs.parquet"
    other.write_text("not parquet at all\n")
    out = tmp_path / "arith-test.parquet"
    proc = lie("data", "arith-test", "--config", str(config), "--out", str(out), "--compare-with", str(other))
    assert proc.returncode == 2
    assert "not a verl parquet file" in one_error_line(proc.stderr, "data")
    assert not out.exists()


def test_snakemake_start_refuses_a_billion_laughs_config_in_one_line(tmp_path):
    """Snakemake reads the file itself (aliases shared, no expansion); lie's check refuses it before any walk."""
    for name in ("Snakefile", "workflow"):
        os.symlink(REPO / name, tmp_path / name)
    lines = ['l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"l{k}: &l{k} [" + ",".join([f"*l{k - 1}"] * 10) + "]" for k in range(1, 11)]
    (tmp_path / "bomb.yaml").write_text("\n".join(lines) + "\n")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    cmd = [sys.executable, "-m", "snakemake", "--configfile", "bomb.yaml", "-n"]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert "bomb.yaml line 6: not valid YAML: more than 200000 values" in proc.stderr, proc.stderr[-3000:]


def test_two_commands_writing_one_output_the_second_stops(tmp_path):
    from lie.core.errors import LieError
    from lie.formats.outputs import hold
    from lie.formats.resumable import LOCK, run_in_shards

    work = tmp_path / "gen.jsonl.shards"
    work.mkdir()
    with hold(work / LOCK, "generate arith-test", str(work)):
        with pytest.raises(LieError, match=r"gen.jsonl.shards is in use by `lie generate arith-test` \(pid"):
            run_in_shards(4, 2, work, {"s": 1}, _squares, progress=False)
    assert len(run_in_shards(4, 2, work, {"s": 1}, _squares, progress=False)) == 2  # free again


def test_the_effective_config_lie_wrote_before_its_header_is_still_lies(tmp_path):
    from lie.config.load import EFFECTIVE_HEADER, write_effective_config

    config = yaml.safe_load(SMOKE.read_text(encoding="utf-8"))
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))  # as lie wrote it before
    config["reward"]["beta"] = 0.5
    write_effective_config(Config.of(config), path)
    assert path.read_text().startswith(EFFECTIVE_HEADER)
    assert yaml.safe_load(path.read_text())["reward"]["beta"] == 0.5


def test_a_verl_checkpoint_whose_step_was_never_logged_is_set_aside(tmp_path):
    """verl saves a step's checkpoint before it logs the step: killed in between (found by the fault
    test), the run would resume after a step without metrics. It redoes that step instead."""
    import torch

    from lie.engines.verl import checkpoints as verl_checkpoints
    from lie.engines.verl import overrides as verl_overrides

    _, config = smoke_config(tmp_path)
    run = "smoke_gspo_lie"
    rundir = RunDir(tmp_path / "results", run)
    assert (
        verl_overrides.prepare_resume(Config.of(config), RunSettings.of(Config.of(config), run), rundir, 1)
        is False
    )
    metrics = rundir.new_metrics_file()
    metrics.write_text(json.dumps({"step": 1, "data": {"critic/score/mean": 0.5}}) + "\n")
    actor = rundir.checkpoints / "global_step_2" / "actor"
    actor.mkdir(parents=True)
    torch.save({"w": torch.zeros(8)}, actor / "model_world_size_1_rank_0.pt")
    torch.save({"epoch": 0}, actor.parent / "data.pt")  # no tracker yet: the kill came before it
    assert (
        verl_overrides.prepare_resume(Config.of(config), RunSettings.of(Config.of(config), run), rundir, 1)
        is False
    )
    assert verl_checkpoints.steps(rundir.checkpoints) == {}
    assert list((rundir.superseded / "torn").glob("global_step_2-*"))
    metrics.write_text(metrics.read_text() + json.dumps({"step": 2, "data": {}}) + "\n")
    (rundir.superseded / "torn").rename(tmp_path / "torn")
    next((tmp_path / "torn").glob("global_step_2-*")).rename(rundir.checkpoints / "global_step_2")
    assert (
        verl_overrides.prepare_resume(Config.of(config), RunSettings.of(Config.of(config), run), rundir, 1)
        is False
    )
    assert verl_checkpoints.tracked_step(rundir.checkpoints) == 2  # logged: resumed from


def test_two_builds_of_one_folder_never_share_a_partial_and_a_torn_swap_leaves_nothing(tmp_path):
    """Issue 33 item 7: two concurrent builds of one ``--out`` shared ``.X.partial`` (once in 22 tries
    one exited 0 with the folder gone); a kill between replace_folder's two renames left ``.X.old-PID``
    (a whole model) forever. A second build stops with one line while the first holds the output; the
    next swap removes the old copy a torn one left."""
    from lie.core.errors import LieError
    from lie.formats.outputs import partial_folder, replace_folder

    out = tmp_path / "model"
    first = partial_folder(out)
    (first / "weights").write_text("first")
    with pytest.raises(LieError, match=f"{out} is being built by another command"):
        partial_folder(out)
    assert (first / "weights").read_text() == "first"  # the second build touched nothing
    replace_folder(first, out, {"command": "test"})
    torn = tmp_path / ".model.old-99999999"  # as a swap killed between its two renames leaves it
    shutil.copytree(out, torn)
    again = partial_folder(out)
    (again / "weights").write_text("second")
    replace_folder(again, out, {"command": "test"})
    assert (out / "weights").read_text() == "second"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]


def test_a_file_of_the_user_inside_a_folder_lie_built_stops_the_rebuild(tmp_path):
    """Issue 33 item 8: a rebuild replaced a lie-built model folder whole, with a file the user had put in
    it. lie records the files it wrote (``lie_output.json``); a folder holding others is refused with
    one line naming one, and nothing in it changes."""
    from lie.core.errors import LieError
    from lie.formats.outputs import check_output_folder, partial_folder, replace_folder

    out = tmp_path / "model"
    for _ in range(2):  # a rebuild of what lie wrote replaces it
        tmp = partial_folder(out)
        (tmp / "sub").mkdir()
        (tmp / "sub" / "weights").write_text("w")
        replace_folder(tmp, out, {"command": "test"})
    (out / "notes.md").write_text("my notes")
    with pytest.raises(LieError, match=r"holds files lie did not write \(notes\.md\)"):
        check_output_folder(out)
    assert (out / "notes.md").read_text() == "my notes" and (out / "sub" / "weights").read_text() == "w"


@pytest.mark.parametrize(
    ("marker", "record"),
    [("lie_output.json", {"command": "base-model"}), ("lie_source.json", {"hf_id": "Qwen/Qwen3-4B-Base"})],
    ids=["record-without-files", "legacy-marker"],
)
def test_a_folder_of_older_lie_is_never_replaced_with_what_it_holds(tmp_path, marker, record):
    """A folder older lie built carries a record that lists no files (or only ``lie_source.json``, before
    records): lie cannot tell its files from a user's, so a rebuild stops with one line and changes
    nothing, as for a folder lie fills in place; the user deletes it once, and lie rebuilds it."""
    from lie.core.errors import LieError
    from lie.formats.outputs import check_output_folder, partial_folder, replace_folder

    out = tmp_path / "model"
    out.mkdir()
    (out / marker).write_text(json.dumps(record))
    (out / "weights").write_text("w")
    (out / "notes.md").write_text("my notes")
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    line = rf"{out} was built by an older lie, whose record does not list its files"
    with pytest.raises(LieError, match=line):
        check_output_folder(out, legacy="lie_source.json")
    tmp = partial_folder(out)
    (tmp / "weights").write_text("new")
    with pytest.raises(LieError, match=line):
        replace_folder(tmp, out, {"command": "base-model"}, legacy="lie_source.json")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    shutil.rmtree(out)  # as the line says: then the rebuild goes through
    replace_folder(tmp, out, {"command": "base-model"}, legacy="lie_source.json")
    assert (out / "weights").read_text() == "new"


@pytest.mark.parametrize("command", ["generate", "reflen"])
def test_out_dash_is_refused_where_a_file_and_its_records_are_written(tmp_path, command):
    """Issue 33 (minor): ``lie generate --out -`` wrote ``-.manifest.json``; these commands write files
    (atomically, with a manifest or metadata), never standard output."""
    config, _ = smoke_config(tmp_path)
    args = [command, *(["arith-test"] if command == "generate" else []), "--config", str(config)]
    proc = lie(*args, "--model", "tiny", "--data", "d.parquet", "--out", "-", cwd=tmp_path)
    assert proc.returncode == 2
    assert "--out - is standard output" in one_error_line(proc.stderr, command)
    assert not list(tmp_path.glob("-*"))


# 10. files a user puts in lie's folders (issue 33 item 8) ----------------------------------------


def _record(text: str | bytes) -> bytes:
    return text if isinstance(text, bytes) else text.encode()


NOT_LIES = "is not a folder lie built (lie_output.json in it is not lie's record"
NOT_MADE = "is a folder lie did not make"
RECORDS = {  # id: (marker file, its content, the line's words)
    "text": ("lie_output.json", "a copy of my notes\n", NOT_LIES),
    "list": ("lie_output.json", "[]", NOT_LIES),
    "no-command": ("lie_output.json", '{"files": []}', NOT_LIES),
    "files-not-a-list": ("lie_output.json", '{"command": "merge", "files": "w"}', NOT_LIES),
    "deep": ("lie_output.json", "[" * 5000 + "]" * 5000, NOT_LIES),
    "not-utf8": ("lie_output.json", b"\xff\xfe{}", NOT_LIES),
    # a faithful copy of a record lie wrote: the files it lists are not these
    "copied-record": ("lie_output.json", '{"command": "merge", "files": ["a"]}', "holds files lie did"),
    "legacy-text": ("lie_source.json", "my own notes\n", NOT_MADE),
    "legacy-list": ("lie_source.json", "[1]", NOT_MADE),
}


@pytest.mark.parametrize(("marker", "content", "message"), RECORDS.values(), ids=RECORDS.keys())
def test_a_file_named_like_lies_record_claims_no_folder(tmp_path, marker, content, message):
    """Issue 33 item 8: a folder holding any file named ``lie_output.json`` (or a base model's older
    ``lie_source.json``) counted as lie's, and a rebuild replaced it whole. The record must be one lie
    writes (a JSON object with a ``command`` and, since lie lists them, the ``files`` it wrote)."""
    from lie.core.errors import LieError
    from lie.formats.outputs import check_output_folder, partial_folder, replace_folder

    mine = user_folder(tmp_path / "mine")
    (mine / marker).write_bytes(_record(content))
    before = {p.name: p.read_bytes() for p in mine.iterdir()}
    with pytest.raises(LieError, match=re.escape(message)) as info:
        check_output_folder(mine, legacy="lie_source.json")
    assert "\n" not in str(info.value) and str(mine) in str(info.value)
    tmp = partial_folder(mine)
    with pytest.raises(LieError):
        replace_folder(tmp, mine, {"command": "test"}, legacy="lie_source.json")
    assert {p.name: p.read_bytes() for p in mine.iterdir()} == before


def _kill_build(tmp: Path) -> None:
    """What a SIGKILL of the building process leaves: the partial folder, its lock released."""
    from lie.formats import outputs

    outputs._BUILDING.pop(tmp).close()


@pytest.mark.parametrize("kind", ["folder", "file"])
def test_a_user_folder_named_like_lies_partial_folder_is_never_emptied(tmp_path, kind):
    """Issue 33 item 8: ``.X.partial`` is the name lie builds ``X`` under, and a stale one was removed
    unread. lie removes only a partial folder it marked as its own; a user's is one line, untouched."""
    from lie.core.errors import LieError
    from lie.formats.outputs import partial_folder

    out = tmp_path / "model"
    if kind == "folder":
        mine = user_folder(tmp_path / ".model.partial")
    else:
        mine = tmp_path / ".model.partial"
        mine.write_text("years of work\n")
    with pytest.raises(LieError, match=r"\.model\.partial is not a folder lie is building") as info:
        partial_folder(out)
    assert "\n" not in str(info.value)
    assert (mine / "thesis.tex" if kind == "folder" else mine).read_text() == "years of work\n"


def test_a_partial_folder_a_killed_build_left_is_lies_and_a_user_old_folder_is_kept(tmp_path):
    """A kill leaves lie's ``.X.partial``: the next build starts afresh there. A user's folder named like
    a torn swap's old copy (``.X.old-N``) is not lie's: kept."""
    from lie.formats.outputs import partial_folder, replace_folder

    out = tmp_path / "model"
    first = partial_folder(out)
    (first / "half-written").write_text("h")
    _kill_build(first)
    again = partial_folder(out)
    assert again == first and not (again / "half-written").exists()
    mine = user_folder(tmp_path / ".model.old-7")
    (again / "weights").write_text("w")
    replace_folder(again, out, {"command": "test"})
    assert sorted(p.name for p in tmp_path.iterdir()) == [".model.old-7", "model"]
    assert (mine / "thesis.tex").read_text() == "years of work\n"
    assert sorted(p.name for p in out.iterdir()) == ["lie_output.json", "weights"]
    assert json.loads((out / "lie_output.json").read_text())["files"] == ["weights"]


@pytest.mark.parametrize("name", ["notes.txt", "sub/notes.txt", "shard-00000.jsonl.bak", "manifest.json~"])
def test_a_file_of_the_user_in_a_shard_folder_stops_the_run_untouched(tmp_path, name):
    """Issue 33 item 8: ``X.jsonl.shards/`` (generate's and reflen's work folder) is removed after
    success, with a file the user left in it. A run refuses a shard folder holding files lie does not
    write (one line naming one); a kill's leftover temporaries are lie's."""
    from lie.core.errors import LieError
    from lie.formats.resumable import run_in_shards

    work = tmp_path / "gen.jsonl.shards"
    run_in_shards(4, 2, work, {"s": 1}, _squares, progress=False)  # killed before the output was written
    (work / ".shard-00001.jsonl.k1ll3d.partial").write_text('{"i": 2')  # a kill during a shard write
    mine = work / name
    mine.parent.mkdir(exist_ok=True)
    mine.write_text("years of work\n")
    with pytest.raises(LieError, match=rf"holds files lie did not write \({re.escape(name.split('/')[0])}\)"):
        run_in_shards(4, 2, work, {"s": 1}, _squares, progress=False)
    assert mine.read_text() == "years of work\n"
    mine.unlink()
    if mine.parent != work:
        mine.parent.rmdir()
    assert len(run_in_shards(4, 2, work, {"s": 1}, _squares, progress=False)) == 2


def test_only_the_files_lie_wrote_leave_a_finished_shard_folder(tmp_path):
    """After the output is written the shard folder goes: lie's files only; one the user put there
    meanwhile stays, with its folder."""
    from lie.formats.resumable import remove_work, run_in_shards

    work = tmp_path / "gen.jsonl.shards"
    run_in_shards(4, 2, work, {"s": 1}, _squares, progress=False)
    (work / ".shard-00001.jsonl.k1ll3d.partial").write_text('{"i": 2')
    remove_work(work)
    assert not work.exists()
    run_in_shards(4, 2, work, {"s": 1}, _squares, progress=False)
    (work / "notes.txt").write_text("years of work\n")  # put there while the output was written
    remove_work(work)
    assert sorted(p.name for p in work.iterdir()) == ["notes.txt"]


# 11. resume state lie did not write: one line, never a traceback (issue 33, "resume state") -------


@pytest.mark.parametrize(
    "text",
    ["[]", '"settings"', "3", "[" * 5000 + "]" * 5000, '{"s": 1', '{"s": NaN}', b"\xff{}"],
    ids=["list", "string", "number", "deep", "truncated", "nan", "not-utf8"],
)
def test_a_manifest_lie_did_not_write_is_one_line_naming_it(tmp_path, text):
    from lie.core.errors import LieError
    from lie.formats.resumable import run_in_shards

    work = tmp_path / "gen.jsonl.shards"
    run_in_shards(4, 2, work, {"s": 1}, _squares, progress=False)
    manifest = work / "manifest.json"
    manifest.write_bytes(_record(text))
    before = sorted(p.name for p in work.iterdir())
    with pytest.raises(LieError, match=re.escape(f"{manifest}: not a manifest lie wrote")) as info:
        run_in_shards(4, 2, work, {"s": 1}, _squares, progress=False)
    assert "\n" not in str(info.value) and f"delete the folder {work} to start over" in str(info.value)
    assert sorted(p.name for p in work.iterdir()) == before  # nothing removed: the user decides


def _deep_seal(seal: Path, shard: Path) -> None:
    seal.write_text("[" * 5000 + "]" * 5000)


def _deep_entry(seal: Path, shard: Path) -> None:
    seal.write_text('{"files": {"shard-00001.jsonl": ' + "[" * 5000 + "]" * 5000 + "}}")


def _list_seal(seal: Path, shard: Path) -> None:
    seal.write_text("[]")


def _no_digest(seal: Path, shard: Path) -> None:
    """The minor case: a seal without its sha256 let a same-size tampered shard through."""
    record = json.loads(seal.read_text())
    del record["files"][shard.name]["sha256"]
    seal.write_text(json.dumps(record))
    data = shard.read_bytes()
    shard.write_bytes(data.replace(b"9", b"8", 1))  # the square of 3: same size, another value


def _nul_name(seal: Path, shard: Path) -> None:
    seal.write_text(json.dumps({"files": {"shard\u00001.jsonl": {"bytes": 1}}, "units": 2}))


@pytest.mark.parametrize("tamper", [_deep_seal, _deep_entry, _list_seal, _no_digest, _nul_name])
def test_a_seal_lie_did_not_write_is_never_trusted(tmp_path, tamper, caplog):
    """Issue 33: a deep seal was a RecursionError traceback, and a seal without its sha256 let a same-size
    tampered shard through. Each is a shard not finished: one warning line naming it, the shard redone."""
    from lie.formats.resumable import iter_shards, run_in_shards

    work = tmp_path / "gen.jsonl.shards"
    paths = run_in_shards(4, 2, work, {"s": 1}, _squares, progress=False)
    whole = list(iter_shards(paths))
    tamper(work / "shard-00001.seal.json", paths[1])
    done = []
    again = run_in_shards(4, 2, work, {"s": 1}, lambda r: done.append(list(r)) or _squares(r), progress=False)
    assert done == [[2, 3]]
    assert list(iter_shards(again)) == whole
    warnings = [r.getMessage() for r in caplog.records if "shard-00001" in r.getMessage()]
    assert len(warnings) == 1 and "redoing it" in warnings[0] and "\n" not in warnings[0], warnings


def test_merge_refuses_a_checkpoint_whose_weights_miss_a_layer(tmp_path, arith_tiny):
    """A sealed TRL checkpoint whose weights lack a layer of its config: one line, no merged model."""
    from safetensors.torch import load_file, save_file

    from lie.engines.trl.train import seal_checkpoint

    config, _ = smoke_config(tmp_path)
    rundir = RunDir(tmp_path / "results", RUN)
    checkpoint = rundir.checkpoints / "checkpoint-4"
    shutil.copytree(arith_tiny, checkpoint, ignore=shutil.ignore_patterns(".*", "lie_output.json"))
    weights = checkpoint / "model.safetensors"
    kept = {k: v for k, v in load_file(weights).items() if ".layers.1." not in k}
    save_file(kept, weights, metadata={"format": "pt"})
    (checkpoint / "trainer_state.json").write_text("{}")
    seal_checkpoint(checkpoint)
    rundir.final_json.write_text(json.dumps({"engine": "trl", "checkpoint": str(checkpoint), "step": 4}))
    proc = lie("merge", RUN, "--config", str(config))
    assert proc.returncode == 2, proc.stderr[-3000:]
    line = one_error_line(proc.stderr, "merge")
    assert "do not match config.json's qwen3 architecture: 11 parameter(s) missing (model.layers.1." in line
    assert not (tmp_path / "results" / "models" / RUN).exists()


@pytest.mark.parametrize("command", ["score", "grade"])
@pytest.mark.parametrize("kind", ["symlink", "fifo"])
def test_out_through_a_link_and_dot_dot_is_checked_where_the_system_writes(tmp_path, command, kind):
    """``--out DIR/LINK/../victim`` is ``victim`` beside LINK's target, as the system opens it; normalising
    the text first (``DIR/victim``) missed the user's symlink or FIFO there and replaced it."""
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "LINK").symlink_to(tmp_path / "a" / "b")
    victim = tmp_path / "a" / "victim"
    precious = tmp_path / "precious.txt"
    precious.write_text("years of work\n")
    if kind == "symlink":
        victim.symlink_to(precious)
    else:
        os.mkfifo(victim)
    rows = tmp_path / "in.jsonl"
    rows.write_text(json.dumps({"response": "r", "correct": True, "num_tokens": 1, "ref_len": 3,
                                "answer": "1", "gold": "1"}) + "\n")  # fmt: skip
    proc = lie(command, "--in", str(rows), "--out", f"{tmp_path}/d/LINK/../victim")
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert f"it is a {'symbolic link' if kind == 'symlink' else 'FIFO'}" in one_error_line(
        proc.stderr, command
    )
    assert victim.is_symlink() if kind == "symlink" else stat.S_ISFIFO(os.lstat(victim).st_mode)
    assert precious.read_text() == "years of work\n"
    assert not (tmp_path / "d" / "victim").exists()


def test_merge_with_a_truncated_run_json_is_one_line_and_leaves_nothing(tmp_path):
    """``run.json`` says which environment trained a verl run; cut short it was a traceback that left
    ``.merged.partial/`` and ``.merged.lock`` beside the output."""
    config, _ = smoke_config(tmp_path)
    rundir = RunDir(tmp_path / "results", RUN)
    step = rundir.checkpoints / "global_step_1"
    (step / "actor").mkdir(parents=True)
    (step / "data.pt").write_text("x")
    (step / "actor" / "model_world_size_1_rank_0.pt").write_text("x")
    rundir.final_json.write_text(json.dumps({"engine": "verl", "checkpoint": str(step), "step": 1}))
    rundir.run_json.write_text('{"device": "cp')
    out = tmp_path / "merged"
    proc = lie("merge", RUN, "--config", str(config), "--out", str(out))
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert f"{rundir.run_json}: not the record lie train writes (" in one_error_line(proc.stderr, "merge")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.yaml", "results"]


@pytest.mark.parametrize("name", ["settings_file", "inputs_file"])
def test_a_run_digest_that_is_not_lies_sets_the_outputs_aside_and_a_fifo_is_one_line(tmp_path, name):
    from lie.core.errors import LieError

    rundir = RunDir(tmp_path, RUN)
    (rundir.checkpoints / "checkpoint-1").mkdir(parents=True)
    getattr(rundir, name).write_bytes(b"\xff\xfe not a digest")
    claim = rundir.claim if name == "settings_file" else rundir.claim_inputs
    moved = claim("a" * 64)
    assert moved is not None and (moved / "checkpoints" / "checkpoint-1").is_dir()  # set aside, not deleted
    assert getattr(rundir, name).read_text() == "a" * 64 + "\n"
    getattr(rundir, name).unlink()
    os.mkfifo(getattr(rundir, name))
    with pytest.raises(LieError, match="it is a named pipe"):
        claim("a" * 64)
