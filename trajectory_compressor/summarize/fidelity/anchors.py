"""Future-grounded fidelity: the anchors a conversation's later turns act on, and the ones a summary must keep.

An *anchor* is a token of text that names something exactly (a path, a URL, an email, an id, a
number: `anchor_tokens`, whose `anchors_in` reads them), so that a turn using it only works if
it was seen.

**Future-grounded fidelity** judges a summary by what the turns after it need. For a region
replaced by a summary, an anchor is *needed* when

* a kept user or assistant turn after the region uses it (the turns a model is trained to write,
  and the user's references it must follow),
* the region holds it (the region introduced it), and
* it was not visible in the context before that use: not in the head, nor in a kept turn
  between the region and the use (a later tool result that shows it again makes it visible);
* it is no credential: no summary may state one (all of them mask credentials), so a value a turn
  of the row shows as a credential (`"password": "..."`, `API_KEY=...`, `Bearer ...`: what
  `redact_secrets` masks there), or that a call printed out of a credential's file or wrote into
  one (`cat /run/secrets/api_key`: `masking.RowCredentials`), is not needed, and never shown in
  metrics nor told to the LLM as missed.

The score is the share of needed anchors still present in the compressed context (the summary,
or what replaced the region). Pure functions over strings, deterministic.
"""

from __future__ import annotations

from collections.abc import Container, Sequence
from dataclasses import dataclass
from typing import Any

from ahocorasick_rs import AhoCorasick, Implementation

from trajectory_compressor.summarize.fidelity.anchor_tokens import anchors_in
from trajectory_compressor.summarize.fidelity.path_names import PathNames
from trajectory_compressor.summarize.fidelity.score import occurs, shown_item
from trajectory_compressor.summarize.huge_turns import elide_huge_turns
from trajectory_compressor.summarize.masking import RowCredentials
from trajectory_compressor.summarize.toolcalls.memo import TextMemo
from trajectory_compressor.types import Turn

_MAX_MISSED = 10


def needed_anchors(head: Sequence[Turn], region: Sequence[Turn], after: Sequence[Turn]) -> tuple[str, ...]:
    """The anchors of `region` the kept turns `after` it need (see the module docstring), in
    order of first use."""
    return hidden_needed_anchors([*head, *region, *after], range(len(head), len(head) + len(region)))


def hidden_needed_anchors(turns: Sequence[Turn], hidden: Container[int]) -> tuple[str, ...]:
    """The anchors the kept turns of `turns` need from the `hidden` ones (a summarized region,
    cleared tool results, or both), in order of first use.

    The rule of `needed_anchors`, read along the row: a hidden turn introduces its anchors; a
    kept turn makes its anchors visible, and a kept user or assistant turn needs those it uses
    that a hidden turn before it introduced and no kept turn before it showed. A huge turn is
    read by its head and tail (`huge_turns`).

    Only an anchor a kept user or assistant turn uses can be needed, so those turns (short) are
    read first, whole; every other turn (the hidden ones, most of a summarized row, and the kept
    tool results) is not read whole: it is searched only for the few anchors those turns use
    after the first hidden turn, in one pass (Aho-Corasick), and only the words around each
    occurrence read as anchors (`_kept_anchors`).
    """
    turns = elide_huge_turns(turns)
    hidden_turns = [index for index in range(len(turns)) if index in hidden]
    if not hidden_turns:
        return ()
    kept = [index for index in range(len(turns)) if index not in hidden]
    # The first user or assistant turn to use each anchor, and where in it (the order of use).
    # These turns are short: read whole, quicker than building an automaton of hundreds of anchors.
    first_use: dict[str, tuple[int, int]] = {}
    for index in kept:
        if turns[index].role in ("human", "gpt"):
            for order, anchor in enumerate(anchors_in(_value(turns[index]))):
                if anchor not in first_use:
                    first_use[anchor] = (index, order)
    # Only an anchor first used after a hidden turn can have been introduced before its use.
    used = [anchor for anchor, (index, _) in first_use.items() if index > hidden_turns[0]]
    if not used:
        return ()
    automaton = _automaton(used)
    introduced_at: dict[str, int] = {}  # the first hidden turn to hold each used anchor
    last_first_use = max(first_use[anchor][0] for anchor in used)
    for index in hidden_turns:
        if index > last_first_use or len(introduced_at) == len(used):
            break  # nothing a later hidden turn holds is introduced before its first use
        for anchor in _kept_anchors(_value(turns[index]), automaton, used, introduced_at):
            introduced_at[anchor] = index
    candidates = [anchor for anchor in used if anchor in introduced_at and introduced_at[anchor] < first_use[anchor][0]]
    if not candidates:
        return ()
    # A candidate another kept turn shows before that use is visible there, so not needed.
    last_use = max(first_use[anchor][0] for anchor in candidates)
    automaton = _automaton(candidates)
    shown_before: set[str] = set()
    for index in kept:
        if index >= last_use:
            break
        if turns[index].role in ("human", "gpt"):
            continue
        for anchor in _kept_anchors(_value(turns[index]), automaton, candidates, shown_before):
            if index < first_use[anchor][0]:
                shown_before.add(anchor)
    credentials = RowCredentials(turns)
    needed = [
        anchor
        for anchor in candidates
        if anchor not in shown_before and not credentials.shows(anchor, introduced_at[anchor], first_use[anchor][0])
    ]
    return tuple(sorted(needed, key=first_use.__getitem__))


