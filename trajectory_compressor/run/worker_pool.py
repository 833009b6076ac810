"""`--num-workers N` on the local engine: the extractive summaries in N worker processes.

The extractive summarizer computes; it never waits on an endpoint. In one process it holds one
core while the others idle, and a run is then as fast as one core summarizes (about ten times
slower than counting). Here the rows to summarize are sent whole, read, counted and planned, to
N spawned processes. Each builds its own tokenizer and summarizers from the run's settings and
finishes a row with the same `RowFinisher` code the run's process would use. The finished row
comes back and the window commits it in input order, like any other. Everything else stays in
the run's process: reading, counting, planning, rows with nothing to summarize, and writing.
So the outputs are byte for byte those of one process (tested).

A worker ignores Ctrl-C and SIGTERM: the run's process stops the run and then kills the
workers, so a signal to the whole process group stops the run as it stops one process. A worker
exits by itself when the run's process is gone (SIGKILL, out of memory), so none outlives a run.
A worker that dies breaks the pool: the run stops with one line, and a re-run resumes from its
last checkpoint. Nothing is lost or written twice, because rows are committed only by the run's
process, in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

from trajectory_compressor.count.exactness import GuardResult
from trajectory_compressor.errors import RunAborted
from trajectory_compressor.exit_codes import ExitCode
from trajectory_compressor.faults import boundary
from trajectory_compressor.run.prepare import PreparedRow, ValidRow
from trajectory_compressor.run.row import FinishedRow, RowFinisher
from trajectory_compressor.settings import RunConfig
from trajectory_compressor.summarize.llm.usage import merge_usage
from trajectory_compressor.summarize.redact import redact_secrets
from trajectory_compressor.types import ExampleRow

STOP_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM})  # the run's process handles them, not a worker
WORKER_DIED = (
    "a worker process summarizing rows stopped (killed, or out of memory?); "
    "re-run the same command to resume from the last checkpoint"
)
NONE_STARTED = (
    "the worker processes (--num-workers) stopped before they were ready (killed, out of memory, "
    "or what a line above says); re-run the same command to resume"
)
IMPORTED_BY_A_WORKER = (
    "trajectory_compressor: compress() was called while a worker process imported the script "
    '(Python\'s spawn runs its top level again); call it under `if __name__ == "__main__":`'
)


def refuse_in_a_starting_worker() -> None:
    """Stop a worker process that runs a user's script's top level (spawn imports it) and meets
    a `compress()` call there: one line, no traceback, no second pool started from the first."""
    if getattr(multiprocessing.current_process(), "_inheriting", False):
        raise SystemExit(IMPORTED_BY_A_WORKER)


def main_script_reloadable() -> bool:
    """Whether spawned workers can import the `__main__` module again, as spawn does: by its module
    name (`python -m`), by its file, or not at all (`python -c`, a notebook: no file to import).
    A script read from stdin names a file, `<stdin>`, that is not there."""
    main = sys.modules.get("__main__")
    if main is None or getattr(main, "__spec__", None) is not None:
        return True
    path = getattr(main, "__file__", None)
    return path is None or os.path.exists(path)


@dataclass(frozen=True)
class WorkerFigures:
    """What the run's report needs of one worker so far (each row brings the latest)."""

    worker: int  # the worker's process id
    cpu_seconds: float  # the worker's CPU since its start-up ended
    stats: dict[str, Any] | None  # its summarizer's counters
    counting: dict[str, Any]  # its exactness guard (`GuardResult.to_dict`)


@dataclass(frozen=True)
class WorkerFinished:
    """A row finished in a worker."""

    row: FinishedRow
    example: ExampleRow | None  # the HTML report's example, when this row made one
    figures: WorkerFigures


