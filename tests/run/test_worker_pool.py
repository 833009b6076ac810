"""`--num-workers N` on the local engine: extractive summaries in worker processes.

The outputs must be byte for byte those of one process. A worker killed, or the run stopped
while a worker holds a row, must stop the run with one line, leave no worker behind, and
resume to the same bytes. Every stop happens at a known point: the `faults` hook `worker-row`,
hit in the worker just before it finishes a row, never after a sleep. A row finished in the run's
process never hits it, so these tests also fail if the rows are not sent to the workers.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import make_trajectory, read_jsonl, write_jsonl
from trajectory_compressor import PlanConfig, RunConfig, compress
from trajectory_compressor.api import worker_pool
from trajectory_compressor.count import counter_for
from trajectory_compressor.run.prepare import notice_tokens, prepare_for_run
from trajectory_compressor.run.row import FinishedRow, RowFinisher
from trajectory_compressor.run.worker_pool import (
    IMPORTED_BY_A_WORKER,
    NONE_STARTED,
    WORKER_DIED,
    PooledFinisher,
    WorkerPool,
    _uncancelled,
)
from trajectory_compressor.settings import ConfigError
from trajectory_compressor.settings.endpoint import LLMConfig
from trajectory_compressor.summarize.choose import choose_summarizers
from trajectory_compressor.types import SourceRecord

OUTPUTS = ("x.jsonl", "x.metrics.jsonl", "x.over_limit.jsonl", "x.rejects.jsonl")
FLAGS = ["--summarizer", "extractive", "--target-max-tokens", "2500", "--summary-target-tokens", "200"]


def _input(tmp_path: Path, rows: int = 40) -> Path:
    lines: list = [make_trajectory(i, steps=3 + i % 9, output_lines=20 + i % 50) for i in range(rows)]
    lines[5] = "{broken"  # a reject: every side file has content
    return write_jsonl(tmp_path / "in.jsonl", lines)


def _outputs(folder: Path) -> dict[str, bytes]:
    return {name: (folder / name).read_bytes() for name in OUTPUTS}


@pytest.mark.parametrize(
    "windows", [pytest.param(False, id="single-row"), pytest.param(True, id="windows", marks=pytest.mark.variants)]
)
def test_the_outputs_are_those_of_one_process(tmp_path: Path, windows: bool) -> None:
    source = _input(tmp_path)
    config = RunConfig(summarizer="extractive", plan=PlanConfig(target_max_tokens=2500, windows=windows))
    reports = {}
    for workers in (1, 2):
        folder = tmp_path / f"w{workers}"
        output = dataclasses.replace(config.output, html_report=str(folder / "report.html"))
        run_config = dataclasses.replace(config, num_workers=workers, output=output)
        [result] = compress([str(source)], folder / "x.jsonl", run_config)
        reports[workers] = result.report
    assert _outputs(tmp_path / "w1") == _outputs(tmp_path / "w2")
    assert (tmp_path / "w1" / "report.html").read_bytes() == (tmp_path / "w2" / "report.html").read_bytes()
    one, two = reports[1], reports[2]
    assert one["rows"] == two["rows"] and one["tokens"] == two["tokens"]
    assert one["summaries"] == two["summaries"] and one["summaries"]["endpoint"]["summaries"] > 0
    assert one["counters"] == two["counters"]
    assert one["counting"]["backend"] == two["counting"]["backend"]


def test_finished_rows_and_the_example_row_are_those_of_the_run_process() -> None:
    """Row by row: each finished row, and the HTML report's example (the lowest compressed row),
    equal to what `RowFinisher` makes in this process."""
    config = RunConfig(summarizer="extractive", plan=PlanConfig(target_max_tokens=2500))
    counter = counter_for(config)
    records = [(i, i + 1, SourceRecord("in.jsonl", i + 1, make_trajectory(i, steps=4 + i))) for i in range(8)]
    rows = prepare_for_run(records, counter, config, notice_tokens(counter, config.plan))
    choice = choose_summarizers(config, counter)
    local = RowFinisher(config, counter, choice.primary, choice.fallback)
    pool = WorkerPool(config, 2)
    pooled = PooledFinisher(RowFinisher(config, counter, choice.primary, choice.fallback), pool)

    async def finish_all() -> tuple[list[FinishedRow], list[FinishedRow]]:
        here = [await local.finish(row) for row in rows]
        return here, [await pooled.finish(row) for row in rows]  # later compressed rows must not take its place

    try:
        here, there = asyncio.run(finish_all())
    finally:
        pool.close()
    assert sum(local.summarizes(row) for row in rows) >= 3  # rows sent to the workers
    assert here == there
    assert local.example is not None and pooled.example == local.example


def test_a_row_too_deep_to_send_to_a_worker_is_finished_in_the_run_process(tmp_path: Path) -> None:
    """The reader takes rows nested up to 512 levels; pickle gives up near 490 (a RecursionError
    in the queue's feeder thread, which stopped the whole run). Such a row is summarized in the
    run's process instead, and the outputs are still those of one process."""
    deep: list[Any] = []
    for _ in range(505):
        deep = [deep]
    rows = [make_trajectory(i, steps=12, output_lines=60, extra={"deep": deep} if i == 1 else None) for i in range(3)]
    source = write_jsonl(tmp_path / "deep.jsonl", rows)
    config = RunConfig(summarizer="extractive", plan=PlanConfig(target_max_tokens=2500))
    for workers in (1, 2):
        output = tmp_path / f"w{workers}" / "x.jsonl"
        [result] = compress([str(source)], output, dataclasses.replace(config, num_workers=workers))
        assert result.report["counters"]["rows_compressed"] == 3
    assert _outputs(tmp_path / "w1") == _outputs(tmp_path / "w2")


def _start(source: Path, out: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "trajectory_compressor", "compress", str(source), "-o", str(out), *FLAGS, *extra]
    full_env = {**os.environ, "TC_CHECKPOINT_ROWS": "5", "TC_CHECKPOINT_SECONDS": "1e9", **(env or {})}
    return subprocess.Popen(
        command, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )


def _one_process(tmp_path: Path, source: Path) -> dict[str, bytes]:
    process = _start(source, tmp_path / "one" / "x.jsonl", "--num-workers", "1")
    _, stderr = process.communicate(timeout=300)
    assert process.returncode in (0, 3), stderr
    return _outputs(tmp_path / "one")


def _resumed(source: Path, out: Path, *, checkpointed: bool = True) -> dict[str, bytes]:
    """The outputs of the same command run again; it resumes when the stopped run `checkpointed`
    (a SIGKILL before the first checkpoint leaves only a work folder to start over in)."""
    process = _start(source, out, "--num-workers", "2", "--window", "8")
    _, stderr = process.communicate(timeout=300)
    assert process.returncode in (0, 3), stderr
    assert ("resuming" in stderr) == checkpointed, stderr
    return _outputs(out.parent)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.kills
def test_a_killed_worker_stops_the_run_with_one_line_and_a_re_run_resumes(tmp_path: Path) -> None:
    source = _input(tmp_path)
    out = tmp_path / "two" / "x.jsonl"
    process = _start(source, out, "--num-workers", "2", "--window", "8", env={"TC_CRASH_AT": "worker-row:3"})
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 69, stderr
    assert WORKER_DIED in stderr and "Traceback" not in stderr
    assert _resumed(source, out) == _one_process(tmp_path, source)


def _hold_a_worker(source: Path, out: Path, tmp_path: Path) -> subprocess.Popen[str]:
    """Start a run and wait until a worker stands still before its second row (its process id in
    `tmp_path / "held"`)."""
    marker = tmp_path / "held"
    env = {"TC_PAUSE_AT": "worker-row:2", "TC_PAUSE_FILE": str(marker)}
    process = _start(source, out, "--num-workers", "2", "--window", "8", env=env)
    deadline = time.monotonic() + 300
    while not marker.exists() or not marker.read_text():
        assert process.poll() is None, process.communicate()[1]
        assert time.monotonic() < deadline, "no worker reached its second row"
        time.sleep(0.01)
    return process


@pytest.mark.kills
@pytest.mark.parametrize("stop", ["SIGINT to the run", "SIGTERM to its process group"])
def test_a_run_stopped_while_a_worker_holds_a_row_leaves_no_worker_and_resumes(tmp_path: Path, stop: str) -> None:
    source = _input(tmp_path)
    out = tmp_path / "two" / "x.jsonl"
    process = _hold_a_worker(source, out, tmp_path)
    held = int((tmp_path / "held").read_text())  # the worker standing still, which ignores both signals
    assert held != process.pid
    if stop.startswith("SIGINT"):
        process.send_signal(signal.SIGINT)
    else:
        os.killpg(process.pid, signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    deadline = time.monotonic() + 10
    while not _gone(held):  # killed by the run, then reaped: no worker outlives it
        assert time.monotonic() < deadline, "the held worker outlived the run"
        time.sleep(0.01)
    assert _resumed(source, out) == _one_process(tmp_path, source)


def test_a_row_given_up_on_leaves_the_pools_future_to_the_pool() -> None:
    """The mechanism of the hang below, without its race: a row's wait cancelled (the run stopping)
    must not cancel the pool's future, which the pool's manager thread marks failed when a worker
    dies (Python 3.11 raised `InvalidStateError` there on a future cancelled under it, and the
    thread died). `run_in_executor`'s wait cancels it: this test fails with it."""
    pooled: Future[Any] = Future()

    async def give_up() -> None:
        task = asyncio.ensure_future(_uncancelled(pooled))
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(give_up())
    assert not pooled.cancelled()
    pooled.set_exception(BrokenProcessPool("a worker died"))  # what the manager thread does: no error


def test_a_killed_pool_leaves_no_thread_for_the_exit_hook_to_race() -> None:
    """A stopped run's pool, closed with `kill=True`, has no thread of its own left when `close`
    returns. CPython 3.11's exit hook wakes each pool's manager thread still running, and raced it
    as it closed its pipe: now and then a killed worker's run ended with `OSError: [Errno 9] Bad
    file descriptor` under its one-line message (the subprocess test below, under load)."""
    pool = WorkerPool(RunConfig(summarizer="extractive"), 1)
    try:
        pool._starts[0].result(timeout=120)
        manager = pool._pool._executor_manager_thread  # type: ignore[attr-defined]  # `shutdown` forgets it
    finally:
        pool.close(kill=True)
    assert not manager.is_alive()


@pytest.mark.kills
def test_a_worker_killed_with_rows_queued_behind_it_stops_the_run_instead_of_hanging(tmp_path: Path) -> None:
    """Rows larger than a pipe's buffer queued for the workers (the default window), one worker
    killed while it holds a row: the run must stop (exit 69, one line). On Python 3.11 the run
    hung at exit when it cancelled the pool's futures itself (3 runs of 3 before the fix)."""
    rows = [make_trajectory(i, steps=12, output_lines=300) for i in range(40)]  # ~160 KB a row
    source = write_jsonl(tmp_path / "big.jsonl", rows)
    marker = tmp_path / "held"
    env = {"TC_PAUSE_AT": "worker-row:6", "TC_PAUSE_FILE": str(marker)}
    process = _start(source, tmp_path / "out" / "x.jsonl", "--num-workers", "2", env=env)
    deadline = time.monotonic() + 300
    while not marker.exists() or not marker.read_text():
        assert process.poll() is None, process.communicate()[1]
        assert time.monotonic() < deadline, "no worker reached its sixth row"
        time.sleep(0.01)
    os.kill(int(marker.read_text()), signal.SIGKILL)
    marker.with_name("held.release").touch()
    try:
        _, stderr = process.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        pytest.fail("the run hung after its worker was killed")
    assert process.returncode == 69, stderr
    assert WORKER_DIED in stderr and "Traceback" not in stderr


def _children(pid: int) -> set[int]:
    """The processes whose parent is `pid` (Linux: /proc)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        if int(fields[1]) == pid:
            found.add(int(stat.parent.name))
    return found


@pytest.mark.kills
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process tree from /proc")
def test_a_run_killed_outright_takes_its_workers_with_it_and_resumes(tmp_path: Path) -> None:
    """SIGKILL gives the run's process no chance to stop its pool: the workers, idle or holding a
    row, must notice it is gone and exit, not wait on their task queue forever."""
    source = _input(tmp_path)
    out = tmp_path / "two" / "x.jsonl"
    process = _hold_a_worker(source, out, tmp_path)
    children = _children(process.pid)
    assert len(children) >= 2  # the two workers (and the pool's resource tracker)
    process.kill()
    process.communicate(timeout=60)
    deadline = time.monotonic() + 30
    while not all(_gone(pid) for pid in children):
        assert time.monotonic() < deadline, f"workers outlived the run: {sorted(p for p in children if not _gone(p))}"
        time.sleep(0.05)
    checkpointed = (out.parent / ".x.jsonl.work" / "state.json").exists()
    assert _resumed(source, out, checkpointed=checkpointed) == _one_process(tmp_path, source)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process tree from /proc")
def test_ctrl_c_while_the_workers_start_is_one_line(tmp_path: Path) -> None:
    """Ctrl-C reaches the whole process group, workers still importing the package included: they
    must be born ignoring it (a KeyboardInterrupt traceback from each worker before)."""
    source = _input(tmp_path, rows=8)
    process = _start(source, tmp_path / "out" / "x.jsonl", "--num-workers", "2")
    deadline = time.monotonic() + 120
    while not (workers := [pid for pid in _children(process.pid) if b"spawn_main" in _command_line(pid)]):
        assert process.poll() is None, process.communicate()[1]
        assert time.monotonic() < deadline, "no worker was spawned"
        time.sleep(0.005)
    stops = (1 << (signal.SIGINT - 1)) | (1 << (signal.SIGTERM - 1))
    for pid in workers:  # from its first moment: held back (blocked), then ignored
        status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
        deaf = int(status["SigBlk"], 16) | int(status["SigIgn"], 16)
        assert deaf & stops == stops, status["SigBlk"]
    os.killpg(process.pid, signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr


def _command_line(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def test_a_script_without_a_main_guard_is_told_what_to_do_in_one_line(tmp_path: Path) -> None:
    """Spawned workers import the calling script again; there a second `compress()` must stop its
    worker with one line (not start a pool of its own), and the run say why no worker started."""
    source = _input(tmp_path, rows=8)
    script = tmp_path / "job.py"
    script.write_text(
        "from trajectory_compressor import PlanConfig, RunConfig, compress\n"
        "config = RunConfig(summarizer='extractive', num_workers=2, plan=PlanConfig(target_max_tokens=2500))\n"
        f"[result] = compress([{str(source)!r}], {str(tmp_path / 'x.jsonl')!r}, config)\n"
        "print(int(result.exit_code), result.message)\n"
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"69 {NONE_STARTED}"
    assert IMPORTED_BY_A_WORKER in done.stderr and "Traceback" not in done.stderr


def test_a_script_read_from_stdin_is_refused_in_one_line_before_any_worker_starts(tmp_path: Path) -> None:
    """Spawn would import `<stdin>` in each worker, a file that is not there: every worker would
    die with Python's own traceback. The run is refused up front instead."""
    source = _input(tmp_path, rows=8)
    script = (
        "from trajectory_compressor import ConfigError, PlanConfig, RunConfig, compress\n"
        "config = RunConfig(summarizer='extractive', num_workers=2, plan=PlanConfig(target_max_tokens=2500))\n"
        "if __name__ == '__main__':\n"
        "    try:\n"
        f"        compress([{str(source)!r}], {str(tmp_path / 'x.jsonl')!r}, config)\n"
        "    except ConfigError as exc:\n"
        "        print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-"], input=script, capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert "a script read from stdin cannot be; run it from a file" in done.stdout
    assert "Traceback" not in done.stderr and not (tmp_path / "x.jsonl").exists()
    script_file = tmp_path / "job.py"  # the same script from a file runs
    script_file.write_text(script)
    done = subprocess.run([sys.executable, str(script_file)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0 and done.stdout == "", done.stderr
    assert len(read_jsonl(tmp_path / "x.metrics.jsonl")) == 8  # every row, one of them a reject


def test_a_callers_own_counter_cannot_go_to_the_workers(tmp_path: Path) -> None:
    config = RunConfig(summarizer="extractive", num_workers=2)
    with pytest.raises(ConfigError, match="leave `counter` out"):
        compress([str(_input(tmp_path, rows=8))], tmp_path / "x.jsonl", config, counter=counter_for(config))


def test_no_pool_where_processes_would_not_help() -> None:
    said: list[str] = []
    assert worker_pool(RunConfig(summarizer="extractive"), said.append) is None  # one worker: this process
    assert worker_pool(RunConfig(summarizer="extractive", num_workers=2, dry_run=True), said.append) is None
    assert worker_pool(RunConfig(summarizer="none", num_workers=2), said.append) is None
    llm = RunConfig(summarizer="llm", num_workers=2, llm=LLMConfig(base_url="http://127.0.0.1:9/v1", model="m"))
    assert worker_pool(llm, said.append) is None
    assert said == ["--num-workers: the LLM summarizer waits on its endpoint, not on a core; rows stay in this process"]
