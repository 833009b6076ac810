"""Which of a region's anchors its summary should keep, ranked without seeing what comes after.

The turns after a summary act on exact strings the replaced turns showed: the reservation id a
tool returned, the path and the line of the last edit, the name the assistant wrote down (see
`fidelity.anchors`, which judges a summary by them). An agent's compressor cannot know which
ones the next turns will use, and neither does this ranking: it reads only the region and what
came before it (the task), so a region's ranking is the same whatever follows it.

Each anchor of the region (`fidelity.anchors.anchors_in`, read from the parsed pieces of each
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
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import groupby
from typing import Any

from trajectory_compressor.summarize.fidelity.anchors import anchor_kind, anchors_in
from trajectory_compressor.summarize.toolcalls import parse_tool_calls, parse_tool_responses, prose_of, think_of
from trajectory_compressor.types import Turn

HALF_LIFE_TURNS = 16
RECENCY_WEIGHT = 3.0
REUSE_WEIGHT = 1.5
# By where an anchor was seen (once is enough): the assistant's words and calls, the user's words,
# and an earlier summary (what an earlier compaction already chose to keep).
SOURCE_WEIGHTS = {"said": 1.0, "call": 1.5, "user": 1.0, "result": -0.5, "earlier": 1.5}
KIND_WEIGHTS = {"id": 0.5, "name": 0.5, "path": 0.5, "number": 0.0, "url": 0.0}
BOILERPLATE_TURNS = 3  # a result line repeated verbatim in this many tool results is boilerplate
_OPAQUE_CHARS = 16
_HEX = frozenset("0123456789abcdefABCDEF")
_SCAN_CHARS = 200_000  # of one piece: a huge dump's anchors beyond this say little


def unchanged(text: str) -> str:
    return text


@dataclass
class _Seen:
    """Where one anchor occurs in the region."""

    first: int  # order of first appearance: ties keep the region's order
    turns: set[int] = field(default_factory=set)
    sources: set[str] = field(default_factory=set)
    last: int = 0
    outside_boilerplate: bool = False


def ranked_anchors(
    turns: Sequence[Turn],
    *,
    known: str = "",
    earlier: Sequence[str] = (),
    redact: Callable[[str], str] = unchanged,
) -> tuple[str, ...]:
    """The anchors of `turns` (a region), most likely needed first.

    `known` is text the context after the summary still shows (the task): its anchors are left
    out. `earlier` holds the anchors an earlier summary of the turns before the region kept (its
    index): they join the ranking as the oldest turn, so an index stays cumulative, each anchor
    once, the still-used ones first.
    """
    pieces = list(_pieces(turns, redact))
    boilerplate = _boilerplate_lines(pieces)
    left_out = set(anchors_in(redact(known))) if known else set()
    seen: dict[str, _Seen] = {}
    for anchor in earlier:
        if anchor not in left_out and anchor not in seen and anchor_kind(anchor) is not None and not _opaque(anchor):
            known_before = seen[anchor] = _Seen(first=len(seen), last=-1, outside_boilerplate=True)
            known_before.sources.add("earlier")
    for position, source, text in pieces:
        for part, plain in _parts(text, boilerplate if source == "result" else frozenset()):
            for anchor in anchors_in(part):
                entry = seen.get(anchor)
                if entry is None:
                    if anchor in left_out:
                        continue
                    if _opaque(anchor):
                        left_out.add(anchor)  # judged once
                        continue
                    entry = seen[anchor] = _Seen(first=len(seen))
                entry.turns.add(position)
                entry.sources.add(source)
                entry.last = max(entry.last, position)
                entry.outside_boilerplate |= plain
    count = len(turns)
    return tuple(sorted(seen, key=lambda anchor: _rank_key(anchor, seen[anchor], count)))


def _rank_key(anchor: str, seen: _Seen, count: int) -> tuple[bool, float, int]:
    return (not seen.outside_boilerplate, -_score(anchor, seen, count), seen.first)


def _score(anchor: str, seen: _Seen, count: int) -> float:
    age = count - 1 - seen.last  # turns between its last appearance and the region's end
    score = RECENCY_WEIGHT * 0.5 ** (age / HALF_LIFE_TURNS)
    score += REUSE_WEIGHT * math.log(max(1, len(seen.turns)))
    score += sum(SOURCE_WEIGHTS[source] for source in seen.sources)
    return score + KIND_WEIGHTS.get(anchor_kind(anchor) or "", 0.0)


def _pieces(turns: Sequence[Turn], redact: Callable[[str], str]) -> Iterator[tuple[int, str, str]]:
    """(turn position, source, redacted text) of each piece of each turn: a user's words; an
    assistant's words (its reasoning when it says nothing else), its calls' names and arguments;
    each tool result's content. Markup and JSON wrappers (call ids) are not pieces."""
    for position, turn in enumerate(turns):
        value = turn.value if isinstance(turn.value, str) else str(turn.value)
        if turn.role == "human":
            yield position, "user", redact(value[:_SCAN_CHARS])
        elif turn.role == "gpt":
            said = prose_of(value) or (think_of(value) if "think>" in value else "")
            if said:
                yield position, "said", redact(said[:_SCAN_CHARS])
            for call in parse_tool_calls(value):
                yield position, "call", redact(call.name)
                for text in _argument_texts(call.arguments):
                    yield position, "call", redact(text[:_SCAN_CHARS])
        elif turn.role == "tool":
            for response in parse_tool_responses(value):
                yield position, "result", redact(response.content[:_SCAN_CHARS])


