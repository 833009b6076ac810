"""The deadline of the summary being made (`--row-timeout`), for summarizers that compute.

An LLM summary waits on the endpoint, and the row's deadline cuts that wait (`asyncio.wait_for`).
The extractive summarizer never waits: it computes, on the event loop, so nothing can cut it from
outside. It reads the deadline set here for the summary it is making and checks it between pieces
of its work (a few dozen turns of a region at a time, each fitting attempt), raising
`TimeoutError` as a cut wait does: the row then takes the same policy, flagged with
`row deadline of Ns exceeded`. The deadline travels in a context variable, like the call tally
(`tally`).

`within` cuts the wait in the row's own task (`asyncio.timeout`), not in a task of its own as
`asyncio.wait_for` makes on Python 3.11: a summary that only computes then runs straight on into
its row's fidelity scoring, while the turns it read are still in the readers' memos (`TextMemo`).
Through `wait_for`, the rows of a chunk each started their summary task and yielded, so all 64
summaries ran before any row's scoring, which then parsed the same turns again.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

T = TypeVar("T")

SUMMARY_DEADLINE: ContextVar[float | None] = ContextVar("summary_deadline", default=None)


@contextmanager
def summary_deadline(seconds: float) -> Iterator[None]:
    """The summaries made inside may take `seconds` more (on `time.monotonic`'s clock)."""
    token = SUMMARY_DEADLINE.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        SUMMARY_DEADLINE.reset(token)


def check_deadline(deadline: float | None) -> None:
    """Raise `TimeoutError` when `deadline` (a `SUMMARY_DEADLINE` value) has passed."""
    if deadline is not None and time.monotonic() > deadline:
        raise TimeoutError


async def within(seconds: float, awaitable: Awaitable[T]) -> T:
    """`await awaitable`, cancelled after `seconds` with `TimeoutError`, in the calling task."""
    if sys.version_info < (3, 11):  # no asyncio.timeout: a task of its own, and its own TimeoutError
        try:
            return await asyncio.wait_for(awaitable, timeout=seconds)
        except asyncio.TimeoutError:
            raise TimeoutError from None
    async with asyncio.timeout(seconds):
        return await awaitable
