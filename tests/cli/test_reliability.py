"""`--row-timeout`, `--rpm` and `--window` through the real CLI against the fake endpoint.

None of these tests times the code: a stalled row is held by the server until the run gave up
on it, the rate limit is checked against the earliest time each request could lawfully arrive
(a slow machine only makes requests later), and the window is checked by holding every
request until the test releases it while counting how far the reader got.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import make_trajectory, read_jsonl, run_cli, write_jsonl
from tests.fake_openai_server import FakeServerThread, prompt_text
from trajectory_compressor.run.pipeline import CHUNK_ROWS
from trajectory_compressor.summarize.llm.ratelimit import TokenBucket

MARKER = re.compile(r"test_mod(\d+)\.py")
BUDGET = ["--target-max-tokens", "1500", "--summary-target-tokens", "100", "-q"]


def _llm(base_url: str, *extra: str) -> list[str]:
    return [
        *BUDGET, "--summarizer", "llm", "--base-url", base_url, "--model", "m", "--no-cache",
        "--retry-delay", "0.01", "--request-timeout", "60", *extra,
    ]  # fmt: skip


def _row_of(body: Any) -> int:
    return int(MARKER.search(prompt_text(body)).group(1))  # type: ignore[union-attr]


# -------------------------------------------------------------------------------- --row-timeout


@pytest.mark.parametrize("policy", ["extractive", pytest.param("keep", marks=pytest.mark.variants)])
def test_row_timeout_applies_the_failure_policy_to_the_stalled_row_only(tmp_path: Path, policy: str) -> None:
    rows = [make_trajectory(i, steps=8, output_lines=20) for i in range(5)]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out" / "x.jsonl"
    stalled = 2

    def schedule(number: int, body: Any) -> str:
        return "hold" if _row_of(body) == stalled else "ok"  # held until the server stops

    with FakeServerThread(faults=schedule) as server:
        args = _llm(server.base_url, "--row-timeout", "3", "--on-summary-failure", policy)
        result = run_cli("compress", str(source), "-o", str(out), *args)
        assert result.returncode == 0, result.stderr
        assert sorted(_row_of(r.body) for r in server.requests) == list(range(5)), "one request per row"
    metrics = read_jsonl(out.parent / "x.metrics.jsonl")
    lines = out.read_bytes().splitlines()
    inputs = source.read_bytes().splitlines()
    assert [m["index"] for m in metrics] == list(range(5)) and len(lines) == 5
    for i, m in enumerate(metrics):
        if i == stalled:
            continue
        assert m["was_compressed"] and m["summarizer"] == "llm" and m["last_error"] is None, m
        assert f"test_mod{i}.py" in lines[i].decode() and lines[i] != inputs[i]
    m = metrics[stalled]
    assert m["last_error"] == "row deadline of 3s exceeded" and m["summary_failed"] is True
    if policy == "extractive":
        assert m["was_compressed"] and m["summarizer"] == "extractive" and m["reason"] is None
        row = json.loads(lines[stalled])
        assert row["conversations"][m["compression_region"]["start_idx"]]["value"].startswith("[CONTEXT SUMMARY]:")
    else:
        assert not m["was_compressed"] and m["still_over_limit"]
        assert m["reason"] == "summary failed: row deadline of 3s exceeded"
        assert lines[stalled] == inputs[stalled], "kept rows are written unchanged"
    report = json.loads((out.parent / "x.report.json").read_text())
    assert report["rows"]["summary_failed"] == 1 and report["rows"]["compressed"] == (5 if policy != "keep" else 4)


# -------------------------------------------------------------------------------- --rpm


def test_token_bucket_on_simulated_time_admits_the_burst_then_the_rate() -> None:
    now = [0.0]
    admitted: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        now[0] += seconds

    async def scenario() -> None:
        bucket = TokenBucket(60, burst=3, clock=lambda: now[0], sleep=fake_sleep)  # 1 a second
        for _ in range(12):
            await bucket.acquire()
            admitted.append(now[0])

    asyncio.run(scenario())
    assert admitted == pytest.approx([0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
    # In any window of T seconds from the start, at most burst + rate * T requests get through.
    for t in range(10):
        assert sum(1 for a in admitted if a <= t) <= 3 + t


def test_token_bucket_refills_while_idle_but_never_beyond_its_burst() -> None:
    now = [0.0]

    async def fake_sleep(seconds: float) -> None:
        now[0] += seconds

    async def scenario() -> list[float]:
        bucket = TokenBucket(120, clock=lambda: now[0], sleep=fake_sleep)  # 2 a second, burst 20
        waits = [await bucket.acquire() for _ in range(20)]
        now[0] += 1000.0  # a long idle spell refills to the burst, not to 2,000
        waits += [await bucket.acquire() for _ in range(21)]
        return waits

    waits = asyncio.run(scenario())
    assert waits[:20] == [0.0] * 20
    assert waits[20:40] == [0.0] * 20 and waits[40] == pytest.approx(0.5)


def test_rpm_through_the_cli_admits_no_more_than_the_bucket(tmp_path: Path) -> None:
    """--rpm 60: a burst of 10 (ten seconds' worth), then one a second.

    Request k (0-based) cannot arrive before (k + 1 - 10) seconds after the bucket was created,
    which is after the process started: a bound that a slow machine cannot break.
    """
    rows = [make_trajectory(i, steps=6, output_lines=20) for i in range(13)]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out" / "x.jsonl"
    with FakeServerThread() as server:
        started = time.monotonic()
        result = run_cli("compress", str(source), "-o", str(out), *_llm(server.base_url, "--rpm", "60"))
        assert result.returncode == 0, result.stderr
        arrivals = sorted(r.arrived - started for r in server.requests)
    assert len(arrivals) == 13
    for k, arrived in enumerate(arrivals):
        assert arrived >= (k + 1 - 10) / 1.0, f"request {k} arrived {arrived:.2f}s after the start"
    report = json.loads((out.parent / "x.report.json").read_text())
    assert report["summaries"]["endpoint"]["requests"] == 13
    assert all(m["was_compressed"] for m in read_jsonl(out.parent / "x.metrics.jsonl"))


# -------------------------------------------------------------------------------- --window

WINDOW = 4


class FifoFeeder:
    """Writes JSONL rows into a named pipe the CLI reads, noting how far ahead the reader got.

    Each row is padded past the pipe's buffer (64 KiB) plus the reader's, so once row k is
    fully written the reader has taken rows 0..k-1. `released` is the number of requests the
    test let the server answer: no more rows than that can have been written out, so
    (rows read - released) is a lower bound on the rows between reading and writing.
    """

    def __init__(self, path: Path, lines: list[bytes]) -> None:
        self.path = path
        self.lines = lines
        self.released = 0
        self.ahead = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with open(self.path, "wb", buffering=0) as pipe:
            for k, line in enumerate(self.lines, start=1):
                pipe.write(line + b"\n")  # blocks while the reader is not reading
                self.ahead = max(self.ahead, (k - 1) - self.released)


@pytest.fixture(scope="module")
def window_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("window")
    count = WINDOW + 2 * CHUNK_ROWS + 40
    pad = "x" * 100_000
    lines = [
        json.dumps(make_trajectory(i, steps=6, output_lines=20, extra={"pad": pad})).encode() for i in range(count)
    ]
    fifo = tmp / "in.jsonl"
    os.mkfifo(fifo)
    out = tmp / "out" / "x.jsonl"
    feeder = FifoFeeder(fifo, lines)
    with FakeServerThread(default="hold") as server:
        args = ["compress", str(fifo), "-o", str(out), *_llm(server.base_url, "--window", str(WINDOW))]
        process = subprocess.Popen(
            [sys.executable, "-m", "trajectory_compressor", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        feeder.thread.start()
        deadline = time.monotonic() + 240
        try:
            while process.poll() is None:
                assert time.monotonic() < deadline, "the run did not finish"
                unfinished = sum(1 for r in list(server.requests) if r.finished is None)
                held = server.held
                if held and held == unfinished:  # every request in flight is waiting: let them go
                    feeder.released += held  # counted before they can be answered
                    server.release(held)
                time.sleep(0.005)
        finally:
            if process.poll() is None:
                process.kill()
            _stdout, stderr = process.communicate()
        max_in_flight = server.max_in_flight
        requests = len(server.requests)
    feeder.thread.join(timeout=10)
    assert process.returncode == 0, stderr.decode()
    return {
        "count": count,
        "ahead": feeder.ahead,
        "max_in_flight": max_in_flight,
        "requests": requests,
        "metrics": read_jsonl(out.parent / "x.metrics.jsonl"),
    }


def test_window_bounds_the_requests_in_flight_and_the_rows_read_ahead(window_run: dict[str, Any]) -> None:
    assert window_run["requests"] == window_run["count"]
    assert [m["index"] for m in window_run["metrics"]] == list(range(window_run["count"]))
    assert all(m["was_compressed"] for m in window_run["metrics"])
    assert 1 <= window_run["max_in_flight"] <= WINDOW
    # The reader is held back: it never runs away with the input (here: 212 rows, 21 MB).
    assert window_run["ahead"] <= WINDOW


def test_at_most_window_rows_are_between_reading_and_writing(window_run: dict[str, Any]) -> None:
    assert window_run["max_in_flight"] <= WINDOW
    assert window_run["ahead"] <= WINDOW
