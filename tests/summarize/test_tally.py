"""`summarize.tally`: one tally per summary, nested ones adding to every tally around them."""

from __future__ import annotations

import asyncio

from trajectory_compressor.summarize.tally import (
    CURRENT_TALLY,
    counting,
    endpoint_silence,
    note_cached,
    note_call,
    note_endpoint,
    note_error,
)


def test_a_nested_tally_adds_to_every_enclosing_one_and_each_request_counts_once() -> None:
    with counting() as row:
        note_call()
        note_error()  # a first attempt that failed
        with counting() as summary:
            note_call()
            with counting() as inner:
                note_cached(2, 1)  # a cache hit: what it took when made
        note_call()
    assert (inner.calls, inner.errors) == (2, 1)
    assert (summary.calls, summary.errors) == (3, 1)
    assert (row.calls, row.errors) == (5, 2)
    assert CURRENT_TALLY.get() is None


def test_nothing_is_counted_without_a_tally_and_a_task_counts_in_its_callers() -> None:
    note_call(), note_error(), note_cached(3, 3)  # nobody counting: no effect, no error

    async def summary() -> None:
        with counting():
            note_call()
            note_endpoint(lambda: "never answered")

    async def row() -> tuple[int, str | None]:
        with counting() as tally:
            await asyncio.wait_for(asyncio.ensure_future(summary()), timeout=5)
            return tally.calls, endpoint_silence()

    assert asyncio.run(row()) == (1, "never answered")
    assert endpoint_silence() is None
