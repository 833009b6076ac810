"""The deadline of the summary being made (`--row-timeout`), for summarizers that compute.

An LLM summary waits on the endpoint, and the row's deadline cuts that wait (`asyncio.wait_for`).
The extractive summarizer never waits: it computes, on the event loop, so nothing can cut it from
outside. It reads the deadline set here for the summary it is making and checks it between pieces
of its work (a few dozen turns of a region at a time, each fitting attempt), raising
`TimeoutError` as a cut wait does: the row then takes the same policy, flagged with
`row deadline of Ns exceeded`. The deadline travels in a context variable, like the call tally
(`tally`): each summary runs in its own task, which copies the context it was started from.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

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
