"""Scoring a summary against its region: recall of each kind of salient item, and inventions.

* **recall** of a kind: the share of the region's items of that kind that the summary states.
  An item counts as stated when it occurs in the summary (whitespace squeezed) not glued to
  letters or digits on either side: tool names and error heads case-insensitively; paths,
  error classes and identifiers exactly. A path also counts when a shorter form of it occurs
  that names no other file of the region: a tail that starts after a `/` (so `models/query.py`
  or `query.py` stand for `/testbed/django/db/models/query.py` when no other file's path ends
  that way; `django/db/models/query.py` is the same file, not another: `path_names`).
* **score**: the mean of the recalls of the kinds the region has (each kind weighs the same,
  so two hundred flight numbers do not drown three tool names); None when it has no items.
* **unsupported**: items the summary states that occur nowhere in the whole input row (head
  and tail included, as the summarizer may have seen them): file paths, error classes and
  identifiers other than plain integers (a summary's own counts are its words). A sign of
  invention, mostly from LLMs; the extractive summarizer copies, so it should have none.

Pure and deterministic: the same summary of the same row always scores the same.
"""

from __future__ import annotations

import re
from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import accumulate
from typing import Any

from trajectory_compressor.summarize.fidelity.path_names import PathNames
from trajectory_compressor.summarize.fidelity.salient import (
    ERROR_CLASS,
    KINDS,
    NAMED_IDENTIFIER,
    SalientItems,
    identifiers_in,
    salient_items,
)
from trajectory_compressor.summarize.huge_turns import elide_huge_turns
from trajectory_compressor.summarize.redact import redact_secrets
from trajectory_compressor.summarize.toolcalls import clip, files_in, parse_tool_responses
from trajectory_compressor.summarize.toolcalls.memo import TextMemo
from trajectory_compressor.types import Turn

KIND_LABELS = {"tools": "tool names", "paths": "file paths", "errors": "errors", "identifiers": "identifiers"}
_SHOWN_ITEM_CHARS = 80
_MAX_UNSUPPORTED = 10
_CASE_INSENSITIVE_KINDS = frozenset({"tools"})


@dataclass(frozen=True)
class Fidelity:
    """How much of a region's salient content a summary keeps, and what it states unsupported."""

    total: dict[str, int]
    found: dict[str, int]
    missed: dict[str, tuple[str, ...]] = field(default_factory=dict)
    unsupported: tuple[str, ...] = ()

    def recall(self, kind: str) -> float | None:
        total = self.total.get(kind, 0)
        return self.found.get(kind, 0) / total if total else None

    @property
    def score(self) -> float | None:
        recalls = [r for r in (self.recall(kind) for kind in KINDS) if r is not None]
        return sum(recalls) / len(recalls) if recalls else None

    def to_metrics(self) -> dict[str, Any]:
        """The metrics line's `fidelity` object: score, recall by kind, and item counts."""
        score = self.score
        data: dict[str, Any] = {"score": None if score is None else round(score, 4)}
        for kind in KINDS:
            recall = self.recall(kind)
            data[kind] = None if recall is None else round(recall, 4)
        data["items"] = {kind: self.total.get(kind, 0) for kind in KINDS}
        return data

    def shown_unsupported(self) -> list[str]:
        """The unsupported items as written to metrics: clipped, credentials masked."""
        return [shown_item(item) for item in self.unsupported[:_MAX_UNSUPPORTED]]

    def shortfall(self, per_kind: int = 8) -> str:
        """What the summary left out and what it invented, in words (credentials masked)."""
        parts = []
        for kind in KINDS:
            missed = self.missed.get(kind, ())
            if missed:
                shown = ", ".join(shown_item(item) for item in missed[:per_kind])
                more = f" and {len(missed) - per_kind} more" if len(missed) > per_kind else ""
                parts.append(f"{KIND_LABELS[kind]}: {shown}{more}")
        if self.unsupported:
            parts.append("not in the transcript: " + ", ".join(self.shown_unsupported()))
        return "; ".join(parts)


def shown_item(item: str) -> str:
    """An item as any output shows it (metrics, prompts, `eval`): credentials masked, then clipped
    (clipped first, a token cut short would be too short for its pattern and shown in part)."""
    return clip(redact_secrets(item), _SHOWN_ITEM_CHARS)


