"""Cutting a rendered conversation into per-message pieces whose token counts add up exactly.

A fast tokenizer splits its input at every added token (``<|im_start|>``, ``<|eot_id|>``,
``<｜User｜>``...) before anything else, so no token spans one, and a text cut right before or
after one counts, piece by piece, exactly as it counts whole. Chat templates open and close
messages with such tokens: cutting each message's piece there counts a row once, in one batch,
and the pieces sum to the trainer's own count. Where a message starts elsewhere (two tool
results inside one user turn, a template whose markers are plain text for this tokenizer), the
pieces between two exact cuts are counted whole as well as apart, and the whole count is what
is shared out. Pure: no tokenizer here, only its table of added tokens and a count function.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

WHITESPACE_SNAP = 16  # characters of whitespace a message start may move over to reach a cut


@dataclass(frozen=True)
class AddedToken:
    """What matters of one added token for cutting next to it."""

    content: str
    lstrip: bool = False  # swallows the whitespace before it
    rstrip: bool = False  # swallows the whitespace after it


class CutPoints:
    """Where a text may be cut so that its pieces' token counts add up to the whole text's."""

    def __init__(self, tokens: Iterable[AddedToken]) -> None:
        self._starting: dict[str, list[AddedToken]] = {}
        self._ending: dict[str, list[AddedToken]] = {}
        for token in tokens:
            if token.content:
                self._starting.setdefault(token.content[0], []).append(token)
                self._ending.setdefault(token.content[-1], []).append(token)

    @classmethod
    def of(cls, backend: object) -> CutPoints:
        """The cut points of a `tokenizers.Tokenizer`: its added tokens that it always splits at.

        Left out: single-word tokens (matched only between non-word characters), tokens matched
        after normalization when the tokenizer normalizes, and special tokens when it encodes
        them as text (`encode_special_tokens`).
        """
        # `backend` is duck-typed (a `tokenizers.Tokenizer`, or what a caller's tokenizer wraps).
        table = backend.get_added_tokens_decoder().values()  # type: ignore[attr-defined]
        normalizes = _normalizes(getattr(backend, "normalizer", None))
        special_as_text = bool(getattr(backend, "encode_special_tokens", False))
        return cls(
            AddedToken(token.content, token.lstrip, token.rstrip)
            for token in table
            if not token.single_word
            and not (token.normalized and normalizes)
            and not (token.special and special_as_text)
        )

    def is_cut(self, text: str, position: int) -> bool:
        """Whether `text` cut at `position` counts as the sum of its two sides."""
        if position <= 0 or position >= len(text):
            return True
        before, after = text[position - 1], text[position]
        for token in self._starting.get(after, ()):
            if text.startswith(token.content, position) and not (token.lstrip and before.isspace()):
                return True
        for token in self._ending.get(before, ()):
            if text.endswith(token.content, 0, position) and not (token.rstrip and after.isspace()):
                return True
        return False

    def snap(self, text: str, position: int, limit: int) -> int | None:
        """`position` if it is a cut, else the cut just after the whitespace that follows it
        (``\\n<tool_response>``), not past `limit`; None when there is none."""
        end = min(limit, position + WHITESPACE_SNAP, len(text))
        for candidate in range(position, end + 1):
            if self.is_cut(text, candidate):
                return candidate
            if candidate < len(text) and not text[candidate].isspace():
                return None
        return None


def _normalizes(normalizer: object) -> bool:
    """Whether a tokenizer's normalizer can change text (None and an empty sequence cannot)."""
    if normalizer is None:
        return False
    try:
        # tokenizers' normalizers pickle to JSON; any other object fails here and counts as normalizing.
        state = json.loads(normalizer.__getstate__())  # type: ignore[attr-defined]
    except (AttributeError, TypeError, ValueError):
        return True
    return not (state.get("type") == "Sequence" and not state.get("normalizers"))