class _Worker:
    """What one worker process holds: its tokenizer, summarizers and finisher, built once."""

    def __init__(self, config: RunConfig) -> None:
        from trajectory_compressor.count import counter_for
        from trajectory_compressor.summarize.choose import choose_summarizers

        self.counter = counter_for(config)
        choice = choose_summarizers(config, self.counter)
        self.summarizer = choice.primary
        self.finisher = RowFinisher(config, self.counter, choice.primary, choice.fallback)
        self.loop = asyncio.new_event_loop()
        self.cpu_started = time.process_time()

    def finish(self, row: ValidRow) -> WorkerFinished:
        boundary("worker-row")  # where the tests kill or hold a worker
        self.finisher.example = None
        finished = self.loop.run_until_complete(self.finisher.finish(row))
        figures = WorkerFigures(
            os.getpid(),
            time.process_time() - self.cpu_started,
            self.summarizer.stats() if self.summarizer is not None else None,
            self.counter.guard.to_dict(),
        )
        return WorkerFinished(finished, self.finisher.example, figures)


_worker: _Worker | None = None
_start_error: str | None = None


def _start_worker(config: RunConfig) -> None:
    """The pool's initializer: ignore the signals the run's process handles, then build the worker.

    A failure is kept as one line and said on the first row, not printed as a traceback here."""
    global _worker, _start_error
    for number in STOP_SIGNALS:
        signal.signal(number, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):  # held back since it was spawned (`_stop_signals_held`)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    _exit_with_the_run()
    try:
        _worker = _Worker(config)
    except Exception as exc:  # said by the run's process, on the first row sent
        _start_error = redact_secrets(f"a worker process could not start: {exc}")


def _exit_with_the_run() -> None:
    """End this worker when the run's process ends, however it ends (SIGKILL, out of memory).

    The pool would not: an idle worker waits on its task queue forever (it holds that pipe's
    writing end itself, so it never reads an end of file), and a busy one finishes its row first.
    A thread waits on the parent's sentinel, which the kernel makes ready when the parent exits."""
    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def wait_for_the_run() -> None:
        multiprocessing.connection.wait([parent.sentinel])
        os._exit(1)

    threading.Thread(target=wait_for_the_run, name="tc-worker-parent", daemon=True).start()


def _started() -> None:
    """A worker's first task: nothing but its start-up (the initializer)."""


def _finish_in_worker(row: ValidRow) -> WorkerFinished | str:
    """`row` finished by this process's worker; the start-up's failure (one line) if it has none."""
    if _worker is None:
        return _start_error or "a worker process could not start"
    return _worker.finish(row)


class WorkerPool:
    """N spawned worker processes finishing the rows that need a summary, and their figures.

    Made by the caller of the runs (one pool serves every output of a `compress` call) and
    closed by it: `close()` after the last run, `close(kill=True)` when a run stopped early.
    """

    def __init__(self, config: RunConfig, workers: int) -> None:
        # Spawned, not forked: the run's process holds threads (the reader, the tokenizer's pool).
        self._pool = ProcessPoolExecutor(
            workers, mp_context=multiprocessing.get_context("spawn"), initializer=_start_worker, initargs=(config,)
        )
        self._latest: dict[int, WorkerFigures] = {}  # each worker's latest figures, by process id
        # Every worker started now (the pool spawns one per task waiting), not at the first row.
        try:
            with _stop_signals_held():
                self._starts = [self._pool.submit(_started) for _ in range(workers)]
        except BaseException:  # Ctrl-C, taken as the signals are let through again
            self.close(kill=True)
            raise

    async def finish(self, row: ValidRow) -> tuple[FinishedRow, ExampleRow | None]:
        """`row` finished in a worker: the finished row and, when it made one, its example row."""
        try:
            done = await _uncancelled(self._pool.submit(_finish_in_worker, row))
        except BrokenProcessPool:
            started = any(_succeeded(start) for start in self._starts)
            raise RunAborted(WORKER_DIED if started else NONE_STARTED, ExitCode.LOST) from None
        if isinstance(done, str):
            raise RunAborted(done, ExitCode.FAILED)
        self._latest[done.figures.worker] = done.figures
        return done.row, done.example

    @property
    def cpu_seconds(self) -> float:
        """CPU seconds the workers spent on rows (start-up excluded), as far as they reported."""
        return sum(done.cpu_seconds for done in self._latest.values())

    def stats(self, own: dict[str, Any] | None) -> dict[str, Any] | None:
        """The run's summarizer counters: the run's process's (`own`), plus each worker's."""
        if own is None:
            return None
        return merge_usage([own, *(done.stats for done in self._latest.values() if done.stats is not None)])

    def counting(self, own: GuardResult) -> GuardResult:
        """The run's exactness guard: the run's process's, with what each worker's saw."""
        workers = [GuardResult.from_dict(done.counting) for done in self._latest.values()]
        return own.with_workers([own, *workers]) if workers else own

    def close(self, *, kill: bool = False) -> None:
        """Stop the pool: wait for the workers to exit, or (`kill`) kill them now, rows in flight lost
        (they were never committed: a re-run computes them again)."""
        processes = list(getattr(self._pool, "_processes", {}).values()) if kill else []
        manager = getattr(self._pool, "_executor_manager_thread", None) if kill else None
        self._pool.shutdown(wait=not kill, cancel_futures=True)
        for process in processes:
            if process.is_alive():
                process.kill()
        for process in processes:
            process.join(timeout=10)
        # The pool's manager thread sees its workers gone and closes its wake-up pipe. Left running,
        # it raced CPython 3.11's exit hook (`concurrent.futures.process._python_exit` checks the
        # pipe is open, then writes to it): a killed worker's run sometimes ended with a traceback
        # (`OSError: [Errno 9] Bad file descriptor`) under its one-line message. Joined, the hook
        # finds the pipe closed and writes nothing.
        if manager is not None:
            manager.join(timeout=10)


