"""The window between reading and writing (`run.window.finish_in_order`), cancelled as Ctrl-C does it.

`asyncio.run` answers Ctrl-C by cancelling the run's task. An extractive summary computes with no
await, so the rows of a chunk all ran before the cancellation reached the window, and the window
then committed none of them: a real run signalled mid-way took as long again to stop and
reported 0 rows processed. The cancellation is made here from inside a row, a known point.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from trajectory_compressor.run.window import finish_in_order


def test_cancelled_mid_chunk_it_commits_the_finished_rows_and_starts_no_more() -> None:
    started: list[int] = []
    committed: list[int] = []

    async def scenario() -> None:
        owner: dict[str, asyncio.Task[None]] = {}

        async def finish(row: Any) -> Any:
            started.append(row)
            if row == 2:
                owner["task"].cancel()  # as asyncio.run's Ctrl-C handler does, while row 2 computes
            return row

        chunks = iter([[0, 1, 2, 3, 4, 5]])

        async def run() -> None:
            await finish_in_order(
                lambda: next(chunks, None),  # type: ignore[arg-type,return-value]
                finish,
                committed.append,  # type: ignore[arg-type]
                lambda pending: None,
                limit=16,
                chunk_rows=6,
            )

        owner["task"] = asyncio.ensure_future(run())
        with pytest.raises(asyncio.CancelledError):
            await owner["task"]

    asyncio.run(scenario())
    assert started == [0, 1, 2], "the rows after the one computing at the signal do not start"
    assert committed == [0, 1, 2], "the rows finished at the head of the window are committed"


def test_a_row_that_fails_is_not_committed_past_when_cancelled() -> None:
    """Only finished rows at the head are committed: one that raised stops the commits there."""
    committed: list[int] = []

    async def scenario() -> None:
        owner: dict[str, asyncio.Task[None]] = {}

        async def finish(row: Any) -> Any:
            if row == 1:
                raise ValueError("row 1 failed")
            if row == 2:
                owner["task"].cancel()
            return row

        chunks = iter([[0, 1, 2, 3]])

        async def run() -> None:
            await finish_in_order(
                lambda: next(chunks, None),  # type: ignore[arg-type,return-value]
                finish,
                committed.append,  # type: ignore[arg-type]
                lambda pending: None,
                limit=16,
                chunk_rows=4,
            )

        owner["task"] = asyncio.ensure_future(run())
        with pytest.raises(asyncio.CancelledError):
            await owner["task"]

    asyncio.run(scenario())
    assert committed == [0]
