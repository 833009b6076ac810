"""An extractive summary that ends with the region's exact values: the digest, then the index.

The digest says what happened (requests, calls, files, errors, the last note); the turns after
the summary act on exact values (the ids a tool returned, the names and lines of the last edit,
what the assistant wrote down). So the character target is shared: the digest gets at least
`DIGEST_SHARE` of it (more when the region has few values), and the index line
(`anchor_index`) takes the rest, its anchors in `anchor_rank`'s order, leaving out those the
digest already states. Both grow with the target, so the summarizer's fitting loop fills the
budget as it did with the digest alone.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from trajectory_compressor.summarize.anchor_index import INDEX_LABEL, index_line
from trajectory_compressor.summarize.anchor_rank import RankedAnchors
from trajectory_compressor.summarize.extractive.render import Renderer
from trajectory_compressor.summarize.fidelity.score import Stated, occurs

# Chosen on the tune half of the shared real runs (`scripts/extractive_fidelity.py`): less
# starves item recall (files, errors), more starves the values the next turns use.
DIGEST_SHARE = 0.5
MIN_FILES = 40  # the digest's file list keeps this many at every detailed level (`Renderer`)
_MANY_VISITS = 512  # anchors tried before what the digest states is made a set (`Stated`)
_LONGEST_LOOKED_UP = 256


class WithValues:
    """Renders a digest followed by an index of `anchors` (ranked) within a character target.

    The index takes anchors in rank order while they fit, then shorter ones further down: the
    walk visits, in rank order, only anchors short enough for the room left (`_by_length`), so it
    costs what the index holds, not the region's thousands of anchors."""

    def __init__(self, renderer: Renderer, anchors: Sequence[str]) -> None:
        self.renderer = renderer
        self.anchors = anchors if isinstance(anchors, RankedAnchors) else tuple(anchors)
        size = anchors.size if isinstance(anchors, RankedAnchors) else sum(map(len, self.anchors))
        self._full_size = len(INDEX_LABEL) + size + len(self.anchors) if self.anchors else 0
        self._by_length: dict[int, list[int]] | None = None
        self._richest: str | None = None  # known once a `within` made it: the fitting loop asks for it

    def richest(self) -> str:
        if self._richest is None:
            self._richest = self._joined(self.renderer.richest())
        return self._richest

    def richest_floor(self) -> int:
        """A length `richest()` is never shorter than (its digest's), known without making it."""
        return self.renderer.richest_floor()

    def within(self, max_chars: int) -> str:
        """The digest at the richest level that leaves the values their share of `max_chars`,
        then as many values as fit in the rest."""
        digest_chars = max(int(max_chars * DIGEST_SHARE), max_chars - self._full_size - 1)
        digest = self.renderer.within(digest_chars)
        if len(digest) > max_chars:  # the one-liner, longer than a tiny target
            return digest
        chosen, every_one = self._chosen(digest, max_chars - len(digest) - 1)
        text = _with_index(digest, chosen)
        # Every value the digest does not state fitted: with the richest digest, this is `richest()`,
        # which the fitting loop compares its texts with (making it again walks every anchor).
        richest_digest = every_one and len(digest) == self.richest_floor() and digest == self.renderer.richest()
        if richest_digest and self._richest is None:
            self._richest = text
        return text

    def one_line(self, rich: bool = False) -> str:
        return self.renderer.one_line(rich)

    def _joined(self, digest: str) -> str:
        """`digest` and the index of every value it does not state, in rank order."""
        # `in` first: most anchors are nowhere in the digest, and it answers that in C. Past the
        # first `_MANY_VISITS`, what the digest states is made a set (`Stated`) for the rest.
        anchors = self.anchors
        chosen = [anchor for anchor in anchors[:_MANY_VISITS] if anchor not in digest or not occurs(anchor, digest)]
        if len(anchors) > _MANY_VISITS:
            stated = Stated(digest, _LONGEST_LOOKED_UP)
            chosen += [anchor for anchor in anchors[_MANY_VISITS:] if anchor not in stated]
        return _with_index(digest, chosen)

    def _chosen(self, digest: str, max_chars: int) -> tuple[list[str], bool]:
        """The anchors in rank order, each taken if it fits the room left and `digest` does not
        state it, and whether every one it does not state was taken. Only anchors short enough
        for the room are visited: one list of rank positions per length, merged on a heap, a
        length dropped for good once it no longer fits (the room only shrinks)."""
        if self._by_length is None:
            if isinstance(self.anchors, RankedAnchors):
                self._by_length = self.anchors.by_length()
            else:
                self._by_length = {}
                for position, anchor in enumerate(self.anchors):
                    self._by_length.setdefault(len(anchor), []).append(position)
        by_length = self._by_length
        chosen: list[str] = []
        # Each anchor tried is searched for in the digest (`in` first: most are nowhere in it, and
        # it answers that in C). Only a walk that tries many (the room is only used up by anchors
        # taken, so most walks try a few hundred) makes what the digest states a set (`Stated`):
        # built for every walk over a long row's thousands of anchors, it cost twice the searches.
        stated: Stated | None = None
        tried = 0
        room = max_chars - len(INDEX_LABEL) - 1  # an anchor fits when it is at most this long
        heap = [(positions[0], length, 0) for length, positions in by_length.items() if length <= room]
        every_one = len(heap) == len(by_length)  # no length left out for want of room
        heapq.heapify(heap)
        while heap:
            position, length, at = heapq.heappop(heap)
            if length > room:
                every_one = False
                continue
            positions = by_length[length]
            if at + 1 < len(positions):
                heapq.heappush(heap, (positions[at + 1], length, at + 1))
            anchor = self.anchors[position]
            tried += 1
            if stated is None and tried > _MANY_VISITS:
                stated = Stated(digest, _LONGEST_LOOKED_UP)
            if anchor in stated if stated is not None else (anchor in digest and occurs(anchor, digest)):
                continue
            chosen.append(anchor)
            room -= length + 1
        return chosen, every_one


def _with_index(digest: str, chosen: list[str]) -> str:
    """`digest`, then the index line of `chosen` (none when empty)."""
    line = index_line(chosen)
    return f"{digest}\n{line}" if line else digest
