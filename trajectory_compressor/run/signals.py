"""Stopping a run cleanly: SIGTERM and Ctrl-C both end at a whole row, with a checkpoint to resume from."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Iterator


@contextlib.contextmanager
def sigterm_cancels_this_task() -> Iterator[None]:
    """During the run, SIGTERM cancels it at its next await, as Ctrl-C does under `asyncio.run`.

    So a stop never lands between the lines of one row's commit: the checkpoint written on the
    way out always ends on a whole row.
    """
    loop, task = asyncio.get_running_loop(), asyncio.current_task()
    previous = signal.getsignal(signal.SIGTERM)
    try:
        if task is None:
            raise RuntimeError("no task")
        loop.add_signal_handler(signal.SIGTERM, task.cancel)
    except (ValueError, RuntimeError, NotImplementedError):  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        loop.remove_signal_handler(signal.SIGTERM)
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def install_sigterm_as_interrupt() -> None:
    """Treat SIGTERM like Ctrl-C so job schedulers stopping us leave a resumable checkpoint."""
    with contextlib.suppress(ValueError):  # not the main thread (library use): leave signals alone
        signal.signal(signal.SIGTERM, signal.default_int_handler)
