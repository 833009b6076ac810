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

from trajectory_compressor.summarize.anchor_index import index_line
from trajectory_compressor.summarize.extractive.render import Renderer
from trajectory_compressor.summarize.fidelity.score import occurs

# Chosen on the tune half of the shared real runs (`scripts/extractive_fidelity.py`): less
# starves item recall (files, errors), more starves the values the next turns use.
DIGEST_SHARE = 0.5
MIN_FILES = 40  # the digest's file list keeps this many at every detailed level (`Renderer`)


class WithValues:
    """Renders a digest followed by an index of `anchors` (ranked) within a character target."""

    def __init__(self, renderer: Renderer, anchors: Sequence[str]) -> None:
        self.renderer = renderer
        self.anchors = tuple(anchors)
        self._full = index_line(self.anchors)

    def richest(self) -> str:
        return self._joined(self.renderer.richest(), None)

    def within(self, max_chars: int) -> str:
        """The digest at the richest level that leaves the values their share of `max_chars`,
        then as many values as fit in the rest."""
        digest_chars = max(int(max_chars * DIGEST_SHARE), max_chars - len(self._full) - 1)
        digest = self.renderer.within(digest_chars)
        if len(digest) > max_chars:  # the one-liner, longer than a tiny target
            return digest
        return self._joined(digest, max_chars - len(digest) - 1)

    def one_line(self, rich: bool = False) -> str:
        return self.renderer.one_line(rich)

    def _joined(self, digest: str, max_chars: int | None) -> str:
        """`digest` and the index of the values it does not state, at most `max_chars` long."""
        chosen: list[str] = []
        used = len(index_line(["x"])) - 2  # the label and its space
        for anchor in self.anchors:
            if max_chars is not None and used + len(anchor) + 1 > max_chars:
                continue  # a shorter one further down may still fit
            if occurs(anchor, digest):
                continue
            chosen.append(anchor)
            used += len(anchor) + 1
        line = index_line(chosen)
        return f"{digest}\n{line}" if line else digest
