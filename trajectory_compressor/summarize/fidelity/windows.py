"""The fidelity of a row's context-window summaries, each turn of the row read once.

Window k's summary stands for the turns between the head and its cut, which only grows from one
window to the next; its item fidelity is judged against all of them, and its future-grounded
fidelity by what the window's own turns use of them. Scored window by window from scratch, a
row of W windows reads its turns W times; here the region's salient items and anchors grow with
the cut (`GrowingItems`, the introduced anchors), each turn's anchors are read once, and a
window reads only its own turns. The scores are those of `score_summary` and
`hidden_future_fidelity` on the same turns.
"""

from __future__ import annotations

from collections.abc import Container, Sequence

from trajectory_compressor.summarize.fidelity.anchor_tokens import anchors_in
from trajectory_compressor.summarize.fidelity.anchors import FutureFidelity, score_future
from trajectory_compressor.summarize.fidelity.path_names import PathNames
from trajectory_compressor.summarize.fidelity.salient import KINDS, GrowingItems, SalientItems
from trajectory_compressor.summarize.fidelity.score import (
    Fidelity,
    Occurs,
    RowText,
    Stated,
    score_items,
    stated,
    unsupported_items,
)
from trajectory_compressor.summarize.fidelity.score import row_text as make_row_text
from trajectory_compressor.summarize.huge_turns import elide_huge, elide_huge_turns
from trajectory_compressor.summarize.masking import RowCredentials
from trajectory_compressor.types import Turn


class WindowFidelity:
    """Scores the summaries of one row's windows, in order of their cuts."""

    def __init__(self, turns: Sequence[Turn], head: int) -> None:
        self._turns = turns
        self._head = head
        self.corpus = make_row_text(turns)  # the whole row, for unsupported items: made once
        self._items = GrowingItems()
        self._tails = PathNames()  # of the items' paths, grown with them
        self._sorted = _Sorted()
        self._items_end = head
        self._anchors: dict[int, dict[str, None]] = {}
        self._seen_in_head: set[str] = set()
        for index in range(head):
            self._seen_in_head.update(self._anchors_of(index))
        self._introduced: dict[str, int] = {}  # each anchor the region holds, and the first turn holding it
        self._introduced_end = head
        self._credentials: RowCredentials | None = None  # made when needed: most windows need no anchor

    def score(self, cut: int, summary: str) -> Fidelity:
        """`score_summary(turns[head:cut], summary, turns)`."""
        if cut < self._items_end:  # a cut before the last one (not seen in practice): read again
            self._items, self._tails, self._items_end = GrowingItems(), PathNames(), self._head
            self._sorted = _Sorted()
        start, self._items_end = self._items_end, cut
        self._items.extend(self._turns[start:cut])
        if cut > start:  # the items new in this summary come from the turns it now covers: looked for there first
            self.corpus.look_first_in(start, cut)
        items = self._items.items()
        self._tails.extend(items.paths[len(self._tails) :])  # the items only grow at their end
        self._sorted.extend(items)
        if items.total <= _MANY_ITEMS:
            return score_items(items, summary, self.corpus, self._tails)
        return _counted(items, self._sorted, summary, self.corpus, self._tails)

    def future(self, cut: int, end: int, cleared: Container[int], context: str) -> FutureFidelity:
        """`hidden_future_fidelity(turns[:end], range(head, cut) + cleared, context)`, where the
        `cleared` results all lie in [cut, end)."""
        return score_future(self.needed(cut, end, cleared), context)

    def needed(self, cut: int, end: int, cleared: Container[int]) -> tuple[str, ...]:
        """The anchors the window's kept turns [cut, end) need from the region [head, cut) and
        from its `cleared` results, in order of first use (`hidden_needed_anchors`' rule)."""
        if cut < self._introduced_end:  # a cut before the last one (not seen in practice): read again
            self._introduced, self._introduced_end = {}, self._head
        for index in range(self._introduced_end, cut):
            for anchor in self._anchors_of(index):
                self._introduced.setdefault(anchor, index)
        self._introduced_end = cut
        introduced = self._introduced
        cleared_anchors: dict[str, int] = {}
        visible: set[str] = set()
        needed: dict[str, tuple[int, int]] = {}  # each needed anchor: the turn introducing it, the first using it
        for index in range(cut, end):
            anchors = self._anchors_of(index)
            if index in cleared:
                cleared_anchors.update((anchor, index) for anchor in anchors if anchor not in cleared_anchors)
                continue
            if self._turns[index].role in ("human", "gpt") and (introduced or cleared_anchors):
                needed.update(
                    (anchor, (introduced.get(anchor, cleared_anchors.get(anchor, index)), index))
                    for anchor in anchors
                    if (anchor in introduced or anchor in cleared_anchors)
                    and anchor not in self._seen_in_head
                    and anchor not in visible
                    and anchor not in needed
                )
            visible.update(anchors)
        return tuple(anchor for anchor, (source, use) in needed.items() if not self._credential(anchor, source, use))

    def _credential(self, anchor: str, source: int, use: int) -> bool:
        """Whether a needed anchor is a credential in the row (`hidden_needed_anchors`' rule)."""
        if self._credentials is None:  # a huge turn read as its readers read it
            self._credentials = RowCredentials(elide_huge_turns(self._turns))
        return self._credentials.shows(anchor, source, use)

    def _anchors_of(self, index: int) -> dict[str, None]:
        found = self._anchors.get(index)
        if found is None:
            found = self._anchors[index] = anchors_in(elide_huge(_value(self._turns[index])))
        return found


