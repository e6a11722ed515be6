"""The preflight's row "the outdir is the same folder on every node", against a real Ray cluster of two
raylets on this machine (ray.cluster_utils.Cluster), as the Slurm and SkyPilot launchers export it."""

from __future__ import annotations

import pytest

from lie.stages import preflight


@pytest.fixture(scope="module")
def two_nodes():
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    yield cluster
    cluster.shutdown()


def test_without_a_ray_cluster_the_row_is_skipped(tmp_path, monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    check = preflight.check_shared_outdir(tmp_path)
    assert check == preflight.Check(
        preflight.SHARED_OUTDIR_ROW, "skipped: no Ray cluster (RAY_ADDRESS unset)"
    )


@pytest.mark.heavy  # two raylets: 20-90 s on a loaded 2-core VM
def test_every_node_reads_the_file_rank_0_wrote(two_nodes, tmp_path, monkeypatch):
    monkeypatch.setenv("RAY_ADDRESS", two_nodes.address)
    check = preflight.check_shared_outdir(tmp_path / "preflight")
    assert check.status == "pass", check
    assert check.detail == f"2 of 2 node(s) read {tmp_path / 'preflight'}"
    assert not list((tmp_path / "preflight").iterdir())  # the probe file is gone


@pytest.mark.heavy
def test_a_node_that_sees_another_folder_fails_the_row_by_name(two_nodes, tmp_path, monkeypatch):
    """The second raylet stands for a node whose outdir is its own disk: it looks for the file under
    another folder (as a node-local results/ would hold it), on that node, through the real Ray path."""
    monkeypatch.setenv("RAY_ADDRESS", two_nodes.address)
    shared, local = str(tmp_path / "shared"), str(tmp_path / "node-local")
    head_id = two_nodes.head_node.node_id

    def node_local_on_the_worker(path: str) -> str:
        import ray

        from lie.stages.preflight import _read_probe

        on_head = ray.get_runtime_context().get_node_id() == head_id
        return _read_probe(path if on_head else path.replace(shared, local))

    check = preflight.check_shared_outdir(tmp_path / "shared", reader=node_local_on_the_worker)
    assert check.status == "fail"
    first, apart = check.detail.split("; ")
    assert first == f"1 of 2 node(s) read {shared}"
    worker = next(n for n in two_nodes.list_all_nodes() if n is not two_nodes.head_node)
    assert f"({worker.node_id[:8]}): cannot read it there (No such file or directory)" in apart  # named


def test_the_preflight_asks_the_row_before_its_trials():
    import inspect

    source = inspect.getsource(preflight.iter_preflight)
    assert source.index("check_shared_outdir(workdir)") < source.index("trial_checks(config")
