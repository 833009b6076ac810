"""The window between reading and writing (`run.window.finish_in_order`), cancelled as Ctrl-C does it.

`asyncio.run` answers Ctrl-C by cancelling the run's task. An extractive summary computes with no
await, so the rows of a chunk all ran before the cancellation reached the window, and the window
then committed none of them: a real run signalled mid-way took as long again to stop and
reported 0 rows processed. The cancellation is made here from inside a row, a known point.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from trajectory_compressor.run.window import finish_in_order


def _cancelled_at(rows: list[int], row_cancelling: int, fails: int | None = None) -> tuple[list[Any], list[Any]]:
    """The rows started and the rows committed when the run's task is cancelled while
    `row_cancelling` computes (as asyncio.run's Ctrl-C handler does); row `fails` raises."""
    started: list[Any] = []
    committed: list[Any] = []

    async def scenario() -> None:
        owner: dict[str, asyncio.Task[None]] = {}

        async def finish(row: Any) -> Any:
            started.append(row)
            if row == fails:
                raise ValueError(f"row {row} failed")
            if row == row_cancelling:
                owner["task"].cancel()
            return row

        chunks = iter([rows])
        read: Callable[[], Any] = lambda: next(chunks, None)  # noqa: E731

        async def run() -> None:
            await finish_in_order(read, finish, committed.append, lambda pending: None, limit=16, chunk_rows=len(rows))

        owner["task"] = asyncio.ensure_future(run())
        with pytest.raises(asyncio.CancelledError):
            await owner["task"]

    asyncio.run(scenario())
    return started, committed


def test_cancelled_mid_chunk_it_commits_the_finished_rows_and_starts_no_more() -> None:
    started, committed = _cancelled_at([0, 1, 2, 3, 4, 5], row_cancelling=2)
    assert started == [0, 1, 2], "the rows after the one computing at the signal do not start"
    assert committed == [0, 1, 2], "the rows finished at the head of the window are committed"


def test_a_row_that_fails_is_not_committed_past_when_cancelled() -> None:
    """Only finished rows at the head are committed: one that raised stops the commits there."""
    _, committed = _cancelled_at([0, 1, 2, 3], row_cancelling=2, fails=1)
    assert committed == [0]
