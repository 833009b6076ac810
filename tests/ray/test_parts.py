"""The parts of the Ray engine that need no Ray: the shared-folder cache, the limits' bookkeeping,
the parts' records (checked on the driver, kept by a resume)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from trajectory_compressor.ray import limits
from trajectory_compressor.ray.cache import SharedFolderCache
from trajectory_compressor.ray.layout import RayOutputLayout
from trajectory_compressor.ray.limits import RunLimits
from trajectory_compressor.ray.parts import (
    PartFile,
    PartRecord,
    check_parts,
    holds,
    kept_parts,
    row_runs,
    segment,
    write_record,
    write_run_record,
)
from trajectory_compressor.summarize.llm.cache import CachedSummary, SummaryCache
from trajectory_compressor.summarize.llm.usage import merge_usage
from trajectory_compressor.write.run_files import ResumeMismatchError
from trajectory_compressor.write.run_fingerprint import RunFingerprint


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
    # The leases run on the test's clock: a worker is silent for as long as the test says, never
    # for as long as a busy machine stalls the loop (a stall of 0.2 s took back every slot).
    now = [0.0]
    monkeypatch.setattr(limits, "time", SimpleNamespace(monotonic=lambda: now[0]))
    monkeypatch.setattr(limits, "LEASE_SECONDS", 0.2)  # the reaper looks every 0.05 s

    async def scenario() -> None:
        gate = RunLimits(max_concurrency=2)
        await gate.acquire("a", 10)
        await gate.acquire("b", 10)
        third = asyncio.create_task(gate.acquire("b", 10))
        await asyncio.sleep(0.05)  # the reaper looks meanwhile: nobody is silent yet
        assert not third.done()  # two in flight: the third waits
        await gate.release("b")
        await asyncio.wait_for(third, 30)
        assert gate.state() == {"in_flight": 2, "max_in_flight": 2, "reclaimed": 0}
        # "a" goes silent (killed) while holding a slot; "b" keeps talking
        fourth = asyncio.create_task(gate.acquire("b", 10))
        now[0] += 1.0  # past a lease since either last spoke...
        gate.heartbeat("b")  # ...but "b" speaks now
        await asyncio.wait_for(fourth, 30)  # the reaper took back "a"'s slot: never comes without
        assert gate.state() == {"in_flight": 2, "max_in_flight": 2, "reclaimed": 1}  # "a"'s only

    asyncio.run(scenario())


def test_usage_of_workers_adds_up() -> None:
    parts = [
        {"requests": 3, "retries_by_cause": {"429": 1}, "max_in_flight": 4, "model": "m", "cost_usd": None},
        {"requests": 2, "retries_by_cause": {"429": 2, "5xx": 1}, "max_in_flight": 6, "model": "m", "cost_usd": None},
    ]
    assert merge_usage(parts) == {
        "requests": 5, "retries_by_cause": {"429": 3, "5xx": 1}, "max_in_flight": 6, "model": "m", "cost_usd": None,
    }  # fmt: skip


def test_a_batch_goes_back_only_once_the_limits_actor_holds_its_workers_figures() -> None:
    """Ray orders one caller's calls, not two callers': a report sent and forgotten could reach the
    actor after the driver's final sum (a CI run's report counted 71 cache hits of 93)."""
    from trajectory_compressor.ray.actor import CompressWorker

    class HeldLimits:  # `report.remote` answers only when the test says so, as a slow actor would
        def __init__(self) -> None:
            self.report = self
            self.received: list[tuple[object, ...]] = []
            self.answer: asyncio.Future[None] | None = None

        def remote(self, *args: object) -> asyncio.Future[None]:
            self.received.append(args)
            self.answer = asyncio.get_running_loop().create_future()
            return self.answer

    class Finisher:
        async def finish(self, row: str) -> str:
            return row.upper()

    class Guard:
        def to_dict(self) -> dict[str, int]:
            return {"checked": 1}

    worker = object.__new__(CompressWorker)
    worker.gate, worker.finisher = limits.ClusterGate(HeldLimits()), Finisher()
    worker.summarizer = type("Summarizer", (), {"stats": lambda self: {"cache_hits": 3}})()
    worker.counter = type("Counter", (), {"guard": Guard()})()

    async def scenario() -> None:
        held = worker.gate.limits
        batch = asyncio.ensure_future(worker._finish(["a", "b"]))
        for _ in range(20):
            await asyncio.sleep(0)
        assert held.received == [(worker.gate.worker, {"cache_hits": 3}, {"checked": 1})]
        assert not batch.done()  # the batch waits for the actor's answer
        held.answer.set_result(None)
        assert await batch == ["A", "B"]

    asyncio.run(scenario())


def _part(layout: RayOutputLayout, first: int, lines: list[bytes], fingerprint: str = "f") -> PartRecord:
    """A part of `lines` (dataset and metrics) and its record, as a write task leaves them."""
    name = f"part-{first:012d}.jsonl"
    data = b"".join(line + b"\n" for line in lines)
    files = {}
    for output in ("data", "metrics"):
        folder = Path(layout.outputs()[output])
        folder.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
        files[output] = PartFile.of(name, data)
    record = PartRecord(first, row_runs(range(first, first + len(lines))), files, {"rows_selected": len(lines)}, (),
                        fingerprint)  # fmt: skip
    Path(layout.records).mkdir(parents=True, exist_ok=True)
    write_record(layout, record)
    return record


def test_row_runs_and_the_rows_a_resume_skips() -> None:
    assert row_runs([3, 4, 5, 9, 10, 12]) == ((3, 6), (9, 11), (12, 13))
    runs = ((3, 6), (9, 11))
    assert [index for index in range(13) if holds(runs, index)] == [3, 4, 5, 9, 10]
    assert [segment((3, 9), index) for index in (0, 2, 6, 8, 11)] == [0, 0, 1, 1, 2]  # new parts never span a kept one


def test_a_record_changed_after_it_was_written_is_not_one(tmp_path: Path) -> None:
    layout = RayOutputLayout.beside(str(tmp_path / "x.jsonl"))
    record = _part(layout, 0, [b'{"a": 1}'])
    saved = Path(layout.records) / record.name
    assert PartRecord.from_dict(json.loads(saved.read_bytes())) == record
    edited = json.loads(saved.read_bytes())
    edited["rows"] = [[0, 5]]
    assert PartRecord.from_dict(edited) is None
    assert PartRecord.from_dict(["not", "a", "record"]) is None


def test_the_driver_reads_every_part_back_and_names_what_is_not_as_recorded(tmp_path: Path) -> None:
    layout = RayOutputLayout.beside(str(tmp_path / "x.jsonl"))
    records = [_part(layout, 0, [b'{"a": 1}', b'{"a": 2}']), _part(layout, 2, [b'{"a": 3}'])]
    files, problems = check_parts(layout, records)
    assert problems == []
    whole = b'{"a": 1}\n{"a": 2}\n{"a": 3}\n'  # the parts in order: the local engine's file
    assert files["data"] == {"path": layout.data, "parts": 2, "bytes": len(whole), "lines": 3,
                             "sha256": hashlib.sha256(whole).hexdigest()}  # fmt: skip
    assert files["rejects"]["parts"] == 0 and files["rejects"]["sha256"] == hashlib.sha256(b"").hexdigest()
    (Path(layout.data) / "part-000000000002.jsonl").unlink()  # written on another machine's disk
    (Path(layout.metrics) / "part-000000000000.jsonl").write_bytes(b'{"a": 9}\n{"a": 2}\n')
    _, problems = check_parts(layout, records)
    assert len(problems) == 2
    assert "x.jsonl/part-000000000002.jsonl cannot be read here" in problems[0]
    assert "x.metrics/part-000000000000.jsonl does not hold the bytes its record names" in problems[1]


def test_a_resume_keeps_the_parts_that_verify_and_refuses_another_commands_parts(tmp_path: Path) -> None:
    layout = RayOutputLayout.beside(str(tmp_path / "x.jsonl"))
    good = _part(layout, 0, [b'{"a": 1}', b'{"a": 2}'])
    _part(layout, 2, [b'{"a": 3}'])
    (Path(layout.data) / "part-000000000002.jsonl").write_bytes(b'{"a": 4}\n')  # changed since: redone
    said: list[str] = []
    kept = kept_parts(layout, RunFingerprint("f", {}), said.append)
    assert kept.records == (good,) and kept.runs == ((0, 2),) and kept.row_count == 2
    assert kept.names()["data"] == {"part-000000000000.jsonl"} and kept.names()["part_records"] == {good.name}
    assert said[0].startswith("resuming: 1 parts do not verify (") and said[1].startswith("resuming: 1 parts (2 rows)")
    with pytest.raises(ResumeMismatchError, match="unfinished run with other inputs or settings; "):
        kept_parts(layout, RunFingerprint("another command's fingerprint", {}), said.append)


def test_another_commands_parts_are_refused_naming_what_differs_from_the_runs_record(tmp_path: Path) -> None:
    """`run.json` keeps what the parts' fingerprint hashed; without it (an earlier version's parts),
    or when it is another run's, the refusal says only that something differs."""
    layout = RayOutputLayout.beside(str(tmp_path / "x.jsonl"))
    inputs = [{"name": "in.jsonl", "bytes": 10, "sha256": "0" * 64, "records": 3}]

    def run(settings: dict[str, Any]) -> RunFingerprint:
        return RunFingerprint.of({"settings": settings, "sources": inputs}, settings, inputs)

    first = run({"target_max_tokens": 8000, "extra_body": {"api_key": "k-AAAA1111"}})
    _part(layout, 0, [b'{"a": 1}'], first.digest)
    write_run_record(layout, first)
    assert "k-AAAA1111" not in (Path(layout.records) / "run.json").read_text()
    now = run({"target_max_tokens": 4000, "extra_body": {"api_key": "k-BBBB2222"}})
    with pytest.raises(ResumeMismatchError) as refused:
        kept_parts(layout, now, [].append)
    assert str(refused.value) == (
        f"{layout.data} holds the parts of an unfinished run with other inputs or settings "
        "(settings differ: target_max_tokens 8000 -> 4000, extra_body changed); "
        "re-run with the same command to resume it, or pass --no-resume to start over"
    )
    write_run_record(layout, run({"target_max_tokens": 1}))  # not the parts' run
    with pytest.raises(ResumeMismatchError, match="other inputs or settings; re-run"):
        kept_parts(layout, now, [].append)
    (Path(layout.records) / "run.json").unlink()
    with pytest.raises(ResumeMismatchError, match="other inputs or settings; re-run"):
        kept_parts(layout, now, [].append)
    assert kept_parts(layout, first, [].append).row_count == 1