def score_histogram(scores: Iterable[float], bins: int = 10) -> list[int]:
    """Counts of scores in [0, 0.1), [0.1, 0.2), ... [0.9, 1.0] (for `bins` = 10)."""
    counts = [0] * bins
    for score in scores:
        counts[min(bins - 1, int(score * bins))] += 1
    return counts


def score_summary(region: Sequence[Turn], summary: str, row: Sequence[Turn] | None = None) -> Fidelity:
    """The fidelity of `summary` to `region`; `row` (the whole input row) judges inventions."""
    return score_items(salient_items(region), summary, row_text(row if row is not None else region))


def score_items(items: SalientItems, summary: str, corpus: RowText, tails: PathNames | None = None) -> Fidelity:
    """`score_summary` with the items and the row's text already at hand (and the paths' tails,
    `PathNames(items.paths)`, when they are kept as the items grow)."""
    text = " ".join(summary.split())
    lowered = text.casefold()
    total: dict[str, int] = {}
    found: dict[str, int] = {}
    missed: dict[str, tuple[str, ...]] = {}
    tails = PathNames(items.paths) if tails is None else tails
    if items.total > _MANY_ITEMS:  # each item a set lookup, not a search of the summary
        in_text: Container[str] = Stated(text)
        in_lowered: Container[str] = Stated(lowered)
    else:
        in_text, in_lowered = Occurs(text), Occurs(lowered)
    for kind in KINDS:
        wanted = items.of(kind)
        haystack = in_lowered if kind in _CASE_INSENSITIVE_KINDS else in_text
        lost = [item for item in wanted if not stated(kind, item, haystack, tails, in_lowered)]
        total[kind] = len(wanted)
        found[kind] = len(wanted) - len(lost)
        missed[kind] = tuple(lost)
    return Fidelity(total, found, missed, unsupported_items(text, corpus))


_MANY_ITEMS = 512  # a few hundred items are quicker searched each
LONGEST_LOOKED_UP = 256  # the longest needle `Stated` answers from its set


class Occurs:
    """`occurs` in one text, as a container (what `Stated` answers with a set)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __contains__(self, needle: object) -> bool:
        return isinstance(needle, str) and occurs(needle, self.text)


def unsupported_items(summary: str, corpus: RowText) -> tuple[str, ...]:
    """Paths, error classes and named identifiers of `summary` that `corpus` never mentions."""
    claimed = [*files_in(summary), *(m.group(1) for m in ERROR_CLASS.finditer(summary))]
    claimed += identifiers_in(summary, NAMED_IDENTIFIER)
    return tuple(item for item in dict.fromkeys(claimed) if item not in corpus)


class RowText:
    """Everything a row says, searchable: its raw values, then (only when asked for something the
    raw text lacks) its tool results decoded.

    Tool results are often JSON with escaped text (`\\u00e9`, `\\"`), and a summary quotes them
    decoded; decoding every result of a long row costs more than the rest of the scoring, and
    most items are found in the raw text, so it is done once, on the first miss. Each answer is
    kept: a row's context windows ask about their summaries' items again and again, and an item
    first seen in the turns a window summarized is looked for there first (`recent`), not in the
    whole row.
    """

    def __init__(self, turns: Sequence[Turn]) -> None:
        turns = elide_huge_turns(turns)  # a huge turn by its head and tail, as summarizers read it
        self._turns = turns
        values = [turn.value if isinstance(turn.value, str) else str(turn.value) for turn in turns]
        self._raw = "\n".join(values)
        # Where each turn starts in `_raw` (each value and its "\n"), and one past the end.
        self._starts = [0, *accumulate(len(value) + 1 for value in values)]
        self._decoded: str | None = None
        self._known: dict[str, bool] = {}
        self.recent = ""  # a part of the raw text to look in first

    def look_first_in(self, start: int, end: int) -> None:
        """Look for items in turns [start, end) first (`recent`): a summary's items come from the
        turns it summarized, which a long task or system prompt before them would delay. A part
        of the row's text as it is read (huge turns by their head and tail), so where an item is
        looked for first never changes the answer."""
        self.recent = self._raw[self._starts[start] : self._starts[end] - 1] if end > start else ""

    def __contains__(self, item: object) -> bool:
        if not isinstance(item, str):
            return False
        known = self._known.get(item)
        if known is None:
            known = self._known[item] = self._holds(item)
        return known

    def _holds(self, item: str) -> bool:
        if item in self.recent or item in self._raw:
            return True
        if self._decoded is None:
            self._decoded = "\n".join(
                response.content
                for turn in self._turns
                if turn.role == "tool" and "\\" in turn.value
                for response in parse_tool_responses(turn.value)
            )
        return item in self._decoded


def row_text(turns: Sequence[Turn]) -> RowText:
    """The row's text, for judging which items of a summary are unsupported."""
    return RowText(turns)


