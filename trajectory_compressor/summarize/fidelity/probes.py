"""Recall questions about a summarized region, built from its needed anchors: no model involved.

`eval --probes` asks a model what a compressed row still lets it answer (the method of the
Hermes agent's compaction evaluation). The questions are about values whose answers appear
literally in the replaced region and that the kept turns after it go on to use (the *needed*
anchors of future-grounded fidelity, `anchors.needed_anchors`): for each, the line of the region
that first showed it, with the value masked,

    Earlier in this conversation, a tool result contained this text, with one value hidden as ____:
    {"reservation_id": "____", "user_id": "mia_li_3668", "origin": "JFK"}
    What is the hidden value?

whose one right answer is the anchor. Deterministic: the same row always gives the same
questions, so their answers are cached like summaries. Credentials are masked in the text shown;
an anchor the masking would touch is not asked about.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from trajectory_compressor.summarize.fidelity.anchor_tokens import anchors_in
from trajectory_compressor.summarize.fidelity.anchors import needed_anchors
from trajectory_compressor.summarize.fidelity.score import occurs
from trajectory_compressor.summarize.huge_turns import elide_huge_turns
from trajectory_compressor.summarize.redact import redact_secrets
from trajectory_compressor.types import Turn

BLANK = "____"
NOT_IN_CONTEXT = "NOT IN CONTEXT"
_CONTEXT_CHARS = 160  # of the line, either side of the value
_ESCAPES = re.compile(r"\\[nrt\"\\/]")
_DECODED = {"\\n": "\n", "\\r": " ", "\\t": " ", '\\"': '"', "\\\\": "\\", "\\/": "/"}
_WHERE = {"tool": "a tool result", "gpt": "an assistant turn", "human": "a user turn", "system": "the system prompt"}


@dataclass(frozen=True)
class Probe:
    """One question: its text, the answer it has (an anchor), and where the kept turns use it."""

    question: str
    answer: str
    use: int  # the position, among the turns after the region, of the first turn using the answer


def probes_for(head: Sequence[Turn], region: Sequence[Turn], after: Sequence[Turn], limit: int) -> list[Probe]:
    """Up to `limit` questions about `region`, one per needed anchor, in the order the kept turns
    `after` it use them. A huge turn is read by its head and tail (`huge_turns`)."""
    head, region, after = elide_huge_turns(head), elide_huge_turns(region), elide_huge_turns(after)
    probes: list[Probe] = []
    for anchor in needed_anchors(head, region, after):
        if len(probes) >= limit:
            break
        question = _question(anchor, region)
        if question is not None:
            probes.append(Probe(question, anchor, _first_use(anchor, after)))
    return probes


def answered(answer: str, expected: str) -> bool:
    """Whether a model's answer states the expected value (not glued to letters or digits)."""
    return occurs(expected, answer)


def _question(anchor: str, region: Sequence[Turn]) -> str | None:
    """The question whose answer is `anchor`: the region's first line holding it, masked."""
    for turn in region:
        value = turn.value if isinstance(turn.value, str) else str(turn.value)
        if "\\" in value:  # JSON-escaped text (a tool result's content): read as its lines
            value = _ESCAPES.sub(lambda m: _DECODED[m.group(0)], value)
        at = value.find(anchor)
        while at >= 0 and not occurs(anchor, value[max(0, at - 1) : at + len(anchor) + 1]):
            at = value.find(anchor, at + 1)
        if at < 0:
            continue
        line_start = value.rfind("\n", 0, at) + 1
        line_end = value.find("\n", at)
        line_end = len(value) if line_end < 0 else line_end
        start, end = max(line_start, at - _CONTEXT_CHARS), min(line_end, at + len(anchor) + _CONTEXT_CHARS)
        text = value[start:end]
        masked = redact_secrets(text)
        if masked.count(anchor) != text.count(anchor) or redact_secrets(anchor) != anchor:
            return None  # the value is, or touches, a credential: never asked for
        shown = masked.replace(anchor, BLANK).strip()
        if BLANK not in shown or anchor in shown:
            return None
        where = _WHERE.get(turn.role, "a turn")
        prefix = "…" if start > line_start else ""
        suffix = "…" if end < line_end else ""
        return (
            f"Earlier in this conversation, {where} contained this text, with one value hidden as {BLANK}:\n"
            f"{prefix}{shown}{suffix}\nWhat is the hidden value?"
        )
    return None


def _first_use(anchor: str, after: Sequence[Turn]) -> int:
    for position, turn in enumerate(after):
        if turn.role in ("human", "gpt") and anchor in anchors_in(turn.value):
            return position
    return len(after)
