"""Which of a region's anchors its summary should keep, ranked without seeing what comes after.

The turns after a summary act on exact strings the replaced turns showed: the reservation id a
tool returned, the path and the line of the last edit, the name the assistant wrote down (see
`fidelity.anchors`, which judges a summary by them). An agent's compressor cannot know which
ones the next turns will use, and neither does this ranking: it reads only the region and what
came before it (the task), so a region's ranking is the same whatever follows it.

Each anchor of the region (`fidelity.anchor_tokens.anchors_in`, read from the parsed pieces of each
turn: a user's words, an assistant's words, its calls' names and arguments, tool results) is
scored by what, on real agent runs, predicts reuse:

* **recency**: the later its last appearance, the likelier the next turns still need it (a
  half-life of `HALF_LIFE_TURNS` turns);
* **reuse inside the region**: an anchor seen in many turns is what the work revolves around;
* **who wrote it**: values the assistant itself wrote down (in its words or in a call's
  arguments: the command it ran, the content of its last edit) and values the user gave rank
  above values only a tool printed;
* **repeated boilerplate last**: an anchor that only ever appears in lines repeated verbatim
  across tool results (a harness's warning, a deprecation notice, a site-packages path) is kept
  only when everything else fits.

Anchors the task already shows stay visible after the summary and are left out. Each piece is
redacted before its anchors are read (`--redact-secrets`), so no credential redaction finds, in
any encoding it reads, can become an anchor; opaque blobs (base64, random tokens: letters and
digits that switch case every character or two) are left out too, as a second line: they name
nothing a later turn types, and one may be a credential in an encoding redaction cannot see.

The weights were chosen on half of the shared real runs and checked on the other half
(`scripts/extractive_fidelity.py`). Pure and deterministic.

`AnchorRanking` holds a region's anchors as it grows (`extend` with the turns after it), so the
context windows of a long row read each turn once, not once per window: what an anchor's rank
depends on (where it first appeared, in which turns, from which sources, whether only in
boilerplate lines) is kept per anchor and updated with the new turns; only the lines of earlier
results that the new turns make boilerplate are read again. `ranked_anchors` is the whole region
at once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from trajectory_compressor.summarize.anchor_traits import OPAQUE_CHARS, kind_weights, opaque
from trajectory_compressor.summarize.fidelity.anchor_tokens import anchor_kind, anchors_in
from trajectory_compressor.summarize.masking import masked_arguments, unchanged
from trajectory_compressor.summarize.ranked_anchors import RankedAnchors
from trajectory_compressor.summarize.repeated_lines import RepeatedLines
from trajectory_compressor.summarize.toolcalls import parse_tool_calls, parse_tool_responses, said_in
from trajectory_compressor.types import Turn

HALF_LIFE_TURNS = 16
RECENCY_WEIGHT = 3.0
REUSE_WEIGHT = 1.5
# By where an anchor was seen (once is enough): the assistant's words and calls, the user's words,
# and an earlier summary (what an earlier compaction already chose to keep).
SOURCE_WEIGHTS = {"said": 1.0, "call": 1.5, "user": 1.0, "result": -0.5, "earlier": 1.5}
BOILERPLATE_TURNS = 3  # a result line repeated verbatim in this many tool results is boilerplate
_SCAN_CHARS = 200_000  # of one piece: a huge dump's anchors beyond this say little

_SOURCES = tuple(SOURCE_WEIGHTS)
_BIT = {source: 1 << index for index, source in enumerate(_SOURCES)}
# The sum of the weights of each set of sources, as `sum` adds them (halves: exact in any order).
_SOURCE_SUMS = [sum(SOURCE_WEIGHTS[s] for s in _SOURCES if mask & _BIT[s]) for mask in range(1 << len(_SOURCES))]
_EARLIER = -1  # the piece number of an earlier summary's anchors: before every piece of the region


@dataclass
class _Result:
    """A tool result of the region: its anchors inside and outside boilerplate lines."""

    number: int
    text: str
    plain: dict[str, None]  # anchors of its lines that are not boilerplate, in order
    repeated: dict[str, None]  # anchors of its boilerplate lines, in order


class AnchorRanking:
    """The anchors of a growing region, ranked without seeing what comes after it.

    `known` is text the context after the summary still shows (the task): its anchors are left
    out. `earlier` holds the anchors an earlier summary of the turns before the region kept (its
    index): they join the ranking as the oldest turn, so an index stays cumulative, each anchor
    once, the still-used ones first.

    What each anchor's rank is made of is kept in one list per figure (an anchor is its index),
    so that ranking sorts arrays (`ranking`): a window of a long row ranks thousands of anchors.
    """

    def __init__(
        self, *, known: str = "", earlier: Sequence[str] = (), redact: Callable[[str], str] = unchanged
    ) -> None:
        self.known = known
        self.earlier = tuple(earlier)
        self._redact = redact
        self._left_out = set(anchors_in(redact(known))) if known else set()
        self._ids: dict[str, int] = {}
        self._names: list[str] = []
        self._first: list[int] = []  # (piece, part, order in the part) of its first appearance, as one number
        self._count: list[int] = []  # turns that hold it
        self._last: list[int] = []  # the last of them
        self._sources: list[int] = []  # bit mask of `_SOURCES`
        self._plain: list[int] = []  # pieces (their parts outside boilerplate) that hold it; an earlier summary counts
        self._kind: list[float] = []  # its kind's weight
        self._touched: set[int] = set()  # anchors whose figures changed since the arrays were made
        self._arrays = _Arrays()
        self._size = 0  # the anchors' characters
        self._shortest: float = math.inf  # the shortest anchor's length
        self._turns = 0
        self._pieces = 0
        self._results: dict[int, _Result] = {}  # by piece number
        self._lines = RepeatedLines(BOILERPLATE_TURNS)  # the results' lines, and which are boilerplate
        self._telling: set[str] = set()  # the boilerplate lines that hold an anchor
        kept: dict[str, int] = {}  # an earlier anchor -> its order there
        for order, anchor in enumerate(self.earlier):
            if anchor in self._left_out or anchor in kept or anchor_kind(anchor) is None or opaque(anchor):
                continue
            kept[anchor] = order
        firsts = (_first(_EARLIER, 0, order) for order in kept.values())
        self._append_new(list(kept), firsts, count=0, last=-1, sources=_BIT["earlier"], plain=1)

    @property
    def turns(self) -> int:
        """Turns of the region so far."""
        return self._turns

    def extend(self, turns: Iterable[Turn]) -> AnchorRanking:
        """The region with `turns` after it. A line the new results repeat for the third time
        becomes boilerplate in every result, so the earlier results holding it are read again."""
        added = list(turns)
        pieces = [
            (self._turns + offset, source, text)
            for offset, turn in enumerate(added)
            for source, text in _pieces_of(turn, self._redact)
        ]
        self._turns += len(added)
        base = self._pieces
        self._pieces += len(pieces)
        lines_of: dict[int, tuple[list[str], set[str]]] = {}
        new_boilerplate: set[str] = set()
        for index, (_, source, text) in enumerate(pieces):
            if source != "result":
                continue
            lines = text.split("\n")
            stripped = set(map(str.strip, lines))
            stripped.discard("")
            lines_of[index] = (lines, stripped)
            new_boilerplate |= self._lines.add(base + index, stripped)
        # A line with no anchor changes no result's anchors as it becomes boilerplate (the
        # anchors of lines joined are those of each line: no token spans a newline), so only the
        # lines with anchors split a result (`_parts`), and only their holders are read again.
        telling = {line for line in new_boilerplate if anchors_in(line)}
        self._telling |= telling
        if new_boilerplate and base == 0:  # the region's first turns: no earlier result to read again
            self._lines.settle(new_boilerplate)
        elif new_boilerplate:
            self._lines.settle(new_boilerplate - telling)
            again = [number for number in self._lines.settle(telling) if number < base]
            for number in sorted(again):
                self._reread(self._results[number])
        for index, (position, source, text) in enumerate(pieces):
            number = base + index
            if source == "result":
                lines, stripped = lines_of[index]
                plain, repeated = self._parts(text, lines, stripped)
                self._results[number] = _Result(number, text, plain, repeated)
            else:
                plain, repeated = anchors_in(text), {}
            self._add(number, position, _BIT[source], plain, 0)
            if repeated:
                self._add(number, position, _BIT[source], repeated, 1)
        return self

    def _add(self, number: int, position: int, bit: int, found: dict[str, None], part: int) -> None:
        """Part `part` (0: outside boilerplate lines) of piece `number` of turn `position` holds `found`.

        Most anchors of a region are new where they are read: the anchors new in this piece are
        collected, then their figures (this piece's) appended to each list at once."""
        ids, left_out, touched = self._ids, self._left_out, self._touched
        count, last, sources, plain = self._count, self._last, self._sources, self._plain
        new: list[str] = []
        orders: list[int] = []
        for order, anchor in enumerate(found):
            index = ids.get(anchor)
            if index is None:
                if anchor in left_out:
                    continue
                if len(anchor) >= OPAQUE_CHARS and opaque(anchor):
                    left_out.add(anchor)  # judged once
                    continue
                new.append(anchor)
                orders.append(order)
                continue
            if last[index] != position:
                count[index] += 1
                last[index] = position
                touched.add(index)
            sources[index] |= bit
            if part == 0:
                plain[index] += 1
        firsts = map(((number + 1) << _PIECE_SHIFT | part << 32).__or__, orders)
        self._append_new(new, firsts, count=1, last=position, sources=bit, plain=1 if part == 0 else 0)

    def _append_new(
        self, anchors: list[str], firsts: Iterable[int], *, count: int, last: int, sources: int, plain: int
    ) -> None:
        """New anchors, each with its first appearance (`firsts`) and the same other figures,
        appended to each list at once. The arrays take new anchors whole (`_Arrays.sync`), so they
        are not marked touched."""
        if not anchors:
            return
        size, added = len(self._names), len(anchors)
        self._ids.update(zip(anchors, range(size, size + added), strict=True))
        self._names += anchors
        self._first += firsts
        self._count += [count] * added
        self._last += [last] * added
        self._sources += [sources] * added
        self._plain += [plain] * added
        self._kind += map(kind_weights.__getitem__, anchors)
        lengths = list(map(len, anchors))
        self._size += sum(lengths)
        self._shortest = min(self._shortest, min(lengths))

    def _parts(self, text: str, lines: list[str], stripped: set[str]) -> tuple[dict[str, None], dict[str, None]]:
        """The anchors of a result outside and inside boilerplate lines (one scan of the text
        when none of its boilerplate lines holds an anchor: a line without one adds none to
        either part)."""
        telling = self._telling
        if telling.isdisjoint(stripped):  # its boilerplate lines (if any) hold no anchor
            return anchors_in(text), {}
        plain: list[str] = []
        repeated: list[str] = []
        for line in lines:
            (repeated if line.strip() in telling else plain).append(line)
        return anchors_in("\n".join(plain)), anchors_in("\n".join(repeated))

    def _reread(self, result: _Result) -> None:
        """A result some of whose lines just became boilerplate: its anchors split again. Fewer are
        outside boilerplate now, and those first seen in it may have moved to its repeated part."""
        lines = result.text.split("\n")
        stripped = set(map(str.strip, lines))
        plain, repeated = self._parts(result.text, lines, stripped)
        ids = self._ids
        for anchor in result.plain:
            if anchor not in plain and (index := ids.get(anchor)) is not None:
                self._plain[index] -= 1
                self._touched.add(index)
        # An anchor first seen in this result is first seen where it now is: in its plain part
        # if it is there too. Only those (a few) are touched.
        first_of, piece = self._first, result.number + 1
        for part, found in enumerate((plain, repeated)):
            for order, anchor in enumerate(found):
                index = ids.get(anchor)
                if index is None or first_of[index] >> _PIECE_SHIFT != piece or (part and anchor in plain):
                    continue
                first_of[index] = _first(result.number, part, order)
                self._touched.add(index)
        result.plain, result.repeated = plain, repeated

    def ranking(self) -> RankedAnchors:
        """The anchors, most likely needed first (sorted as arrays: `_score`'s sums, in its order)."""
        if not self._names:
            empty = np.zeros(0, dtype=np.int64)
            return RankedAnchors([], (empty, empty, empty), 0, 0)
        arrays = self._arrays
        arrays.sync(self, self._touched)  # only what changed since the last ranking is copied
        self._touched = set()
        ages = self._turns - 1 - arrays.last
        score = _recency(int(ages.max()))[ages]
        score = score + _reuse(int(arrays.count.max()))[arrays.count]
        score = score + _SOURCE_SUM_ARRAY[arrays.sources]
        score = score + arrays.kind
        keys = (arrays.first.copy(), -score, arrays.plain <= 0)  # a copy: the arrays change as the region grows
        return RankedAnchors(self._names, keys, self._size, int(self._shortest))

    def ranked(self) -> tuple[str, ...]:
        """The anchors, most likely needed first."""
        return tuple(self.ranking())


class _Arrays:
    """The ranking's figures as arrays, kept in step with its lists: a window of a long row copies
    the figures of the anchors its turns touched (and the new ones), not all of them again."""

    _COLUMNS = (("first", np.int64), ("count", np.int64), ("last", np.int64), ("sources", np.int64),
                ("plain", np.int64), ("kind", np.float64))  # fmt: skip

    def __init__(self) -> None:
        self.size = 0
        self._store = {name: np.zeros(0, dtype=kind) for name, kind in self._COLUMNS}
        self.first = self.count = self.last = self.sources = self.plain = np.zeros(0, dtype=np.int64)
        self.kind = np.zeros(0, dtype=np.float64)

    def sync(self, ranking: AnchorRanking, touched: set[int]) -> None:
        lists: dict[str, list[int] | list[float]] = {
            "first": ranking._first, "count": ranking._count, "last": ranking._last,
            "sources": ranking._sources, "plain": ranking._plain, "kind": ranking._kind,
        }  # fmt: skip
        size = len(ranking._names)
        old = self.size
        if size > len(self._store["first"]):  # room for the new anchors, doubling
            capacity = max(size, 2 * len(self._store["first"]), 64)
            for name, kind in self._COLUMNS:
                grown = np.zeros(capacity, dtype=kind)
                grown[:old] = self._store[name][:old]
                self._store[name] = grown
        changed = sorted(index for index in touched if index < old)
        for name, values in lists.items():
            store = self._store[name]
            if size > old:
                store[old:size] = values[old:size]
            if changed:
                store[changed] = [values[index] for index in changed]
            setattr(self, name, store[:size])
        self.size = size


def ranked_anchors(
    turns: Sequence[Turn],
    *,
    known: str = "",
    earlier: Sequence[str] = (),
    redact: Callable[[str], str] = unchanged,
) -> tuple[str, ...]:
    """The anchors of `turns` (a region), most likely needed first (see `AnchorRanking`)."""
    return AnchorRanking(known=known, earlier=earlier, redact=redact).extend(turns).ranked()


_PIECE_SHIFT = 33


def _first(piece: int, part: int, order: int) -> int:
    """(piece, part, order) as one number that sorts as the triple (piece from -1, order < 2**32)."""
    return (piece + 1) << _PIECE_SHIFT | part << 32 | order


_RECENCY: list[float] = []
_RECENCY_ARRAY = np.zeros(0, dtype=np.float64)
_REUSE: list[float] = []
_REUSE_ARRAY = np.zeros(0, dtype=np.float64)
_SOURCE_SUM_ARRAY = np.array(_SOURCE_SUMS, dtype=np.float64)


def _recency(age: int) -> np.ndarray:
    """`RECENCY_WEIGHT * 0.5 ** (age / HALF_LIFE_TURNS)` for ages 0 to at least `age`, each
    computed by Python as `_score` computes it (numpy's own power could differ in the last bit)."""
    global _RECENCY_ARRAY
    if len(_RECENCY) <= age:
        _RECENCY.extend(RECENCY_WEIGHT * 0.5 ** (a / HALF_LIFE_TURNS) for a in range(len(_RECENCY), 2 * age + 64))
        _RECENCY_ARRAY = np.array(_RECENCY, dtype=np.float64)
    return _RECENCY_ARRAY


def _reuse(turns: int) -> np.ndarray:
    """`REUSE_WEIGHT * math.log(max(1, turns))` for 0 to at least `turns` turns, as `_score` has it."""
    global _REUSE_ARRAY
    if len(_REUSE) <= turns:
        _REUSE.extend(REUSE_WEIGHT * math.log(max(1, n)) for n in range(len(_REUSE), 2 * turns + 64))
        _REUSE_ARRAY = np.array(_REUSE, dtype=np.float64)
    return _REUSE_ARRAY


def _pieces_of(turn: Turn, redact: Callable[[str], str]) -> Iterator[tuple[str, str]]:
    """(source, redacted text) of each piece of a turn: a user's words; an assistant's words (its
    reasoning when it says nothing else), its calls' names and arguments; each tool result's
    content. Markup and JSON wrappers (call ids) are not pieces.

    As the digest reads them: an assistant turn is redacted whole before it is cut into pieces, as
    a value is a credential by what stands around it (`"password": "..."`: the argument's value
    alone is a word), and each piece again once decoded; a piece is redacted before it is cut
    to `_SCAN_CHARS`, so that no cut leaves a fragment of a credential too short to be known."""
    value = turn.value if isinstance(turn.value, str) else str(turn.value)
    if turn.role == "human":
        yield "user", redact(value)[:_SCAN_CHARS]
    elif turn.role == "gpt":
        value = redact(value)
        said = said_in(value)
        if said:
            yield "said", redact(said)[:_SCAN_CHARS]
        for call in parse_tool_calls(value):
            yield "call", redact(call.name)
            for text in _argument_texts(masked_arguments(call.arguments, redact)):
                yield "call", redact(text)[:_SCAN_CHARS]
    elif turn.role == "tool":
        for response in parse_tool_responses(value):
            yield "result", redact(response.content)[:_SCAN_CHARS]


def _argument_texts(arguments: dict[str, Any] | str) -> Iterator[str]:
    """Each argument of a call as text: strings as they are (a command, a file's new content),
    other values as JSON-like text."""
    if isinstance(arguments, str):
        yield arguments
        return
    for value in arguments.values():
        yield value if isinstance(value, str) else str(value)
