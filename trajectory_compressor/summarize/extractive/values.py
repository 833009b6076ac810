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

from collections.abc import Sequence
from itertools import islice

from trajectory_compressor.summarize.anchor_index import INDEX_LABEL, index_line
from trajectory_compressor.summarize.extractive.render import Renderer
from trajectory_compressor.summarize.fidelity.score import Stated, occurs
from trajectory_compressor.summarize.ranked_anchors import RankedAnchors

# Chosen on the tune half of the shared real runs (`scripts/extractive_fidelity.py`): less
# starves item recall (files, errors), more starves the values the next turns use.
DIGEST_SHARE = 0.5
MIN_FILES = 40  # the digest's file list keeps this many at every detailed level (`Renderer`)
_MANY_VISITS = 512  # anchors tried before what the digest states is made a set (`Stated`)


class WithValues:
    """Renders a digest followed by an index of `anchors` (ranked) within a character target.

    The index takes anchors in rank order while they fit, then shorter ones further down: one
    walk down the ranks, an anchor too long for the room left passed over by its length alone,
    and the walk ends once the room is shorter than the shortest anchor."""

    def __init__(self, renderer: Renderer, anchors: Sequence[str]) -> None:
        self.renderer = renderer
        self.anchors: Sequence[str]
        if isinstance(anchors, RankedAnchors):  # put in order only as far as a walk reads
            self.anchors, size, self._shortest = anchors, anchors.size, anchors.shortest
        else:
            self.anchors = tuple(anchors)
            size, self._shortest = sum(map(len, self.anchors)), min(map(len, self.anchors), default=0)
        self._full_size = len(INDEX_LABEL) + size + len(self.anchors) if self.anchors else 0
        self._richest: str | None = None  # known once a `within` made it: the fitting loop asks for it
        self._richest_digest: str | None = None
        self._withins: dict[int, tuple[str, bool | None]] = {}

    def richest(self) -> str:
        if self._richest is None:
            self._richest = self._joined(self._the_richest_digest())
        return self._richest

    def richest_longer_than(self, max_chars: int) -> bool:
        """Whether `richest()` is known, without making it, to be longer than `max_chars`: its
        digest alone is (the values can only add to it)."""
        return self.renderer.richest_longer_than(max_chars)

    def richest_within(self, max_chars: int) -> str | None:
        """`richest()` if it is at most `max_chars` long, else None: the fitting loop's first
        question. Answered by `within` when it can (it renders the richest digest when that leaves
        the values their share): every value fitted beside it (that is the richest text), or one
        the digest does not state was left out for want of room (the richest text is longer).
        Only otherwise is the richest text made, walking every anchor of the region."""
        if self.richest_longer_than(max_chars):
            return None
        if self._richest is None and not self.richest_longer_than(self._digest_chars(max_chars)):
            _, verdict = self._within(max_chars)
            if verdict is False:
                return None
        richest = self.richest()
        return richest if len(richest) <= max_chars else None

    def within(self, max_chars: int) -> str:
        """The digest at the richest level that leaves the values their share of `max_chars`,
        then as many values as fit in the rest."""
        return self._within(max_chars)[0]

    def _digest_chars(self, max_chars: int) -> int:
        return max(int(max_chars * DIGEST_SHARE), max_chars - self._full_size - 1)

    def _within(self, max_chars: int) -> tuple[str, bool | None]:
        """`within(max_chars)`, and what it tells of `richest()`: True, it is this text; False, it
        is longer than `max_chars`; None, nothing. Remembered: the fitting loop asks `within` at
        the target it first asked `richest_within` at."""
        known = self._withins.get(max_chars)
        if known is None:
            known = self._withins[max_chars] = self._within_made(max_chars)
        return known

    def _within_made(self, max_chars: int) -> tuple[str, bool | None]:
        digest = self.renderer.within(self._digest_chars(max_chars))
        if len(digest) > max_chars:  # the one-liner, longer than a tiny target
            return digest, None
        chosen, proof, stop, states = self._chosen(digest, max_chars - len(digest) - 1)
        text = _with_index(digest, chosen)
        longer = self.renderer.richest_longer_than  # the richest digest's length first: it is known cheaply
        if not (longer(len(digest) - 1) and not longer(len(digest))) or digest != self._the_richest_digest():
            return text, None
        if not proof and stop is None:  # every anchor passed over is one the digest states
            if self._richest is None:  # every value the digest does not state fitted: the richest text
                self._richest = text  # the fitting loop compares its texts with it
            return text, True
        left_out = islice(self.anchors, stop, None) if stop is not None else ()
        return text, (False if proof or any(not states(anchor) for anchor in left_out) else None)

    def _the_richest_digest(self) -> str:
        if self._richest_digest is None:
            self._richest_digest = self.renderer.richest()
        return self._richest_digest

    def one_line(self, rich: bool = False) -> str:
        return self.renderer.one_line(rich)

    def _joined(self, digest: str) -> str:
        """`digest` and the index of every value it does not state, in rank order."""
        states = _DigestStates(digest)
        return _with_index(digest, [anchor for anchor in self.anchors if not states(anchor)])

    def _chosen(self, digest: str, max_chars: int) -> tuple[list[str], bool, int | None, _DigestStates]:
        """The anchors in rank order, each taken if it fits the room left and `digest` does not
        state it. Also: whether one the digest does not state was passed over for want of room
        (proof that the whole index is longer than `max_chars`); where the walk stopped, the
        room shorter than any anchor (None: at the end); and what it asked of the digest."""
        shortest = self._shortest
        chosen: list[str] = []
        room = max_chars - len(INDEX_LABEL) - 1  # an anchor fits when it is at most this long
        states = _DigestStates(digest)
        proof = False
        tried = 0
        for position, anchor in enumerate(self.anchors):  # a ranking is put in order as far as this reads
            length = len(anchor)
            if length > room:
                if room < shortest:
                    return chosen, proof, position, states
                proof = proof or not states(anchor)
                continue
            tried += 1  # `states`, inlined: this loop runs for every anchor an index takes
            if tried <= _MANY_VISITS:
                if anchor in digest and occurs(anchor, digest):
                    continue
            elif states.in_set(anchor):
                continue
            chosen.append(anchor)
            room -= length + 1
        return chosen, proof, None, states


class _DigestStates:
    """Whether a digest states an anchor: searched for each (`in` first: most anchors are nowhere
    in it, and it answers that in C). Only after many (`_MANY_VISITS`) is what the digest states
    made a set (`Stated`): a walk's room is used up by anchors taken, so most try a few hundred,
    and a set built for every walk over a long row's thousands of anchors cost twice the searches."""

    def __init__(self, digest: str) -> None:
        self.digest = digest
        self._asked = 0
        self._stated: Stated | None = None

    def __call__(self, anchor: str) -> bool:
        if self._stated is None:
            self._asked += 1
            if self._asked <= _MANY_VISITS:
                return anchor in self.digest and occurs(anchor, self.digest)
        return self.in_set(anchor)

    def in_set(self, anchor: str) -> bool:
        """The same answer from the set of what the digest states (made on first use)."""
        if self._stated is None:
            self._stated = Stated(self.digest)
        return anchor in self._stated


def _with_index(digest: str, chosen: list[str]) -> str:
    """`digest`, then the index line of `chosen` (none when empty)."""
    line = index_line(chosen)
    return f"{digest}\n{line}" if line else digest
