"""`StallWatch`: when a Ray run that can no longer go on is stopped, and when it is left alone.

The watch is driven here by hand, with a clock, a part count and a cluster of the test's own: no
Ray, no sleeps. The run it stops on a real cluster of three nodes is `tests/ray/test_multinode.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("ray.data")

from trajectory_compressor.ray.stall import RayStalled, StallWatch, recorded_parts

pytestmark = pytest.mark.ray


@dataclass
class Cluster:
    """What the watch looks at, set by the test: the time, the parts recorded, the alive CPUs."""

    now: float = 0.0
    parts: int = 0
    cpus: float = 3.0

    def watch(self, seconds: float = 60.0) -> StallWatch:
        return StallWatch(seconds, 3.0, 2, lambda: self.parts, lambda: self.cpus, clock=lambda: self.now)

    def at(self, watch: StallWatch, now: float) -> None:
        self.now = now
        watch.step()


def test_a_cluster_short_of_the_workers_with_no_part_recorded_is_stopped_after_the_bound() -> None:
    cluster = Cluster()
    watch = cluster.watch()
    cluster.at(watch, 0)
    cluster.cpus = 2.0  # a node lost: the pool (2 CPUs) and Ray Data's own task (1) no longer fit
    for now in range(6, 61, 6):  # a look every 6 s (a tenth of the bound); the first to see it short, at 6
        cluster.at(watch, now)
    assert watch.fired is None
    with pytest.raises(RayStalled) as stopped:
        cluster.at(watch, 66)  # 60 s after that look
    assert watch.fired == str(stopped.value)
    assert str(stopped.value).startswith(
        "no part finished for 60 s while the cluster could not run the workers "
        "(2 CPUs alive; the 2 workers and Ray Data's own tasks need 3)"
    )
    assert "re-run the same command to resume" in watch.fired
    assert watch.message(RuntimeError("Ray Data's wrapper")) == watch.fired
    cluster.at(watch, 1000)  # once stopped, it says it once


def test_a_part_recorded_or_a_node_joining_starts_the_count_again() -> None:
    cluster = Cluster(cpus=2.0)
    watch = cluster.watch()
    cluster.at(watch, 0)
    cluster.at(watch, 6)
    cluster.parts = 1  # the run goes on, slowly, on the cluster left
    cluster.at(watch, 60)
    cluster.at(watch, 100)
    cluster.cpus = 3.0  # a replacement node (an autoscaler, KubeRay)
    cluster.at(watch, 125)
    cluster.cpus = 2.0
    cluster.at(watch, 150)
    cluster.at(watch, 204)
    assert watch.fired is None
    with pytest.raises(RayStalled):
        cluster.at(watch, 210)


def test_a_cluster_that_holds_the_workers_is_never_stopped_however_slow_the_parts() -> None:
    """A run whose workers wait on a slow or rate-limited endpoint is not stalled: only a short cluster is."""
    cluster = Cluster()
    watch = cluster.watch()
    for now in range(0, 100_000, 10):
        cluster.at(watch, now)
    assert watch.fired is None


def test_a_cluster_that_holds_the_workers_never_lists_the_records_folder() -> None:
    """The parts are a listing of the records folder (tens of thousands of objects on S3), made from
    Ray Data's scheduling loop: it was made on every look, a healthy run's too. Only a short cluster
    can stall, so only a short cluster's looks list it, and it still stops after the bound."""
    cluster = Cluster()
    listings: list[float] = []

    def listed() -> int:
        listings.append(cluster.now)
        return cluster.parts

    watch = StallWatch(60.0, 3.0, 2, listed, lambda: cluster.cpus, clock=lambda: cluster.now)
    for now in range(0, 10_000, 6):
        cluster.parts = now // 600  # a part now and then, as a healthy run records them
        cluster.at(watch, now)
    assert listings == []
    cluster.cpus = 2.0  # a node lost: from here the looks list the records
    for now in range(10_002, 10_062, 6):
        cluster.at(watch, now)
    assert listings == list(range(10_002, 10_062, 6)) and watch.fired is None
    with pytest.raises(RayStalled):
        cluster.at(watch, 10_062)  # the first short look, plus the bound


