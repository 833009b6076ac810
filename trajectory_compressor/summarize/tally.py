"""Requests sent for one summary, counted as they go out.

A row cut off by `--row-timeout` cancels its summary mid-flight, so the counts the client
returns with a reply never arrive; the finisher reads this tally instead, and the row's
metrics still say how many requests it cost (and, if the endpoint never answered, the run
stops rather than fall back). The tally travels in a context variable: each
summary runs in its own task, which copies the context it was started from.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass
class CallTally:
    """Requests sent and failed attempts seen so far for one summary, and, from the client they
    went through, why its endpoint has not answered yet (None once it has, or while it may)."""

    calls: int = 0
    errors: int = 0
    endpoint_silence: Callable[[], str | None] = lambda: None


CURRENT_TALLY: ContextVar[CallTally | None] = ContextVar("summary_call_tally", default=None)


def note_call() -> None:
    """One request was sent for the current summary (if anyone is counting)."""
    tally = CURRENT_TALLY.get()
    if tally is not None:
        tally.calls += 1


def note_error() -> None:
    """One attempt of the current summary failed."""
    tally = CURRENT_TALLY.get()
    if tally is not None:
        tally.errors += 1


def note_endpoint(silence: Callable[[], str | None]) -> None:
    """The current summary goes to an endpoint that says, through `silence`, whether it is silent."""
    tally = CURRENT_TALLY.get()
    if tally is not None:
        tally.endpoint_silence = silence
