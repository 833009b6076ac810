"""A Ray run on a cluster left unable to run its workers stops after `--ray-stall-timeout`, and resumes.

A cluster of its own (`tests/ray/cluster.py`: a head and two worker nodes of one CPU each), since
this test leaves it a node short for a while. The run's two workers and Ray Data's own one-CPU
tasks need the three CPUs; a worker node holding compress workers is lost with no replacement.
Before `--ray-stall-timeout`, Ray Data logged that it "may hang forever unless the cluster
scales up" and the driver waited until killed (docs/ray.md, 3 of 7 tries). Every point is a
known one, never a sleep: the fake endpoint holds every request once the rows that need no
summary are written (so no part can finish after the loss, whatever Ray schedules), the test
waits for a part's record and a held request, then kills the node.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.fake_openai_server import FakeServerThread
from tests.ray.cluster import SimulatedCluster
from tests.ray.conftest import assert_same_outputs
from tests.ray.test_multinode import (
    HoldAfter,
    can_mount_privately,
    driver,
    finish,
    held_rows,
    hold_write_tasks_on_w2,
    llm_flags,
    local_reference,
    one_json_object,
    records_in,
    wait_for_first_part,
)

pytestmark = [pytest.mark.ray, pytest.mark.multinode, pytest.mark.ray_faults]
STALL_SECONDS = 10  # the test's bound: small, so the stop comes soon after the loss


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimulatedCluster]:
    pytest.importorskip("ray.data")
    root = tmp_path_factory.mktemp("cluster")
    simulated = SimulatedCluster(root)
    try:
        yield simulated.start(private_folder=root / "private" if can_mount_privately() is None else None)
    finally:
        simulated.stop()


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """As `test_multinode`'s: with every request held, the first parts are written and the others wait."""
    return held_rows(tmp_path_factory.mktemp("input"))


@pytest.fixture(scope="module")
def local_outputs(tmp_path_factory: pytest.TempPathFactory, source: Path) -> Path:
    return local_reference(tmp_path_factory.mktemp("local"), source)


def stall_line(stderr: str) -> list[str]:
    """The run's own error lines (the end-of-run fidelity warning of off-topic fake summaries left out)."""
    return [line for line in stderr.splitlines() if "have fidelity under" not in line]


@pytest.mark.timeout(900)  # a hang guard: without the bound, the driver waits until killed
def test_a_cluster_left_unable_to_run_the_workers_stops_the_run_and_the_same_command_resumes(
    cluster: SimulatedCluster, source: Path, tmp_path: Path
) -> None:
    out = tmp_path / "shared" / "x.jsonl"
    schedule = HoldAfter()
    with FakeServerThread(faults=schedule) as server:
        local = run_cli("compress", str(source), "-o", str(tmp_path / "local" / "x.jsonl"),
                        *llm_flags(server, tmp_path / "local.sqlite3"))  # fmt: skip
        assert local.returncode == 0, local.stderr
        schedule.hold_from(len(server.requests))
        args = [str(source), "-o", str(out), *llm_flags(server, tmp_path / "cache" / "s.sqlite3"),
                "--ray-stall-timeout", str(STALL_SECONDS)]  # fmt: skip
        process = driver(cluster, *args)
        try:
            wait_for_first_part(cluster, out, process)
            cluster.wait_for("a held request", lambda: server.held > 0 or process.poll() is not None)
            assert process.poll() is None, process.communicate()[1]
            victim = next(node for node in cluster.nodes if node.name != "head" and cluster.compress_workers_on(node))
            cluster.kill_node(victim)  # no replacement: two CPUs left, three needed
            code, stdout, stderr = finish(process)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
        written = [path.name for path in records_in(out)]
        assert code == 69, stderr
        report = one_json_object(stdout)
        assert report["status"] == "stalled" and report["exit_code"] == 69
        assert stall_line(stderr) == [
            f"error: no part finished for {STALL_SECONDS} s while the cluster could not run the workers "
            "(2 CPUs alive; the 2 workers and Ray Data's own tasks need 3): a node was lost and none replaced it; "
            "the parts written are kept: re-run the same command to resume once the cluster has the CPUs again "
            "(--ray-stall-timeout waits longer, 0 forever)"
        ], stderr
        assert report["resume"]["parts_written"] == len(written) >= 1
        # The same command, on a cluster with a node again (the endpoint answering): every row once, in order.
        cluster.replace_node(victim)
        schedule.holding = False
        server.release(None)
        code, stdout, stderr = finish(driver(cluster, *args))
    assert code == 0, stderr
    report = one_json_object(stdout)
    assert report["status"] == "completed"
    assert report["resume"]["parts_kept"] == len(written)
    assert_same_outputs(tmp_path / "local" / "x.jsonl", out)


@pytest.mark.timeout(900)  # a hang guard: without the bound, the driver waited in 3 of 7 tries
def test_a_node_lost_while_its_write_task_holds_a_part_and_never_replaced_is_never_a_hang(
    cluster: SimulatedCluster, source: Path, local_outputs: Path, tmp_path: Path
) -> None:
    """The case docs/ray.md measured: every write task on w2 held after its first file is written
    under its temporary name (`faults.boundary("ray-file-written")`, through the job's runtime env;
    the release file exists everywhere but in w2's private folder), then w2 lost and not replaced.
    Ray either recomputes the lost blocks on the two CPUs left and finishes, or waits for a node:
    then the run stops with the stall line, and the same command on a whole cluster again resumes.
    Either way the outputs are the local engine's bytes, every row once, in order."""
    hold = hold_write_tasks_on_w2(cluster)
    out = tmp_path / "shared" / "x.jsonl"
    args = [str(source), "-o", str(out), "--summarizer", "extractive", "--ray-stall-timeout", str(STALL_SECONDS)]
    process = driver(cluster, *args, env=hold.env)
    try:
        hold.wait(cluster, process)
        cluster.kill_node(hold.node)
        code, stdout, stderr = finish(process)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    report = one_json_object(stdout)
    cluster.replace_node(hold.node)
    if code != 0:  # Ray waited for a node: the bound ended the wait
        assert code == 69, stderr
        said = stall_line(stderr)
        assert len(said) == 1 and said[0].startswith(
            f"error: no part finished for {STALL_SECONDS} s while the cluster could not run the workers "
            "(2 CPUs alive; the 2 workers and Ray Data's own tasks need 3)"
        ), stderr
        assert report["status"] == "stalled"
        written = len(records_in(out))
        code, stdout, stderr = finish(driver(cluster, *args))  # the same command; the test's hold is off
        assert code == 0, stderr
        report = one_json_object(stdout)
        assert report["resume"]["parts_kept"] == written
    assert report["status"] == "completed", stderr
    assert_same_outputs(local_outputs, out)
    assert not list(out.parent.rglob(".part-*.tmp")), "a temporary file of the lost task is left"