# Past this many items a window is scored from its summary's side (`_counted`): the summary's
# substrings are made once (its words' remembered), where each item searched costs as the region
# grows. Measured on one row of 2,000 groups: 0.8 ms a window either way at 64 items, while
# searching each rose to 1.5 ms a window at 500 items.
_MANY_ITEMS = 64


class _Sorted:
    """The region's paths and identifiers sorted once each: those a `Stated` set answers (no
    whitespace, at most `LONGEST_LOOKED_UP` long), and the few it does not."""

    def __init__(self) -> None:
        self.paths: set[str] = set()
        self.other_paths: list[str] = []
        self.identifiers: set[str] = set()
        self.other_identifiers: list[str] = []
        self._seen = (0, 0)

    def extend(self, items: SalientItems) -> None:
        paths, identifiers = self._seen
        probe = Stated("")
        for path in items.paths[paths:]:
            if probe.looks_up(path):
                self.paths.add(path)
            else:
                self.other_paths.append(path)
        for item in items.identifiers[identifiers:]:
            if probe.looks_up(item):
                self.identifiers.add(item)
            else:
                self.other_identifiers.append(item)
        self._seen = (len(items.paths), len(items.identifiers))


def _counted(items: SalientItems, sorted_: _Sorted, summary: str, corpus: RowText, tails: PathNames) -> Fidelity:
    """`score_items` without the missed items (the metrics do not show them), counting what the
    summary states from its side: paths and identifiers are looked up among the summary's
    substrings (`Stated`), so a window costs what its summary holds, not the thousands of items
    of a long row's region (tools and errors, a few, one by one as `score_items` does)."""
    text = " ".join(summary.split())
    lowered = text.casefold()
    said = Stated(text)
    substrings = said.substrings
    total = {kind: len(items.of(kind)) for kind in KINDS}
    in_text, in_lowered = Occurs(text), Occurs(lowered)
    found = {
        kind: sum(
            stated(kind, item, in_lowered if kind == "tools" else in_text, tails, in_lowered) for item in items.of(kind)
        )
        for kind in ("tools", "errors")
    }
    found["identifiers"] = len(sorted_.identifiers & substrings) + sum(
        item in said for item in sorted_.other_identifiers
    )
    stated_paths = sorted_.paths & substrings
    stated_paths.update(path for tail in tails.tails() & substrings for path in tails.owner(tail))
    for path in sorted_.other_paths:  # what the set cannot answer (a space, or too long), as `score_items` asks
        if path in said or any(tail in said for tail in tails.unique(path)):
            stated_paths.add(path)
    found["paths"] = len(stated_paths)
    return Fidelity(total, found, {}, unsupported_items(text, corpus))


def _value(turn: Turn) -> str:
    return turn.value if isinstance(turn.value, str) else str(turn.value)