@dataclass(frozen=True)
class PieceGroup:
    """Messages `first`..`first + len(bounds) - 1`, between two exact cuts of the text."""

    first: int
    bounds: list[int]  # start of each message's piece; the group ends at `end`
    end: int

    def spans(self) -> list[tuple[int, int]]:
        return list(zip(self.bounds, [*self.bounds[1:], self.end], strict=True))

    def pieces(self, text: str) -> list[str]:
        return [text[start:stop] for start, stop in self.spans()]

    @property
    def several(self) -> bool:
        """Whether more than one of its pieces holds text (then they are counted apart too)."""
        return sum(1 for start, stop in self.spans() if stop > start) > 1


def message_bounds(starts: Sequence[int | None], length: int) -> list[int]:
    """Where each message's piece starts: its start, or, when unknown or out of order, the next
    known start (so the last message known holds the text up to the next one). The first
    message starts at 0: the template's preamble (tools, default system prompt) is the head's."""
    known: list[int | None] = [0]
    last = 0
    for start in starts[1:]:
        if start is None or start < last or start > length:
            known.append(None)
        else:
            known.append(start)
            last = start
    bounds: list[int] = []
    following = length
    for start in reversed(known):
        following = following if start is None else start
        bounds.append(following)
    return bounds[::-1]


def group_pieces(text: str, starts: Sequence[int | None], cuts: CutPoints) -> list[PieceGroup]:
    """The messages' pieces, grouped between exact cuts (one message per group where the
    template opens each message with an added token)."""
    bounds = message_bounds(starts, len(text))
    exact = [True] * len(bounds)
    for index in range(1, len(bounds)):
        limit = bounds[index + 1] if index + 1 < len(bounds) else len(text)
        snapped = cuts.snap(text, bounds[index], limit)
        if snapped is None:
            exact[index] = False
        else:
            bounds[index] = snapped
    groups: list[PieceGroup] = []
    first = 0
    for index in range(1, len(bounds) + 1):
        if index == len(bounds) or exact[index]:
            end = bounds[index] if index < len(bounds) else len(text)
            groups.append(PieceGroup(first, bounds[first:index], end))
            first = index
    return groups


def shared_counts(whole: int, parts: Sequence[int]) -> list[int]:
    """`parts` (the pieces counted apart) adjusted to add up to `whole` (the group counted whole).

    The difference is what the tokenizer merged or split across the cuts: a few tokens, added to
    the last non-empty piece or taken from the largest ones.
    """
    counts = list(parts)
    difference = whole - sum(counts)
    if difference >= 0:
        last = max((i for i, count in enumerate(counts) if count > 0), default=len(counts) - 1)
        counts[last] += difference
        return counts
    for index in sorted(range(len(counts)), key=lambda i: counts[i], reverse=True):
        taken = min(counts[index], -difference)
        counts[index] -= taken
        difference += taken
        if difference == 0:
            break
    return counts


def count_groups(
    jobs: Sequence[tuple[str, list[PieceGroup]]], count_many: Callable[[Sequence[str]], list[int]]
) -> list[list[int]]:
    """Per-message token counts of several rendered conversations, in one call of `count_many`.

    Each group is counted whole; a group of several non-empty pieces is counted piece by piece
    too, and shared out by `shared_counts`.
    """
    texts: list[str] = []
    for text, groups in jobs:
        for group in groups:
            texts.append(text[group.bounds[0] : group.end])
            if group.several:  # a group of one piece is not copied twice (a huge message)
                texts.extend(group.pieces(text))
    counts = iter(count_many(texts))
    del texts
    result: list[list[int]] = []
    for _, groups in jobs:
        row: list[int] = []
        for group in groups:
            whole = next(counts)
            spans = group.spans()
            if group.several:
                row.extend(shared_counts(whole, [next(counts) for _ in spans]))
            else:
                holder = next((i for i, (start, stop) in enumerate(spans) if stop > start), 0)
                row.extend(whole if i == holder else 0 for i in range(len(spans)))
        result.append(row)
    return result
