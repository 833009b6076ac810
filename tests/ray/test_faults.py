"""Faults: a worker killed mid-run loses and duplicates nothing; a re-run after the driver was
killed asks for no summary already received (the cache folder is shared by every worker).

Both hold requests on the fake server to stop the run at a known point (no sleeps, no timing)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SAMPLE, read_jsonl, run_cli
from tests.fake_openai_server import FakeServerThread
from tests.ray.conftest import assert_same_outputs, json_lines, ray_parts

# Killed, signalled and resumed runs: each starts Ray two or three times (a slow suite).
pytestmark = [pytest.mark.ray, pytest.mark.ray_faults]
# A guard against a hang, not a timing: a loaded 2-core CI machine took over 120 s to start both workers.
WAIT_SECONDS = 300
SECRET = "sk-test-ray-0123456789abcdef0123456789"


def wait_for(what: str, condition: Callable[[], Any]) -> Any:
    """Poll `condition` until it is true (a known point of the run), or fail naming `what`."""
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def request_key(body: Any) -> str:
    return hashlib.sha256(json.dumps(body["messages"], sort_keys=True).encode()).hexdigest()


class Schedule:
    """A fault schedule a test switches between phases: answer, or hold every request."""

    def __init__(self) -> None:
        self.hold = False
        self.answer_first = 0  # while holding, still answer this many requests first

    def __call__(self, number: int, body: Any) -> str:
        if self.hold and number >= self.answer_first:
            return "hold"
        return "ok"


def llm_flags(base_url: str, cache: Path) -> list[str]:
    return [
        "--summarizer", "llm", "--base-url", base_url, "--model", "test-model", "--cache", str(cache),
        "--retry-delay", "0.01", "--request-timeout", "300",
    ]  # fmt: skip


def test_a_worker_killed_mid_run_loses_and_duplicates_no_row(local_ray, tmp_path: Path) -> None:
    import ray

    from trajectory_compressor.ray.run import run_on_ray
    from trajectory_compressor.settings import LLMConfig, RunConfig

    schedule = Schedule()
    with FakeServerThread(faults=schedule) as server:
        local = run_cli("compress", str(SAMPLE), "-o", str(tmp_path / "local" / "x.jsonl"),
                        *llm_flags(server.base_url, tmp_path / "local.sqlite3"))  # fmt: skip
        assert local.returncode == 0, local.stderr
        schedule.hold, schedule.answer_first = True, len(server.requests)
        config = RunConfig(
            summarizer="llm",
            llm=LLMConfig(
                base_url=server.base_url, model="test-model", retry_delay=0.01, request_timeout=300.0,
                cache_path=str(tmp_path / "cache" / "s.sqlite3"), max_concurrency=256,
            ),
            engine="ray", num_workers=2, quiet=True,
        )  # fmt: skip
        outcome: dict[str, Any] = {}

        def run() -> None:
            try:
                outcome["result"] = run_on_ray([str(SAMPLE)], str(tmp_path / "ray" / "x.jsonl"), config)
            except BaseException as exc:  # reported by the test below
                outcome["error"] = exc

        thread = threading.Thread(target=run)
        thread.start()
        limits = wait_for("the limits actor", lambda: _limits_actor(ray))
        # A known point: both workers are up and one of them holds requests on the server.
        holders = wait_for(
            "a worker holding requests",
            lambda: (
                (found := ray.get(limits.holders.remote())) and len(found) == 2 and any(h for _, h in found) and found
            ),
        )
        victim = next(actor for actor, held in holders if held > 0)
        ray.kill(victim, no_restart=False)  # Ray restarts it and retries its batch
        server.release(None)
        thread.join(WAIT_SECONDS)
        assert not thread.is_alive()
    assert "error" not in outcome, outcome.get("error")
    assert outcome["result"].exit_code == 0
    metrics = json_lines(ray_parts(tmp_path / "ray" / "x.metrics"))
    assert [m["index"] for m in metrics] == list(range(len(read_jsonl(SAMPLE))))
    assert_same_outputs(tmp_path / "local" / "x.jsonl", tmp_path / "ray" / "x.jsonl")


def _limits_actor(ray: Any) -> Any:
    names = [name for name in ray.util.list_named_actors() if name.startswith("trajectory-compressor-limits-")]
    return ray.get_actor(names[-1]) if names else None


def test_a_rerun_after_the_driver_is_killed_asks_for_no_summary_twice(local_ray, tmp_path: Path) -> None:
    schedule = Schedule()
    cache = tmp_path / "cache" / "s.sqlite3"
    out = tmp_path / "ray" / "x.jsonl"
    with FakeServerThread(faults=schedule) as server:
        local = run_cli("compress", str(SAMPLE), "-o", str(tmp_path / "local" / "x.jsonl"),
                        *llm_flags(server.base_url, tmp_path / "local.sqlite3"))  # fmt: skip
        assert local.returncode == 0, local.stderr
        answered = 10
        first_request = len(server.requests)
        schedule.hold, schedule.answer_first = True, first_request + answered
        env = {**os.environ, "OPENAI_API_KEY": SECRET}  # the workers' environment: the driver's (a local Ray)
        command = [sys.executable, "-m", "trajectory_compressor", "compress", str(SAMPLE), "-o", str(out),
                   *llm_flags(server.base_url, cache), "--engine", "ray", "--num-workers", "2", "-q"]  # fmt: skip
        driver = subprocess.Popen(
            command, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
        )
        try:
            # A known point: the first summaries are answered and stored, the next ones held.
            wait_for("the answered summaries in the cache folder", lambda: _cached(cache.parent) >= answered)
            wait_for("a held request", lambda: server.held > 0 or driver.poll() is not None)
            assert driver.poll() is None, driver.stderr.read().decode() if driver.stderr else ""
        finally:
            os.killpg(driver.pid, signal.SIGKILL)  # the driver dies, and its local Ray with it
            driver.wait()
        wait_for("the killed run's requests to go away", lambda: server.held == 0)
        phase_one = {request_key(r.body) for r in server.requests[first_request : first_request + answered]}
        schedule.hold = False
        second_request = len(server.requests)
        rerun = subprocess.run([*command[:-1], "-q"], capture_output=True, text=True, env=env, timeout=300, check=False)
        assert rerun.returncode == 0, rerun.stderr
        phase_two = [request_key(r.body) for r in server.requests[second_request:]]
        sent_by_workers = {r.authorization for r in server.requests[first_request:]}
    assert sent_by_workers == {f"Bearer {SECRET}"}  # the key reached every worker, through its environment
    for path in [*tmp_path.rglob("*")]:
        if path.is_file() and "local" not in path.name:
            assert SECRET.encode() not in path.read_bytes(), path
    assert SECRET not in rerun.stderr + rerun.stdout
    assert not phase_one & set(phase_two), "a summary received before the crash was asked for again"
    assert len(phase_two) == len(set(phase_two))
    assert_same_outputs(tmp_path / "local" / "x.jsonl", out)


def _cached(folder: Path) -> int:
    """Summaries stored in the workers' cache files so far (read while they write: WAL)."""
    import sqlite3

    total = 0
    for path in folder.glob("worker-*.sqlite3"):
        try:
            with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1) as connection:
                total += connection.execute("SELECT COUNT(*) FROM summaries_v2").fetchone()[0]
        except sqlite3.Error:
            continue
    return total


