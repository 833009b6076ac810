"""The Ray engine on a real multi-node cluster: a head and two worker nodes on this machine.

One cluster for the module (`tests/ray/cluster.py`): three `ray start` nodes with their own
raylets, object stores, ports and resources; `w2` in a mount namespace of its own with an empty
tmpfs over `private/` (root only), as a second machine's local disk. The driver is the real
command in a process of its own, joining with `--ray-address`; every part a run writes is
16 rows (`TC_RAY_ROWS_PER_PART`), so a small input makes several parts.

Every fault is made at a known point, never after a sleep: the fake endpoint holds requests
after answering some, the test waits for the first part's record on disk and a held request,
then kills a node (its raylet and every process under it) or the driver. Every process the
module starts is stopped by PID at its end.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SAMPLE, read_jsonl, run_cli, write_jsonl
from tests.fake_openai_server import FakeServerThread
from tests.ray.cluster import Node, SimulatedCluster
from tests.ray.conftest import assert_same_outputs, ray_parts
from trajectory_compressor.ray.limits import RESTARTS

pytestmark = [pytest.mark.ray, pytest.mark.multinode]
ROWS = 120  # rows of the input: 8 parts of 16 rows (`TC_RAY_ROWS_PER_PART`)
SHORT_ROWS = 32  # its first rows need no summary
WAIT_SECONDS = 240


def can_mount_privately() -> str | None:
    """Why `w2` cannot have a disk of its own here (None: it can)."""
    if os.geteuid() != 0:
        return "a private mount (unshare -m, mount -t tmpfs) needs root"
    done = subprocess.run(["unshare", "-m", "--propagation", "private", "true"], capture_output=True, check=False)
    return None if done.returncode == 0 else f"unshare -m fails here: {done.stderr.decode().strip()}"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimulatedCluster]:
    pytest.importorskip("ray.data")
    root = tmp_path_factory.mktemp("cluster")
    private = root / "private" if can_mount_privately() is None else None
    simulated = SimulatedCluster(root)
    try:
        yield simulated.start(private_folder=private)
    finally:
        simulated.stop()


@dataclass(frozen=True)
class WriteTasksHeldOnW2:
    """Every write task on `w2` held after its first file is written under its temporary name and
    before the move (`faults.boundary("ray-file-written")`, set through the job's runtime env: pass
    `env` to `driver`). The hold's release file exists everywhere but in w2's private folder, so
    the driver, the head and w1 never wait."""

    node: Node  # w2 as it was when the hold was set
    env: dict[str, str]
    pause: Path  # the hold's file, as every node names it

    def wait(self, cluster: SimulatedCluster, process: subprocess.Popen[str]) -> None:
        """Until a write task is held on w2; skips the test when the run ended first (placement is Ray's)."""
        raylet = cluster.raylet_pid(self.node)
        assert raylet is not None
        held = Path(f"/proc/{raylet}/root") / str(self.pause).lstrip("/")  # the path in w2's mount namespace
        cluster.wait_for("a write task held on w2", lambda: held.exists() or process.poll() is not None)
        if process.poll() is not None:
            pytest.skip("no write task ran on w2 this time")

    def release_on_new_w2(self, cluster: SimulatedCluster) -> None:
        """The release file in the private folder of the node that replaced w2: its tasks go on."""
        raylet = cluster.raylet_pid(cluster.node("w2"))
        assert raylet is not None
        (Path(f"/proc/{raylet}/root") / str(self.pause).lstrip("/")).with_name("hold.release").write_text("")


def hold_write_tasks_on_w2(cluster: SimulatedCluster) -> WriteTasksHeldOnW2:
    """Set the hold (skipping the test where w2 cannot have a private folder)."""
    why = can_mount_privately()
    if why is not None:
        pytest.skip(why)
    pause = cluster.root / "private" / "hold"
    (cluster.root / "private" / "hold.release").write_text("")  # the driver, head and w1 never wait
    hooks = {"TC_PAUSE_AT": "ray-file-written:1", "TC_PAUSE_FILE": str(pause)}
    env = {"RAY_JOB_CONFIG_JSON_ENV_VAR": json.dumps({"runtime_env": {"env_vars": hooks}})}
    return WriteTasksHeldOnW2(cluster.node("w2"), env, pause)


def held_rows(folder: Path) -> Path:
    """120 rows, the first 32 short enough to need no summary (under 20,000 characters: a few
    thousand tokens, under any target here): with every request held, the first two parts are
    written and the others wait, a known point whatever the machine's speed."""
    rows = read_jsonl(SAMPLE)
    short = [row for row in rows if len(json.dumps(row)) < 20_000][:SHORT_ROWS]
    rest = [row for row in rows if len(json.dumps(row)) >= 20_000]
    return write_jsonl(folder / "runs.jsonl", [*short, *rest][:ROWS])


def local_reference(folder: Path, source: Path) -> Path:
    """The local engine's run of `source` (extractive), the reference for every byte."""
    out = folder / "x.jsonl"
    result = run_cli("compress", str(source), "-o", str(out), "--summarizer", "extractive")
    assert result.returncode == 0, result.stderr
    return out


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return held_rows(tmp_path_factory.mktemp("input"))


@pytest.fixture(scope="module")
def local_outputs(tmp_path_factory: pytest.TempPathFactory, source: Path) -> Path:
    return local_reference(tmp_path_factory.mktemp("local"), source)


def driver(
    cluster: SimulatedCluster, *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    """The real command as a process of its own (its own session: killed as a whole), joining the cluster."""
    command = [sys.executable, "-m", "trajectory_compressor", "compress", *args, "--engine", "ray",
               "--ray-address", cluster.address, "-q", "--json"]  # fmt: skip
    environment = {**cluster.env(), "TC_RAY_ROWS_PER_PART": "16", **(env or {})}
    return subprocess.Popen(
        command, cwd=cwd, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip


def finish(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    try:
        stdout, stderr = process.communicate(timeout=WAIT_SECONDS)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    return process.returncode, stdout, stderr


def one_json_object(stdout: str) -> dict[str, Any]:
    """stdout holds exactly one JSON object and nothing else."""
    value, end = json.JSONDecoder().raw_decode(stdout.strip())
    assert end == len(stdout.strip()), f"more than the JSON object on stdout: {stdout[end:][:300]!r}"
    assert isinstance(value, dict)
    return value


def records_in(out: Path) -> list[Path]:
    folder = out.parent / (out.name.removesuffix(".jsonl") + ".part_records")
    return sorted(folder.glob("part-*.json")) if folder.is_dir() else []


# A run's first part on three nodes of two cores, the other test worker's suite beside it: in CI
# it once took over `READY_SECONDS` in three tests of one worker (alone: all nine tests in 153 s).
FIRST_PART_SECONDS = 300


def wait_for_first_part(cluster: SimulatedCluster, out: Path, process: subprocess.Popen[str]) -> None:
    """Wait for the run's first part record (or its end); on a timeout, stop the driver and fail
    with the end of what it printed, so that a run stuck is told from a machine too busy."""
    try:
        cluster.wait_for(
            "the first part's record", lambda: records_in(out) or process.poll() is not None, FIRST_PART_SECONDS
        )
    except AssertionError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        _, stderr = process.communicate(timeout=WAIT_SECONDS)
        raise AssertionError(
            f"timed out waiting for the first part's record; the driver printed: {stderr[-3000:]}"
        ) from None


def llm_flags(server: FakeServerThread, cache: Path) -> list[str]:
    return ["--summarizer", "llm", "--base-url", server.base_url, "--model", "test-model", "--cache", str(cache),
            "--retry-delay", "0.01", "--request-timeout", "300"]  # fmt: skip


class HoldAfter:
    """The fake endpoint's schedule: answer every request until `hold_from(n)`, then hold from
    request `n` on (the local run's are answered, the Ray run's held) until `holding` is off."""

    def __init__(self) -> None:
        self.answered = 0
        self.holding = False

    def hold_from(self, number: int) -> None:
        self.answered, self.holding = number, True

    def __call__(self, number: int, body: Any) -> str:
        return "hold" if self.holding and number >= self.answered else "ok"


def test_output_equals_the_local_engine_byte_for_byte(
    cluster: SimulatedCluster, source: Path, local_outputs: Path, tmp_path: Path
) -> None:
    out = tmp_path / "shared" / "x.jsonl"
    code, stdout, stderr = finish(driver(cluster, str(source), "-o", str(out), "--summarizer", "extractive"))
    assert code == 0, stderr
    report = one_json_object(stdout)
    assert_same_outputs(local_outputs, out)
    files = report["files"]
    assert files["data"]["sha256"] == hashlib.sha256(local_outputs.read_bytes()).hexdigest()
    assert files["data"]["parts"] == len(records_in(out)) > 1
    assert report["inputs"] == [
        {"name": str(source), "path": str(source), "bytes": source.stat().st_size,
         "sha256": hashlib.sha256(source.read_bytes()).hexdigest()}
    ]  # fmt: skip


def test_a_local_output_that_is_not_shared_by_every_node_is_refused_before_any_work(
    cluster: SimulatedCluster, source: Path
) -> None:
    why = can_mount_privately()
    if why is not None:
        pytest.skip(why)
    out = cluster.root / "private" / "x.jsonl"  # w2 sees its own empty tmpfs there
    before = sorted(path.name for path in out.parent.iterdir())
    code, stdout, stderr = finish(driver(cluster, str(source), "-o", str(out), "--summarizer", "extractive"))
    assert code == 2, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: -o "), stderr
    assert "not on storage every node shares" in lines[0] and "s3://" in lines[0] and "gs://" in lines[0]
    assert sorted(path.name for path in out.parent.iterdir()) == before  # nothing written, no probe left
    assert one_json_object(stdout) if stdout.strip() else True


def test_an_input_a_node_sees_as_another_file_of_as_many_bytes_is_refused_before_any_work(
    cluster: SimulatedCluster, source: Path, tmp_path: Path
) -> None:
    """w2 has its own copy of the input, as long as the driver's, other bytes (a node-local copy, a
    stale cache). Before: the sizes agreed, the check passed and the run went on, exit 0: any rows
    a task on w2 read came from its copy, while the report's sha256 named the driver's."""
    why = can_mount_privately()
    if why is not None:
        pytest.skip(why)
    ours = cluster.root / "private" / "same-size.jsonl"
    ours.write_bytes(source.read_bytes())
    raylet = cluster.raylet_pid(cluster.node("w2"))
    assert raylet is not None
    theirs = Path(f"/proc/{raylet}/root") / str(ours).lstrip("/")  # the path in w2's mount namespace
    theirs.write_bytes(source.read_bytes().replace(b"a", b"b"))
    os.utime(theirs, ns=(ours.stat().st_mtime_ns - 10**9,) * 2)
    assert ours.read_bytes() != theirs.read_bytes() and ours.stat().st_size == theirs.stat().st_size
    out = tmp_path / "shared" / "x.jsonl"
    try:
        code, _, stderr = finish(driver(cluster, str(ours), "-o", str(out), "--summarizer", "extractive"))
    finally:
        theirs.unlink()
        ours.unlink()
    assert code == 2, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: the input {ours} is not on storage every node shares"), (
        stderr
    )
    assert not out.exists()


def test_a_cache_folder_not_shared_by_every_node_is_a_warning(cluster: SimulatedCluster, source: Path) -> None:
    why = can_mount_privately()
    if why is not None:
        pytest.skip(why)
    out = cluster.root / "cache-run" / "x.jsonl"
    with FakeServerThread() as server:
        process = driver(cluster, str(source), "-o", str(out), "--limit", "20",
                         *llm_flags(server, cluster.root / "private" / "cache" / "s.sqlite3"))  # fmt: skip
        code, stdout, stderr = finish(process)
    assert code == 0, stderr
    warned = [line for line in stderr.splitlines() if "cache folder" in line]
    assert len(warned) == 1 and warned[0].startswith("warning: ") and "not shared by every node" in warned[0], stderr
    assert one_json_object(stdout)["status"] == "completed"


def test_a_relative_output_and_input_are_the_drivers(
    cluster: SimulatedCluster, source: Path, local_outputs: Path, tmp_path: Path
) -> None:
    """Each node would resolve a relative path against its own working directory: the driver's is meant."""
    here = tmp_path / "work"
    (here / "in").mkdir(parents=True)
    (here / "in" / "runs.jsonl").write_bytes(source.read_bytes())
    process = driver(cluster, "in/runs.jsonl", "-o", "out/x.jsonl", "--summarizer", "extractive", cwd=here)
    code, stdout, stderr = finish(process)
    assert code == 0, stderr
    report = one_json_object(stdout)
    assert report["outputs"]["data"] == str(here / "out" / "x.jsonl")
    assert ray_parts(here / "out" / "x.jsonl") == local_outputs.read_bytes()
    assert report["rows"]["written"] == ROWS


def test_a_loss_that_ends_the_run_is_one_line_and_exit_69_never_a_hang(
    cluster: SimulatedCluster, source: Path, tmp_path: Path
) -> None:
    """The limits actor's process killed once more than Ray restarts it (an OOM killer that keeps
    at it): the run stops with one line naming what died and that the same command resumes."""
    out = tmp_path / "ray" / "x.jsonl"
    schedule = HoldAfter()
    with FakeServerThread(faults=schedule) as server:
        schedule.hold_from(0)
        process = driver(cluster, str(source), "-o", str(out), *llm_flags(server, tmp_path / "cache" / "s.sqlite3"))
        try:
            wait_for_first_part(cluster, out, process)
            cluster.wait_for("a held request", lambda: server.held > 0 or process.poll() is not None)
            assert process.poll() is None, process.communicate()[1]
            for _ in range(RESTARTS + 1):  # each time Ray restarts it, on the driver's node
                pid = cluster.wait_for("the limits actor", lambda: cluster.actor_pids("RunLimits"))[0]
                os.kill(pid, signal.SIGKILL)
                cluster.wait_for("it to be gone", lambda p=pid: p not in cluster.actor_pids("RunLimits"))
            schedule.holding = False
            server.release(None)  # the rows' next requests ask the lost actor for a slot
            code, stdout, stderr = finish(process)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
    assert code == 69, stderr
    report = one_json_object(stdout)
    assert report["status"] == "aborted" and report["exit_code"] == 69
    # The fake endpoint's summaries are off-topic: once 20 are scored (how many parts finish before
    # the loss is the cluster's timing), the run's end also says so, in a warning of its own.
    said = [
        line for line in stderr.splitlines() if not line.startswith("warning: ") or "have fidelity under" not in line
    ]
    assert said == [
        "error: the run's limits actor (RunLimits, on the driver's node) was lost (ActorDiedError); "
        "the parts written are kept: re-run the same command to resume"
    ], stderr
    assert report["resume"]["parts_written"] == len(records_in(out)) >= 1


def test_a_worker_node_lost_after_the_first_part_costs_nothing_and_stdout_stays_one_json_object(
    cluster: SimulatedCluster, source: Path, tmp_path: Path
) -> None:
    """The run's limits actor lives on the driver's node; a worker node lost mid-run is survived
    (Ray restarts its actors elsewhere and retries its tasks): exit 0, the local engine's bytes,
    stdout the one JSON object, and with -q nothing of Ray's own on stderr (issue 29, item 10)."""
    out = tmp_path / "ray" / "x.jsonl"
    schedule = HoldAfter()
    with FakeServerThread(faults=schedule) as server:
        local = run_cli("compress", str(source), "-o", str(tmp_path / "local" / "x.jsonl"),
                        *llm_flags(server, tmp_path / "local.sqlite3"))  # fmt: skip
        assert local.returncode == 0, local.stderr
        schedule.hold_from(len(server.requests))
        process = driver(cluster, str(source), "-o", str(out), *llm_flags(server, tmp_path / "cache" / "s.sqlite3"))
        victim = None
        try:
            wait_for_first_part(cluster, out, process)
            cluster.wait_for("a held request", lambda: server.held > 0 or process.poll() is not None)
            assert process.poll() is None, process.communicate()[1]
            limits = cluster.actor_pids("RunLimits")
            assert len(limits) == 1 and cluster.node_of(limits[0]) == cluster.node("head")  # pinned to the driver's
            victim = next(node for node in cluster.nodes if node.name != "head" and cluster.compress_workers_on(node))
            cluster.kill_node(victim)
            schedule.holding = False
            server.release(None)
            code, stdout, stderr = finish(process)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            if victim is not None:  # the wait before the kill failed: the cluster is whole
                cluster.replace_node(victim)
    assert code == 0, stderr
    report = one_json_object(stdout)
    assert report["status"] == "completed"
    # -q: the run's own end-of-run warnings only; nothing of Ray's (the node marked dead, the raylet's lines)
    assert stderr.splitlines() == report.get("warnings", []), stderr
    assert_same_outputs(tmp_path / "local" / "x.jsonl", out)


def test_a_driver_killed_after_k_parts_is_resumed_redoing_only_the_missing_parts(
    cluster: SimulatedCluster, source: Path, tmp_path: Path
) -> None:
    out = tmp_path / "ray" / "x.jsonl"
    schedule = HoldAfter()
    with FakeServerThread(faults=schedule) as server:
        local = run_cli("compress", str(source), "-o", str(tmp_path / "local" / "x.jsonl"),
                        *llm_flags(server, tmp_path / "local.sqlite3"))  # fmt: skip
        assert local.returncode == 0, local.stderr
        full_parts = -(-ROWS // 16)  # parts of at least 16 rows: at most this many
        schedule.hold_from(len(server.requests))
        args = [str(source), "-o", str(out), *llm_flags(server, tmp_path / "cache" / "s.sqlite3")]
        process = driver(cluster, *args)
        try:
            wait_for_first_part(cluster, out, process)
            cluster.wait_for("a held request", lambda: server.held > 0 or process.poll() is not None)
            assert process.poll() is None, process.communicate()[1]
        finally:
            os.killpg(process.pid, signal.SIGKILL)  # the driver dies; its job's actors with it
            process.wait()
        # The job's workers die with their driver: then nothing more is written.
        cluster.wait_for("the killed run's requests to go away", lambda: server.held == 0)
        cluster.wait_for(
            "the killed run's workers to end", lambda: not any(map(cluster.compress_workers_on, cluster.nodes))
        )
        kept = [path.name.removesuffix(".json") + ".jsonl" for path in records_in(out)]  # recorded: kept
        assert kept
        kept_parts = {name: (out / name).stat().st_mtime_ns for name in kept}
        schedule.holding = False
        code, stdout, stderr = finish(driver(cluster, *args))
    assert code == 0, stderr
    report = one_json_object(stdout)
    resume = report["resume"]
    assert resume["parts_kept"] == len(kept) >= 1
    assert resume["parts_written"] <= full_parts - len(kept) + 1
    assert resume["rows_kept"] > 0
    for name, mtime in kept_parts.items():  # the kept parts were not written again
        assert (out / name).stat().st_mtime_ns == mtime, name
    assert_same_outputs(tmp_path / "local" / "x.jsonl", out)


def test_a_node_lost_while_its_write_task_holds_a_part_not_yet_moved_into_place_costs_nothing(
    cluster: SimulatedCluster, source: Path, local_outputs: Path, tmp_path: Path
) -> None:
    """Every write task on w2 is held after its first file is written under its temporary name and
    before the move (`faults.boundary("ray-file-written")`, set through the job's runtime env; the
    hold's release file exists everywhere but in w2's private folder); then w2 is lost, and a new
    node takes its place (as KubeRay replaces a pod): without one, the blocks the lost node held
    are recomputed by an actor pool the two CPUs left cannot hold, and Ray Data waits for a node
    ("Cluster resources are not enough ... may hang forever"; without one, `--ray-stall-timeout`
    ends the wait: `tests/ray/test_stall_multinode.py`)."""
    hold = hold_write_tasks_on_w2(cluster)
    out = tmp_path / "shared" / "x.jsonl"
    process = driver(cluster, str(source), "-o", str(out), "--summarizer", "extractive", env=hold.env)
    try:
        hold.wait(cluster, process)
        temporary = sorted(path.name for path in out.parent.rglob(".part-*.tmp"))
        assert temporary, "the held task's file is not under its temporary name"
        cluster.kill_node(hold.node)
        cluster.replace_node(hold.node)
        hold.release_on_new_w2(cluster)
        code, stdout, stderr = finish(process)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        if all(node.name != "w2" for node in cluster.nodes):
            cluster.replace_node(hold.node)
    assert code == 0, stderr
    assert one_json_object(stdout)["status"] == "completed"
    assert_same_outputs(local_outputs, out)
    assert not list(out.parent.rglob(".part-*.tmp")), "a temporary file of the lost task is left"
