"""The bounded, ordered window between reading and writing: rows finish in any order, commit in input order.

Reading, validating, counting and planning run in a worker thread, a chunk at a time; each row's
finishing (its summary) runs as a task on the event loop. The reader may run at most `limit`
rows ahead of the oldest unfinished row, so memory depends on the window, not on the input;
finished rows at the head of the window are handed on in input order as soon as they are done.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from trajectory_compressor.run.prepare import PreparedRow
from trajectory_compressor.run.row import FinishedRow
from trajectory_compressor.summarize.oldest_first import take_place


async def finish_in_order(
    read_chunk: Callable[[], list[PreparedRow] | None],
    finish: Callable[[PreparedRow], Awaitable[FinishedRow]],
    commit: Callable[[FinishedRow], None],
    after_commits: Callable[[int], None],
    *,
    limit: int,
    chunk_rows: int,
    ahead_rows: int = 0,
) -> None:
    """Finish every row `read_chunk` gives (None: no more), committing them in order.

    `after_commits(pending)` runs after each batch of commits (checkpoints, progress), with the
    number of rows still in the window. `ahead_rows`: rows `read_chunk`'s source may hold read
    ahead of it (`read.ahead`), counted in the window. On the way out (done, error or
    cancellation) the rows still in flight are cancelled and awaited, and the reader thread is
    stopped.

    Cancelled (Ctrl-C: `asyncio.run` cancels the run's task), the window stops at the next whole
    row: a row that has not started yet sees its owner cancelling and does not start (an
    extractive summary computes without an await, so the rows of a chunk would otherwise all run
    before the cancellation reached this task), and the rows already finished at its head are
    committed before it returns, so a resumed run does not make them again.
    """
    loop = asyncio.get_running_loop()
    owner = asyncio.current_task()
    window: deque[asyncio.Future[FinishedRow]] = deque()
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tc-prepare")
    try:
        pending: asyncio.Future[list[PreparedRow] | None] | None = None
        exhausted = False
        while True:
            # Read the next chunk only when it fits: the rows read and not yet written (the
            # window, the chunk being read and the one read ahead) never exceed `limit`.
            if pending is None and not exhausted and len(window) + chunk_rows + ahead_rows <= limit:
                pending = loop.run_in_executor(executor, read_chunk)
            waiting: set[asyncio.Future[Any]] = {pending} if pending is not None else set()
            if window:
                waiting.add(window[0])
            if not waiting:
                break
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            if pending is not None and pending.done():
                prepared, pending = pending.result(), None
                if prepared is None:
                    exhausted = True
                else:
                    window.extend(asyncio.ensure_future(_in_place(finish, row, owner)) for row in prepared)
            while window and window[0].done():
                commit(window.popleft().result())
            after_commits(len(window))
    except asyncio.CancelledError:
        while window and window[0].done() and not window[0].cancelled() and window[0].exception() is None:
            commit(window.popleft().result())
        raise
    finally:
        for future in window:
            future.cancel()
        if window:
            await asyncio.gather(*window, return_exceptions=True)
        executor.shutdown(wait=True, cancel_futures=True)


async def _in_place(
    finish: Callable[[PreparedRow], Awaitable[FinishedRow]], row: PreparedRow, owner: asyncio.Task[Any] | None
) -> FinishedRow:
    """Finish `row` in its own place in the summarizer's queues: input order, since the tasks start
    in the order they were made. A row asking again (a second pass) is then served before the
    rows behind it, instead of holding the head of the window while they go first. Not started
    when the window's `owner` is being cancelled (`finish_in_order`)."""
    if owner is not None and getattr(owner, "cancelling", lambda: 0)():
        raise asyncio.CancelledError
    take_place()
    return await finish(row)
