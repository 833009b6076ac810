"""Huge turns shown to whatever reads a turn's text whole by their head and tail.

A turn can hold a whole log: tens of megabytes in one tool result. Its token count stays exact
(`count.text_pieces` counts it in pieces) and the writer writes it back as read, but everything
that reads a turn's text to summarize or judge it (the LLM prompt, the extractive digest and the
redaction it runs, the fidelity scores) builds copies, matches and item lists in proportion to
it: an 80 MB tool result took the extractive summarizer past 1.3 GB. So a turn over
`HUGE_TURN_CHARS` characters reaches them as its first and last `HUGE_TURN_CHARS // 2`
characters with a marker saying how many went between, the way the LLM prompt already elides
long turns (its own cut, to a few thousand characters, then applies to this view). Turns up to
that size, every real one seen so far (the longest of 132 real runs holds 12,814 characters),
are shown whole as before.

Each cut falls at a line break near its place (a newline, or the two characters backslash-n of
JSON-escaped text) so that no credential on a line is cut in two and half-shown; the redaction
rules mask a PEM block from its BEGIN line to its END line, or to the end of the text, across
the marker, and a block whose BEGIN went with the middle by its body and END line. A huge
single line (a minified dump) has no line break near the cut: there a credential the cut falls
into, or whose name (`DB_PASSWORD=`, `"password": `) the cut leaves on the other side, is
masked on the side shown, as found in the text around the cut (`_masked_sides`), so that no
reader sees a bare value whose context went with the middle.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from trajectory_compressor.summarize.redact import find_secrets, mask_spans
from trajectory_compressor.types import Turn

HUGE_TURN_CHARS = 1_000_000  # a longer turn is shown by its head and tail, half of this each
SNAP_CHARS = 10_000  # how far a cut may move to fall at a line break
_BREAKS = ("\n", "\\n")
_CUT_CONTEXT = 2_000  # read around a cut for the credentials it falls into or beside
_MARKER_ROOM = 256  # the marker and masks at the cuts: a view is never itself huge, so eliding it again changes nothing


def elide_huge(text: str) -> str:
    """`text`, or when it is over `HUGE_TURN_CHARS` its head and tail around a marker."""
    if len(text) <= HUGE_TURN_CHARS:
        return text
    half = (HUGE_TURN_CHARS - _MARKER_ROOM) // 2
    head_end = _line_break_before(text, half)
    tail_start = _line_break_after(text, len(text) - half)
    head, tail = _masked_sides(text, head_end, tail_start)
    return f"{head}\n[... {tail_start - head_end:,} characters elided ...]\n{tail}"


def _masked_sides(text: str, head_end: int, tail_start: int) -> tuple[str, str]:
    """`text[:head_end]` and `text[tail_start:]`, each with the credentials found around its cut
    (within `_CUT_CONTEXT` characters either side) masked where it shows them."""
    low = max(0, head_end - _CUT_CONTEXT)
    around = text[low : head_end + _CUT_CONTEXT]
    head = text[:low] + mask_spans(around, find_secrets(around), 0, head_end - low)
    low = max(0, tail_start - _CUT_CONTEXT)
    around = text[low : tail_start + _CUT_CONTEXT]
    tail = mask_spans(around, find_secrets(around), tail_start - low) + text[low + len(around) :]
    return head, tail


def elide_huge_turns(turns: Sequence[Turn]) -> list[Turn]:
    """`turns`, each huge one replaced by its elided view (every other turn the same object)."""
    return [
        turn if len(turn.value) <= HUGE_TURN_CHARS else replace(turn, value=elide_huge(turn.value)) for turn in turns
    ]


def _line_break_before(text: str, position: int) -> int:
    """The end of the last line break at or before `position` (within `SNAP_CHARS`), else `position`."""
    low = max(0, position - SNAP_CHARS)
    ends = [found + len(mark) for mark in _BREAKS if (found := text.rfind(mark, low, position)) >= 0]
    return max(ends, default=position)


def _line_break_after(text: str, position: int) -> int:
    """The end of the first line break at or after `position` (within `SNAP_CHARS`), else `position`."""
    high = min(len(text), position + SNAP_CHARS)
    ends = [found + len(mark) for mark in _BREAKS if (found := text.find(mark, position, high)) >= 0]
    return min(ends, default=position)