def _argument_texts(arguments: dict[str, Any] | str) -> Iterator[str]:
    """Each argument of a call as text: strings as they are (a command, a file's new content),
    other values as JSON-like text."""
    if isinstance(arguments, str):
        yield arguments
        return
    for value in arguments.values():
        yield value if isinstance(value, str) else str(value)


def _parts(text: str, boilerplate: frozenset[str]) -> Iterator[tuple[str, bool]]:
    """`text` as (its lines outside `boilerplate`, True) and (its boilerplate lines, False): two
    scans at most, not one per line."""
    if not boilerplate:
        yield text, True
        return
    lines = text.split("\n")
    repeated = [line for line in lines if line.strip() in boilerplate]
    if not repeated:
        yield text, True
        return
    yield "\n".join(line for line in lines if line.strip() not in boilerplate), True
    yield "\n".join(repeated), False


def _boilerplate_lines(pieces: list[tuple[int, str, str]]) -> frozenset[str]:
    """Lines of tool results that recur verbatim in `BOILERPLATE_TURNS` results or more."""
    counts: Counter[str] = Counter()
    for _, source, text in pieces:
        if source == "result":
            counts.update({line.strip() for line in text.split("\n") if line.strip()})
    return frozenset(line for line, seen in counts.items() if seen >= BOILERPLATE_TURNS)


def _opaque(anchor: str) -> bool:
    """A blob (base64, a token, a key), never a name a later turn types: at least
    `_OPAQUE_CHARS` letters and digits that switch between upper case, lower case and digits every
    two characters or so (names switch every four or more: `RemovedInDjango40Warning`), and not a
    hex hash (`9f3c2ab71d`, `0x7f23b2e35940`: kept, later turns do quote those)."""
    if len(anchor) < _OPAQUE_CHARS:
        return False
    letters = "".join(c for c in anchor if c.isalnum())
    if len(letters) < _OPAQUE_CHARS or all(c in _HEX for c in letters.removeprefix("0x")):
        return False
    runs = sum(1 for _ in groupby(letters, _char_class))
    mean_run = len(letters) / runs
    return mean_run < 2.0 or (mean_run < 2.4 and any(c.isdigit() for c in letters))


def _char_class(char: str) -> int:
    return 0 if char.isdigit() else 1 if char.isupper() else 2