def test_zero_waits_forever_and_a_failed_look_stops_nothing() -> None:
    cluster = Cluster(cpus=0.0)
    forever = cluster.watch(0)
    for now in range(0, 100_000, 10):
        cluster.at(forever, now)
    assert forever.fired is None

    def unreachable() -> float:
        raise ConnectionError("the GCS is busy")

    blind = StallWatch(60, 3.0, 2, lambda: 0, unreachable, clock=lambda: cluster.now)
    for now in range(0, 1000, 10):
        cluster.at(blind, now)
    assert blind.fired is None


def test_ray_datas_own_no_progress_guard_is_the_same_resumable_stop() -> None:
    class ExecutionTimeoutError(Exception):  # Ray Data's, by name: it reaches the driver wrapped
        pass

    watch = Cluster().watch()
    try:
        try:
            raise ExecutionTimeoutError("Dataset execution made no progress")
        except ExecutionTimeoutError as inner:
            raise RuntimeError("wrapped") from inner
    except RuntimeError as outer:
        said = watch.message(outer)
    assert said is not None and said.endswith("re-run the same command to resume")
    assert watch.message(ValueError("anything else")) is None


def test_the_parts_counted_are_the_records_in_the_folder(tmp_path: Path) -> None:
    folder = tmp_path / "x.part_records"
    assert recorded_parts(str(folder)) == 0  # before the run makes it
    folder.mkdir()
    for name in ("part-000000000000.json", "part-000000000016.json", ".part-000000000032.json.tmp", "run.json"):
        (folder / name).write_text("{}")
    assert recorded_parts(str(folder)) == 2
    assert recorded_parts(folder.as_uri()) == 2


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # a new DataContext names Ray's deprecated fields
@pytest.mark.parametrize(("seconds", "during"), [(0, -1), (60, 1800), (3600, 3600)])
def test_while_watched_ray_datas_own_guard_never_stops_the_run_first(seconds: float, during: float) -> None:
    """`--ray-stall-timeout 0` waits forever, so Ray Data's no-progress guard is off; any other bound
    keeps the guard at least as long; both are as they were once the execution is over."""
    from types import SimpleNamespace

    from ray.data import DataContext

    from trajectory_compressor.ray.stall import StallCallback

    context = DataContext()
    context.execution_no_progress_timeout_s = 1800
    watch = Cluster().watch(seconds)
    with watch.watching(SimpleNamespace(context=context)):
        assert context.execution_no_progress_timeout_s == during
        assert StallCallback in context.custom_execution_callback_classes
    assert context.execution_no_progress_timeout_s == 1800
    assert StallCallback not in context.custom_execution_callback_classes


@pytest.mark.parametrize(("cpus", "workers"), [(15, 25), (11, 147), (12, 85), (3, 2), (8, 7)])
def test_a_whole_cluster_whose_cpus_the_workers_share_exactly_is_never_short(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, cpus: int, workers: int
) -> None:
    """The pool's CPUs (`workers * worker_cpus`) plus one came to 15.000000000000002 on a whole
    cluster of 15 CPUs with 25 workers: short from the start, so a healthy run whose parts wait
    on a slow endpoint for the bound was stopped as stalled, 'a node was lost'."""
    from trajectory_compressor.ray import engine
    from trajectory_compressor.ray.stall import stall_watch

    monkeypatch.setattr(engine, "cluster_cpus", lambda: float(cpus))
    watch = stall_watch(str(tmp_path / "x.part_records"), 60, workers)
    cluster = Cluster(cpus=float(cpus))
    watch.cpus, watch.clock = (lambda: cluster.cpus), (lambda: cluster.now)
    for now in range(0, 10_000, 10):  # no part ever recorded: every part slower than the bound
        cluster.at(watch, now)
    assert watch.fired is None
