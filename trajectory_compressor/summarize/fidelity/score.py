"""Scoring a summary against its region: recall of each kind of salient item, and inventions.

* **recall** of a kind: the share of the region's items of that kind that the summary states.
  An item counts as stated when it occurs in the summary (whitespace squeezed) not glued to
  letters or digits on either side: tool names and error heads case-insensitively; paths,
  error classes and identifiers exactly. A path also counts when a shorter form of it occurs
  that names no other path of the region: a tail of it that starts after a `/` (so
  `models/query.py` or `query.py` stand for `/testbed/django/db/models/query.py` when no other
  path of the region ends that way).
* **score**: the mean of the recalls of the kinds the region has (each kind weighs the same,
  so two hundred flight numbers do not drown three tool names); None when it has no items.
* **unsupported**: items the summary states that occur nowhere in the whole input row (head
  and tail included, as the summarizer may have seen them): file paths, error classes and
  identifiers other than plain integers (a summary's own counts are its words). A sign of
  invention, mostly from LLMs; the extractive summarizer copies, so it should have none.

Pure and deterministic: the same summary of the same row always scores the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

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


def score_items(items: SalientItems, summary: str, corpus: RowText) -> Fidelity:
    """`score_summary` with the items and the row's text already at hand."""
    text = " ".join(summary.split())
    lowered = text.casefold()
    total: dict[str, int] = {}
    found: dict[str, int] = {}
    missed: dict[str, tuple[str, ...]] = {}
    for kind in KINDS:
        wanted = items.of(kind)
        haystack = lowered if kind in _CASE_INSENSITIVE_KINDS else text
        lost = [item for item in wanted if not _stated(kind, item, haystack, items, lowered)]
        total[kind] = len(wanted)
        found[kind] = len(wanted) - len(lost)
        missed[kind] = tuple(lost)
    return Fidelity(total, found, missed, unsupported_items(text, corpus))


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
    most items are found in the raw text, so it is done once, on the first miss.
    """

    def __init__(self, turns: Sequence[Turn]) -> None:
        turns = elide_huge_turns(turns)  # a huge turn by its head and tail, as summarizers read it
        self._turns = turns
        self._raw = "\n".join(turn.value if isinstance(turn.value, str) else str(turn.value) for turn in turns)
        self._decoded: str | None = None

    def __contains__(self, item: object) -> bool:
        if not isinstance(item, str):
            return False
        if item in self._raw:
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


def _stated(kind: str, item: str, haystack: str, items: SalientItems, lowered: str) -> bool:
    needle = item.casefold() if kind in _CASE_INSENSITIVE_KINDS else item
    if occurs(needle, haystack):
        return True
    if kind == "errors" and occurs(item.casefold(), lowered):  # an error head, in other case
        return True
    if kind == "paths" and "/" in item:
        return any(occurs(tail, haystack) for tail in unique_tails(item, items.paths))
    return False


def unique_tails(path: str, paths: Sequence[str]) -> list[str]:
    """The tails of `path` after each `/`, longest first, that end no other path of `paths`."""
    tails = []
    position = path.find("/", 1)
    while position >= 0:
        tail = path[position + 1 :]
        if tail and not any(other != path and (other == tail or other.endswith("/" + tail)) for other in paths):
            tails.append(tail)
        position = path.find("/", position + 1)
    return tails


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
