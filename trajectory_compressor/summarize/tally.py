"""Requests sent for one summary, counted once, where they go out.

The row code opens one tally per summary (`counting`: a row's, or a context window's, first and
second pass, fidelity retry, failure and fallback alike) and reads its counts once, when the
summary is had or given up on; a summarizer opens its own inside it, for the counts of the one
summary it returns (`SummaryResult.calls`). The client notes each request it sends and each
attempt that fails (`note_call`, `note_error`) in the current tally, which adds them to every
tally around it; a cache hit notes the counts the summary took when it was made (`note_cached`).
So a row cut off by `--row-timeout` mid-flight still says how many requests it cost (and, if
the endpoint never answered, the run stops rather than fall back: `endpoint_silence`).

The tally travels in a context variable: each summary runs in its own task, which copies the
context it was started from (the same tally objects, so what the task notes, its caller sees).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field


def _answering() -> str | None:
    return None


@dataclass
class CallTally:
    """Requests sent and failed attempts seen so far for one summary, and, from the client they
    went through, why its endpoint has not answered yet (None once it has, or while it may)."""

    calls: int = 0
    errors: int = 0
    endpoint_silence: Callable[[], str | None] = _answering
    outer: CallTally | None = field(default=None, repr=False)  # the tally this one is nested in

    def add(self, calls: int = 0, errors: int = 0) -> None:
        """Count `calls` requests and `errors` failed attempts here and in every enclosing tally."""
        tally: CallTally | None = self
        while tally is not None:
            tally.calls += calls
            tally.errors += errors
            tally = tally.outer


CURRENT_TALLY: ContextVar[CallTally | None] = ContextVar("summary_call_tally", default=None)


@contextmanager
def counting() -> Iterator[CallTally]:
    """A new tally, nested in the current one (if any), current while the block runs."""
    tally = CallTally(outer=CURRENT_TALLY.get())
    token = CURRENT_TALLY.set(tally)
    try:
        yield tally
    finally:
        CURRENT_TALLY.reset(token)


def note_call() -> None:
    """One request was sent for the current summary (if anyone is counting)."""
    if (tally := CURRENT_TALLY.get()) is not None:
        tally.add(calls=1)


def note_error() -> None:
    """One attempt of the current summary failed."""
    if (tally := CURRENT_TALLY.get()) is not None:
        tally.add(errors=1)


def note_cached(calls: int, errors: int) -> None:
    """The current summary came from the cache: the requests it took when it was made."""
    if (tally := CURRENT_TALLY.get()) is not None:
        tally.add(calls, errors)


def endpoint_silence() -> str | None:
    """Why the current summary's endpoint has not answered yet, if it has not (else None)."""
    tally = CURRENT_TALLY.get()
    return tally.endpoint_silence() if tally is not None else None


def note_endpoint(silence: Callable[[], str | None]) -> None:
    """The current summary goes to an endpoint that says, through `silence`, whether it is silent."""
    tally = CURRENT_TALLY.get()
    while tally is not None:
        tally.endpoint_silence = silence
        tally = tally.outer
