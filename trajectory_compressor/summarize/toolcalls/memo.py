"""A pure function of one text, remembered for the texts read last.

The summary, its item fidelity and its future-grounded fidelity each read a summarized region's
turns: the digest, the anchor ranking and the salient items all parse the same tool-call and
tool-result blocks and judge the same results. Remembering the answer for the last few hundred
texts makes each of those reads one, without tying the three readers together. Only texts up to
`max_chars` are kept (a huge result is not held in memory for a lookup that saves little), and
the store is emptied when full, as the other caches of the pure readers are.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class TextMemo(Generic[T]):
    """`function(text)`, remembered for up to `entries` texts of at most `max_chars` characters
    (and, when `max_total_chars` is set, of at most that many in all), and only the results
    `keeps` accepts when it is given (a rare huge result made each time, not held).

    `function` must be pure and its result never changed by a caller (return a tuple or a frozen
    record, and copy it out where a caller expects a list)."""

    def __init__(
        self,
        function: Callable[[str], T],
        *,
        entries: int = 512,
        max_chars: int = 1 << 18,
        max_total_chars: int | None = None,
        keeps: Callable[[T], bool] | None = None,
    ) -> None:
        self._function = function
        self._entries = entries
        self._max_chars = max_chars
        self._max_total_chars = max_total_chars
        self._keeps = keeps
        self._chars = 0
        self._known: dict[str, T] = {}

    def __call__(self, text: str) -> T:
        known = self._known.get(text)
        if known is not None:
            return known
        result = self._function(text)
        if len(text) <= self._max_chars and (self._keeps is None or self._keeps(result)):
            self._chars += len(text)
            full = self._max_total_chars is not None and self._chars > self._max_total_chars
            if full or len(self._known) >= self._entries:
                self._known.clear()
                self._chars = len(text)
            self._known[text] = result
        return result
