"""A region's anchors in rank order, put in order only as far as a reader reads.

An index takes a hundred or so anchors of a long row's thousands: the summarizer walks down the
ranks until its room is used up. Sorting every anchor for every window of a long row made each
window cost more as the region grew; here the first part of the order (`FIRST_PART` anchors, and
any tied with the last of them) is picked out by selection, in linear time, and sorted, and the
whole order is made only for a reader that goes past it. The order read is the whole sort's,
whatever is read: see `_first_part`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import overload

import numpy as np

FIRST_PART = 512  # anchors put in order at first: walks on long rows read ~150 (measured)


class RankedAnchors(Sequence[str]):
    """The anchors `names` in the order `np.lexsort(keys)` sorts them, the last key first.

    `keys` are (first appearance, minus the score, not plain): unique first appearances, so no
    two anchors tie on every key. `size` is the characters of all the anchors, `shortest` the
    length of the shortest (a walk's stop: no anchor fits a room shorter than it)."""

    def __init__(
        self, names: list[str], keys: tuple[np.ndarray, np.ndarray, np.ndarray], size: int, shortest: int
    ) -> None:
        self._names = names
        self._keys = keys
        self._count = len(keys[0])
        self.size = size
        self.shortest = shortest
        self._ranked: list[str] = []  # the first anchors in order, as many as made so far
        self._whole = self._count == 0

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...
    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        if isinstance(index, slice):
            return tuple(self._through(self._count)[index])
        if index < 0:
            index += self._count
        if not 0 <= index < self._count:
            raise IndexError(index)
        return self._through(index + 1)[index]

    def __iter__(self) -> Iterator[str]:
        ranked = self._through(FIRST_PART)
        yield from ranked
        if len(ranked) < self._count:
            yield from self._through(self._count)[len(ranked) :]

    def _through(self, count: int) -> list[str]:
        """The ranked anchors, at least the first `count` of them (all of them, when fewer)."""
        if len(self._ranked) < count and not self._whole:
            if 2 * count >= self._count:
                order = np.lexsort(self._keys)
                self._whole = True
            else:
                order = _first_part(self._keys, count)
            self._ranked = list(map(self._names.__getitem__, order.tolist()))
        return self._ranked


def _first_part(keys: tuple[np.ndarray, np.ndarray, np.ndarray], count: int) -> np.ndarray:
    """The positions `np.lexsort(keys)[:n]` for some n >= `count` (0 < `count` < all).

    The two primary keys (not plain, minus the score) pick the first `count`: every plain anchor
    before the others, and within a group the highest scores, found by partition. Every anchor
    tied with the last one picked on those keys is picked too, so each anchor left out sorts after
    every one picked; the picked ones, in position order (each group's are, and the groups differ
    on the first key), sort as in the whole sort."""
    _, minus_score, not_plain = keys
    plain = np.flatnonzero(~not_plain)
    if len(plain) >= count:
        picked, pool, wanted = plain[:0], plain, count
    else:
        picked, pool, wanted = plain, np.flatnonzero(not_plain), count - len(plain)
    scores = minus_score[pool]
    bound = np.partition(scores, wanted - 1)[wanted - 1]
    chosen = np.concatenate((picked, pool[scores <= bound]))
    return chosen[np.lexsort(tuple(key[chosen] for key in keys))]