@contextlib.contextmanager
def _stop_signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM held back in this thread while the workers are spawned.

    A spawned process inherits the signal mask (across exec too), so a worker is born deaf to both
    until its initializer ignores them: until then, a worker importing the package printed a
    KeyboardInterrupt traceback at Ctrl-C. Here a signal that comes meanwhile is not lost: it
    waits, and is taken when they are let through (the run then stops as it would have)."""
    if not hasattr(signal, "pthread_sigmask"):  # not POSIX: each worker ignores them once started
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


async def _uncancelled(future: Future[WorkerFinished | str]) -> WorkerFinished | str:
    """Await a pool's `future` without ever cancelling it: a cancelled caller stops waiting, and
    the future is left to the pool (`close` cancels what has not started).

    `run_in_executor` cancels the pool's future with its caller's. On Python 3.11 a pool broken by
    a dead worker then fails to mark that future (`InvalidStateError` in its manager thread), the
    thread dies before it closes the task queue, and the queue's feeder, blocked on a full pipe,
    holds the process at exit for ever. A run stopping at its first `BrokenProcessPool` cancels
    every other row's wait at once, so this happened to most runs whose worker was killed."""
    loop = asyncio.get_running_loop()
    waiter: asyncio.Future[WorkerFinished | str] = loop.create_future()

    def settle(done: Future[WorkerFinished | str]) -> None:
        if waiter.done():
            return
        if done.cancelled():
            waiter.cancel()
        elif (error := done.exception()) is not None:
            waiter.set_exception(error)
        else:
            waiter.set_result(done.result())

    def settle_on_the_loop(done: Future[WorkerFinished | str]) -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits any more
            loop.call_soon_threadsafe(settle, done)

    future.add_done_callback(settle_on_the_loop)
    return await waiter


def _succeeded(future: Future[Any]) -> bool:
    return future.done() and not future.cancelled() and future.exception() is None


class PooledFinisher:
    """A run's finisher that sends the rows it would summarize to a `WorkerPool` and finishes
    the others itself; `example` is the HTML report's example row, as `RowFinisher.example`."""

    def __init__(self, local: RowFinisher, pool: WorkerPool) -> None:
        self.local = local
        self.pool = pool
        self.example: ExampleRow | None = None

    async def finish(self, row: PreparedRow) -> FinishedRow:
        if not self.local.summarizes(row):
            return await self.local.finish(row)
        assert isinstance(row, ValidRow)
        try:
            finished, example = await self.pool.finish(row)
        except RecursionError:  # nested too deep to pickle (the reader takes 512 levels): made here
            finished, example = await self.local.finish(row), self.local.example
        if example is not None and (self.example is None or example.index < self.example.index):
            self.example = example
        return finished