def _automaton(patterns: list[str]) -> AhoCorasick:
    """An automaton made for one row's search: a contiguous NFA. Its scan is slower than the DFA
    the library picks for a few hundred patterns (33 against 21 ms over 10 MB of results), but
    it builds 2-4x quicker, and a row's search is built for a dozen patterns or so and run over
    that row alone, so the build is what costs."""
    return AhoCorasick(patterns, implementation=Implementation.ContiguousNFA)


def _kept_anchors(text: str, automaton: AhoCorasick, patterns: list[str], settled: Container[str]) -> list[str]:
    """The anchors among `patterns` (but `settled`) that `anchors_in(text)` holds, in its order.

    Tokens never span whitespace, and a JSON escape never starts on it, so `anchors_in` of a text
    is that of its whitespace-separated chunks, in order: each occurrence of a pattern is checked
    against the anchors of the chunk around it (cached: chunks recur), ordered by where that chunk
    starts and where the anchor first appears in it."""
    found: dict[str, tuple[int, int]] = {}
    chunks: dict[int, tuple[int, dict[str, int]]] = {}  # chunk start -> (chunk end, anchor -> order)
    for pattern, start, end in automaton.find_matches_as_indexes(text, overlapping=True):
        anchor = patterns[pattern]
        if anchor in settled or (anchor in found and found[anchor][0] <= start):
            continue
        chunk_start = max(text.rfind(" ", 0, start), text.rfind("\n", 0, start)) + 1
        known = chunks.get(chunk_start)
        if known is None or known[0] < end:
            space, newline = text.find(" ", end), text.find("\n", end)
            chunk_end = min(space if space >= 0 else len(text), newline if newline >= 0 else len(text))
            known = chunks[chunk_start] = (chunk_end, _chunk_anchors(text[chunk_start:chunk_end]))
        order = known[1].get(anchor)
        if order is not None:
            key = (chunk_start, order)
            if anchor not in found or key < found[anchor]:
                found[anchor] = key
    return sorted(found, key=found.__getitem__)


def _read_chunk(chunk: str) -> dict[str, int]:
    """Each anchor of a chunk and its place in the chunk's order (read through `_chunk_anchors`,
    which remembers it: chunks recur; callers only read the dict)."""
    return {anchor: order for order, anchor in enumerate(anchors_in(chunk))}


_chunk_anchors = TextMemo(_read_chunk, entries=1 << 17, max_chars=1 << 20)  # as many as the runs `anchors_in` keeps


@dataclass(frozen=True)
class FutureFidelity:
    """How many of the anchors the later turns need the compressed context still holds."""

    anchors: tuple[str, ...]
    missed: tuple[str, ...]

    @property
    def score(self) -> float | None:
        return 1 - len(self.missed) / len(self.anchors) if self.anchors else None

    def to_metrics(self) -> dict[str, Any]:
        """The metrics line's `fidelity.future`: score (None without needed anchors), their
        count, how many the summary kept, and the first missed ones (credentials masked)."""
        score = self.score
        return {
            "score": None if score is None else round(score, 4),
            "anchors": len(self.anchors),
            "kept": len(self.anchors) - len(self.missed),
            "missed": [shown_item(anchor) for anchor in self.missed[:_MAX_MISSED]],
        }


def score_future(anchors: Sequence[str], context: str) -> FutureFidelity:
    """Which of `anchors` the compressed `context` (a summary) states; a path also counts by a
    tail after a `/` that names no other needed file (`path_names`)."""
    paths = PathNames(anchor for anchor in anchors if "/" in anchor)
    missed = tuple(anchor for anchor in anchors if not _present(anchor, context, paths))
    return FutureFidelity(tuple(anchors), missed)


def future_fidelity(
    head: Sequence[Turn], region: Sequence[Turn], after: Sequence[Turn], context: str
) -> FutureFidelity:
    """The future-grounded fidelity of `context` standing for `region` between `head` and `after`."""
    return score_future(needed_anchors(head, region, after), context)


def hidden_future_fidelity(turns: Sequence[Turn], hidden: Container[int], context: str) -> FutureFidelity:
    """The future-grounded fidelity of `context` (a summary, the placeholders of cleared tool
    results, or both) standing for the `hidden` turns of `turns`."""
    return score_future(hidden_needed_anchors(turns, hidden), context)


def _present(anchor: str, context: str, paths: PathNames) -> bool:
    if occurs(anchor, context):
        return True
    return "/" in anchor and any(occurs(tail, context) for tail in paths.unique(anchor) if "." in tail)


def _value(turn: Turn) -> str:
    return turn.value if isinstance(turn.value, str) else str(turn.value)
