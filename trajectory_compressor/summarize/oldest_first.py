"""Oldest row first: who gets the next request slot, and the next turn of a worker thread.

Rows are committed in input order, so the row at the head of the window holds up every row
behind it. With first-come-first-served queues, a row whose summary needs a second request (a
second pass, a re-ask for low fidelity) queues behind every row read after it: the whole window.
While it waits the reader stops (the window is full), the queue drains, and the pipe runs dry.
Measured at C=64 and 200 ms: in flight fell from 64 to 1 for 0.3 s for one such row in 300.

So each row's task takes a *place* as it starts (`take_place`, called by the ordered window,
`run.window`, in input order) and keeps it for all its requests; `OrderedSlots` and
`OrderedWorker` serve the lowest place first, and among equals first come, first served. A
task that took no place (a library caller's) takes one at its first request.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import threading
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, TypeVar

T = TypeVar("T")

_PLACE: ContextVar[int | None] = ContextVar("oldest_first_place", default=None)
_NEXT_PLACE = itertools.count()  # next() on a count is atomic in CPython: safe across threads


def take_place() -> int:
    """A new place for this task, behind every place taken before: call it first in a row's task."""
    taken = next(_NEXT_PLACE)
    _PLACE.set(taken)
    return taken


def place() -> int:
    """This task's place in the queues: the one it took, or a new one on its first call."""
    taken = _PLACE.get()
    return take_place() if taken is None else taken


class OrderedSlots:
    """An asyncio semaphore whose waiters get a free slot lowest `place()` first.

    Used as ``async with slots:``. A waiter cancelled after a slot was handed to it passes the
    slot on, so no slot is ever lost.
    """

    def __init__(self, slots: int) -> None:
        if slots < 1:
            raise ValueError("OrderedSlots needs at least one slot")
        self._free = slots
        self._waiters: list[tuple[int, int, asyncio.Future[None]]] = []
        self._arrival = itertools.count()

    async def __aenter__(self) -> None:
        if self._free > 0 and not self._waiters:
            self._free -= 1
            return
        granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (place(), next(self._arrival), granted))
        try:
            await granted
        except asyncio.CancelledError:
            if granted.done() and not granted.cancelled():
                self._release()  # handed a slot it will not use: the next waiter takes it
            else:
                granted.cancel()  # still queued: `_release` skips it
            raise

    async def __aexit__(self, *exc: object) -> None:
        self._release()

    def _release(self) -> None:
        while self._waiters:
            _, _, granted = heapq.heappop(self._waiters)
            if not granted.done():
                granted.set_result(None)  # the slot passes straight to the waiter
                return
        self._free += 1


class OrderedWorker:
    """One worker thread that runs the queued call of the lowest `place()` first.

    ``await worker.call(function, *args)`` runs `function(*args)` on the thread and returns its
    result (or raises its exception) on the caller's event loop. The thread starts on the first
    call and is a daemon: `close()` lets it finish what is queued and stop.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._queue: list[tuple[int, int, Callable[[], Any], asyncio.AbstractEventLoop, asyncio.Future[Any]]] = []
        self._arrival = itertools.count()
        self._wakeup = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False

    async def call(self, function: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        result: asyncio.Future[T] = loop.create_future()
        with self._wakeup:
            if self._closed:
                raise RuntimeError(f"{self.name} is closed")
            heapq.heappush(self._queue, (place(), next(self._arrival), lambda: function(*args), loop, result))
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name=self.name, daemon=True)
                self._thread.start()
            self._wakeup.notify()
        return await result

    def close(self) -> None:
        """Stop taking calls; the thread runs those already queued, then ends (not waited for)."""
        with self._wakeup:
            self._closed = True
            self._wakeup.notify()

    def _work(self) -> None:
        while True:
            with self._wakeup:
                while not self._queue and not self._closed:
                    self._wakeup.wait()
                if not self._queue:
                    return
                _, _, run, loop, result = heapq.heappop(self._queue)
            if result.cancelled():  # its caller went away while it queued (a benign racy read)
                continue
            try:
                value = run()
            except StopIteration:  # a future cannot hold it (asyncio refuses): the caller would hang
                _settle_soon(loop, result, None, RuntimeError(f"{self.name}: a call raised StopIteration"))
            except BaseException as exc:  # handed to the caller, as an executor does
                _settle_soon(loop, result, None, exc)
            else:
                _settle_soon(loop, result, value, None)


def _settle_soon(
    loop: asyncio.AbstractEventLoop, result: asyncio.Future[Any], value: Any, error: BaseException | None
) -> None:
    with contextlib.suppress(RuntimeError):  # the loop closed: nobody is waiting any more
        loop.call_soon_threadsafe(_settle, result, value, error)


def _settle(result: asyncio.Future[Any], value: Any, error: BaseException | None) -> None:
    if result.cancelled():
        return
    if error is not None:
        result.set_exception(error)
    else:
        result.set_result(value)