def stated(kind: str, item: str, haystack: Container[str], tails: PathNames, lowered: Container[str]) -> bool:
    needle = item.casefold() if kind in _CASE_INSENSITIVE_KINDS else item
    if needle in haystack:
        return True
    if kind == "errors" and item.casefold() in lowered:  # an error head, in other case
        return True
    if kind == "paths" and "/" in item:
        return any(tail in haystack for tail in tails.unique(item))
    return False


class Stated:
    """What `occurs` says of many needles in one text, each a set lookup.

    A needle without whitespace occurs inside one word of the text, from a place where it is not
    glued to the character before to one where it is not glued to the character after; those
    places are the word's edges and the edges of its runs of letters, digits and underscores
    (`_glued`: two such characters glue, but for two underscores). So the substrings between two
    such places, up to `longest` characters, are every needle that occurs: made once, in one pass
    over the words (a needle with whitespace, or longer, is looked for as `occurs` does)."""

    def __init__(self, text: str, longest: int = LONGEST_LOOKED_UP) -> None:
        self.text = text
        self.longest = longest
        substrings_of = _known_substrings if longest == LONGEST_LOOKED_UP else partial(_cut_substrings, longest=longest)
        words = set(text.split())
        found = set(filter(_PLAIN_WORD.fullmatch, words))  # a word of one run is cut at its ends only
        for word in words - found:
            found.update(substrings_of(word))
        self._found = found

    def __contains__(self, needle: object) -> bool:
        if not isinstance(needle, str):
            return False
        if not self.looks_up(needle):
            return occurs(needle, self.text)
        return needle in self._found

    def looks_up(self, needle: str) -> bool:
        """Whether `needle` is answered from the set (no whitespace, at most `longest` long)."""
        return bool(needle) and len(needle) <= self.longest and _ONE_WORD.fullmatch(needle) is not None

    @property
    def substrings(self) -> set[str]:
        """Every needle the text states that `looks_up` answers."""
        return self._found


def _cut_substrings(word: str, longest: int) -> tuple[str, ...]:
    """The substrings of `word` between two places it can be cut without gluing, up to `longest`
    characters."""
    cuts = [match.start() for match in _CUT.finditer(word)]
    substrings = []
    for at, start in enumerate(cuts):
        for end in cuts[at + 1 :]:
            if end - start > longest:
                break
            substrings.append(word[start:end])
    return tuple(substrings)


# A row's window summaries state the same paths and names again and again: a short word's few
# substrings are remembered (a long word, or one with many, is rare and made each time: at most
# 2,048 words of up to 256 characters with up to 64 substrings each: under 40 MB at worst, about
# 1 MB in practice, whatever the summaries hold).
_known_substrings = TextMemo(
    partial(_cut_substrings, longest=LONGEST_LOOKED_UP),
    entries=2048,
    max_chars=LONGEST_LOOKED_UP,
    keeps=lambda found: len(found) <= 64,
)
_CUT = re.compile(r"(?<!\w)|(?!\w)|(?<=_)(?=_)")  # where a word can be cut without gluing (as `_glued`)
_ONE_WORD = re.compile(r"\S+")  # no whitespace (re's \s is str.isspace)
_PLAIN_WORD = re.compile(r"(?!.*__)\w+")  # letters, digits, underscores (not two together): no cut inside


def occurs(needle: str, haystack: str) -> bool:
    """`needle` in `haystack`, not glued to a letter or digit on either side."""
    if not needle:
        return True
    start = haystack.find(needle)
    while start >= 0:
        end = start + len(needle)
        before = haystack[start - 1] if start else " "
        after = haystack[end] if end < len(haystack) else " "
        if not _glued(before, needle[0]) and not _glued(after, needle[-1]):
            return True
        start = haystack.find(needle, start + 1)
    return False


def _glued(neighbour: str, edge: str) -> bool:
    """Whether `neighbour` continues the word `edge` belongs to (so the match is part of a longer token)."""
    return (neighbour.isalnum() and (edge.isalnum() or edge == "_")) or (neighbour == "_" and edge.isalnum())
