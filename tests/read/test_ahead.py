"""Reading one item ahead on a thread: every item once, in order, never more than one ahead."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from trajectory_compressor.read.ahead import ReadAhead


class Source:
    """Items 0..n-1, noting how far they were read and whether the source was closed."""

    def __init__(self, n: int, *, fail_at: int | None = None) -> None:
        self.n, self.fail_at = n, fail_at
        self.made = 0
        self.closed = threading.Event()
        self.made_event = threading.Event()

    def __iter__(self) -> Iterator[int]:
        try:
            for index in range(self.n):
                if index == self.fail_at:
                    raise OSError(f"cannot read item {index}")
                self.made = index + 1
                self.made_event.set()
                yield index
        finally:
            self.closed.set()


def test_every_item_comes_once_and_in_order() -> None:
    source = Source(200)
    assert list(ReadAhead(iter(source))) == list(range(200))
    assert source.closed.wait(5)


def test_at_most_one_item_is_read_ahead_of_the_caller() -> None:
    source = Source(10)
    ahead = ReadAhead(iter(source))
    for expected in range(10):
        assert next(ahead) == expected
        source.made_event.clear()
        source.made_event.wait(0.2)  # let the thread read what it may
        assert source.made <= expected + 2, "the item taken, and at most one more"
    assert list(ahead) == []


def test_an_error_is_raised_at_the_item_where_it_happened_and_once() -> None:
    ahead = ReadAhead(iter(Source(5, fail_at=3)))
    assert [next(ahead) for _ in range(3)] == [0, 1, 2]
    with pytest.raises(OSError, match="cannot read item 3"):
        next(ahead)
    assert list(ahead) == []


def test_close_stops_the_thread_and_closes_the_source() -> None:
    source = Source(1000)
    ahead = ReadAhead(iter(source), name="test-read-ahead")
    assert next(ahead) == 0
    ahead.close()
    assert source.closed.is_set() and source.made <= 2
    assert not any(thread.name == "test-read-ahead" for thread in threading.enumerate())
    assert list(ahead) == []