def test_sigterm_stops_the_driver_with_exit_130_and_an_interrupted_report(tmp_path: Path) -> None:
    """Slurm and Kubernetes stop a job with SIGTERM: the local engine's contract, not Ray's `sys.exit(15)`
    and native stack dump. Held at a known point first: a request in flight, held by the server."""
    pytest.importorskip("ray.data")
    schedule = Schedule()
    schedule.hold = True
    out = tmp_path / "ray" / "x.jsonl"
    with FakeServerThread(faults=schedule) as server:
        command = [sys.executable, "-m", "trajectory_compressor", "compress", str(SAMPLE), "-o", str(out),
                   *llm_flags(server.base_url, tmp_path / "cache" / "s.sqlite3"),
                   "--engine", "ray", "--num-workers", "1", "-q"]  # fmt: skip
        driver = subprocess.Popen(
            command, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        try:
            wait_for("a held request", lambda: server.held > 0 or driver.poll() is not None)
            assert driver.poll() is None, driver.communicate()[1]
            driver.send_signal(signal.SIGTERM)  # to the driver only, as Kubernetes does (its PID 1)
            _, stderr = driver.communicate(timeout=WAIT_SECONDS)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(driver.pid, signal.SIGKILL)  # whatever is left of its local Ray
            driver.wait()
            server.release(None)
    assert driver.returncode == 130, stderr
    assert stderr.splitlines() == ["error: interrupted; re-run the same command to resume"], stderr
    report = json.loads((tmp_path / "ray" / "x.report.json").read_text())
    assert report["status"] == "interrupted" and report["engine"]["name"] == "ray"
