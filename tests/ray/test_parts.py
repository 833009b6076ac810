"""The parts of the Ray engine that need no Ray: the shared-folder cache, the limits' bookkeeping."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from trajectory_compressor.ray import limits
from trajectory_compressor.ray.cache import SharedFolderCache
from trajectory_compressor.ray.limits import RunLimits, merge_usage
from trajectory_compressor.summarize.llm.cache import CachedSummary, SummaryCache


def test_each_worker_writes_its_own_file_and_reads_every_file(tmp_path: Path) -> None:
    one, two = SharedFolderCache(tmp_path), SharedFolderCache(tmp_path)
    one.put("k1", CachedSummary("first", calls=2), model="m")
    assert two.get("k1") == CachedSummary("first", calls=2)  # a miss in its own file: found in the other
    with SummaryCache(tmp_path / "local-run.sqlite3") as local:  # a local run's cache in the folder
        local.put("k2", CachedSummary("from a local run"), model="m")
    assert one.get("k2") == CachedSummary("from a local run")
    assert one.get("nothing") is None
    workers = list(tmp_path.glob("worker-*.sqlite3"))
    assert len(workers) == 2
    for path in workers:  # a rollback journal: WAL needs memory shared by readers, not there on NFS
        with sqlite3.connect(path) as connection:
            assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    assert len(two) == 2
    one.close()
    two.close()


def test_limits_cap_requests_in_flight_and_take_back_a_silent_workers_slots(monkeypatch) -> None:
    monkeypatch.setattr(limits, "LEASE_SECONDS", 0.2)

    async def scenario() -> None:
        gate = RunLimits(max_concurrency=2)
        await gate.acquire("a", 10)
        await gate.acquire("b", 10)
        third = asyncio.create_task(gate.acquire("b", 10))
        await asyncio.sleep(0.05)
        assert not third.done()  # two in flight: the third waits
        await gate.release("b")
        await asyncio.wait_for(third, 5)
        assert gate.state() == {"in_flight": 2, "max_in_flight": 2, "reclaimed": 0}
        # "a" goes silent (killed) while holding a slot; "b" keeps talking
        fourth = asyncio.create_task(gate.acquire("b", 10))
        while not fourth.done():
            gate.heartbeat("b")
            await asyncio.sleep(0.05)
        assert gate.state()["reclaimed"] == 1
        assert gate.state()["max_in_flight"] == 2

    asyncio.run(scenario())


def test_usage_of_workers_adds_up() -> None:
    parts = [
        {"requests": 3, "retries_by_cause": {"429": 1}, "max_in_flight": 4, "model": "m", "cost_usd": None},
        {"requests": 2, "retries_by_cause": {"429": 2, "5xx": 1}, "max_in_flight": 6, "model": "m", "cost_usd": None},
    ]
    assert merge_usage(parts) == {
        "requests": 5, "retries_by_cause": {"429": 3, "5xx": 1}, "max_in_flight": 6, "model": "m", "cost_usd": None,
    }  # fmt: skip
