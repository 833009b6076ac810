"""Reading one item ahead on a thread: the next chunk is parsed while this one is counted.

Counting releases the GIL (the Rust backends work on their own), parsing JSON holds it: run
on two threads, the two overlap, and the steady state of a run is the slower of the two
instead of their sum. At most one item is ever ahead (it is read only once the caller took
the one before), so memory grows by one chunk, whatever the input. What the iterator raises
is raised to the caller, at the item where it happened; `close` stops the thread and closes
the iterator on it (a generator is closed on the thread that runs it).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Generic, Literal, TypeVar

T = TypeVar("T")

_ITEM: Literal["item"] = "item"
_END: Literal["end"] = "end"
_ERROR: Literal["error"] = "error"
# What the reading thread hands over: an item, the error the iterator raised, or its end.
_Entry = tuple[Literal["item"], T] | tuple[Literal["error"], BaseException] | tuple[Literal["end"], None]


class ReadAhead(Generic[T]):
    """The items of `items`, each made on a background thread while the caller has the one before."""

    def __init__(self, items: Iterator[T], *, name: str = "tc-read-ahead") -> None:
        self._items = items
        self._ready = threading.Condition()
        self._slot: _Entry[T] | None = None  # the item made and not yet taken (or the end)
        self._stopped = False
        self._thread = threading.Thread(target=self._produce, name=name, daemon=True)
        self._thread.start()

    def __iter__(self) -> ReadAhead[T]:
        return self

    def __next__(self) -> T:
        with self._ready:
            while self._slot is None and not self._stopped:
                self._ready.wait()
            if self._slot is None:  # closed
                raise StopIteration
            entry = self._slot
            if entry[0] != _END:
                self._slot = None if entry[0] == _ITEM else (_END, None)  # an error is raised once
                self._ready.notify_all()
        if entry[0] == _ITEM:
            return entry[1]
        if entry[0] == _ERROR:
            raise entry[1]
        raise StopIteration

    def close(self, timeout: float = 10.0) -> None:
        """Stop reading ahead; waits up to `timeout` for an item being read to be done."""
        with self._ready:
            self._stopped = True
            self._ready.notify_all()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def __enter__(self) -> ReadAhead[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _produce(self) -> None:
        final: _Entry[T] = (_END, None)
        try:
            for item in self._items:
                if not self._hand_over((_ITEM, item)):
                    return
                with self._ready:  # the next item is read only once this one is taken
                    while self._slot is not None and not self._stopped:
                        self._ready.wait()
                    if self._stopped:
                        return
        except BaseException as exc:  # handed to the caller, raised there
            final = (_ERROR, exc)
        finally:
            close = getattr(self._items, "close", None)
            if close is not None:
                close()
        self._hand_over(final)

    def _hand_over(self, entry: _Entry[T]) -> bool:
        """Put `entry` in the slot once it is free; False when the reader was stopped."""
        with self._ready:
            while self._slot is not None and not self._stopped:
                self._ready.wait()
            if self._stopped:
                return False
            self._slot = entry
            self._ready.notify_all()
            return True
