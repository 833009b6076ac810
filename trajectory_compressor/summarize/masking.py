"""Masking the pieces readers take out of a region, so that no credential outlives its context.

`redact_secrets` knows a credential by its shape or by what stands around it (`"password": `,
`--token=`, `API_KEY=`). A reader that takes a value out of its turn first (a call's argument, a
line cut at a scan limit, an anchor) loses that context, so every reader masks a turn as written
before it takes pieces out of it, and masks each piece again once decoded (a value written
`\\"pa55\\"` is only recognisable decoded). The digest, the anchor index of both summarizers,
the fidelity items and the needed anchors read a region's turns this way; the masked texts are
remembered, as the same turns are masked by each of them in turn.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import orjson

from trajectory_compressor.summarize.assignment_rules import CREDENTIAL_NAMES
from trajectory_compressor.summarize.known_secrets import (
    called_values,
    json_escaped,
    masked_known,
    row_secrets,
    secret_spans,
    shows_secret,
)
from trajectory_compressor.summarize.redact import (
    REDACTED,
    find_secrets,
    mask_spans,
    merge_spans,
    redact_secrets,
    word_end,
    word_start,
)
from trajectory_compressor.summarize.toolcalls import parse_tool_responses
from trajectory_compressor.summarize.toolcalls.memo import TextMemo
from trajectory_compressor.types import SummaryRequest, Turn

_WHITE_SPACE = re.compile(r"\s")


def _redacted(text: str) -> str:
    """`redact_secrets(text)`, its spans read through `secret_spans`: a row's turns were read
    there for the values known in the row (`RowSecrets`), and are not read again."""
    spans = secret_spans(text)
    return mask_spans(text, spans) if spans else text


redact_remembered = TextMemo(_redacted, entries=1 << 13, max_chars=1 << 20, max_total_chars=1 << 23)
"""`redact_secrets`, remembered for the texts masked last (up to 8 M characters: a long
region's turns, bounded whatever the rows)."""


def unchanged(text: str) -> str:
    """No masking (`--no-redact-secrets`): readers given it take values out as they are."""
    return text


def masked_arguments(arguments: Any, redact: Callable[[str], str]) -> Any:
    """A call's decoded arguments masked as `redact_json_value` masks them, or as they are when
    `redact` is `unchanged` (redaction off). Remembered by the arguments' identity for the calls
    read last: the digest, the anchor ranking and the fidelity items read the same parsed calls
    (the parser remembers them), and mask them alike. The result is shared: read it only."""
    if redact is unchanged:
        return arguments
    key = (id(arguments), id(redact))
    known = _MASKED_ARGUMENTS.get(key)
    if known is not None and known[0] is arguments and known[1] is redact:
        return known[2]
    masked = redact_json_value(arguments, redact)
    if len(_MASKED_ARGUMENTS) >= _MASKED_ENTRIES:
        _MASKED_ARGUMENTS.clear()
    _MASKED_ARGUMENTS[key] = (arguments, redact, masked)  # held: an id is not reused while here
    return masked


_MASKED_ARGUMENTS: dict[tuple[int, int], tuple[Any, Callable[[str], str], Any]] = {}
_MASKED_ENTRIES = 4096


def redact_json_value(value: Any, redact: Callable[[str], str] = redact_secrets, *, secret: bool = False) -> Any:
    """Decoded JSON (a call's arguments) with `redact` applied to every string in it, keys too: a
    credential written `\\"pa55\\"` in the raw JSON is only recognisable decoded. A value that is a
    credential by the key it is given to is masked in the raw JSON, before decoding, when it is a
    string; here the rest: every value under a credential's name (`{"password": ["..."]}`,
    `{"auth": {"password": {"value": "..."}}}`: `secret`), and the items of a list of strings
    that a credential spans read as the command line they are (`["mysql", "--password", "..."]`)."""
    if secret:
        return _masked_whole(value)
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {
            redact(str(key)): redact_json_value(item, redact, secret=bool(_CREDENTIAL_KEY.search(str(key))))
            for key, item in value.items()
        }
    if isinstance(value, list):
        if len(value) > 1 and all(isinstance(item, str) for item in value):
            return _masked_words(value, redact)
        return [redact_json_value(item, redact) for item in value]
    return value


# A JSON key that names a credential: one of the assignment rule's names, ending the key, after a
# separator or a camelCase hump (`webhookSecret`, `dbPassword`; not `bypass`).
_CREDENTIAL_KEY = re.compile(r"(?:^|[_.-]|(?<=[a-z0-9])(?=[A-Z]))(?i:" + CREDENTIAL_NAMES + r")$")


def _masked_whole(value: Any) -> Any:
    """Every scalar of `value` masked (a credential's value, whatever its structure)."""
    if isinstance(value, dict):
        return {key: _masked_whole(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_masked_whole(item) for item in value]
    if value is None or isinstance(value, bool) or value == "":
        return value
    return REDACTED


def _masked_words(words: list[str], redact: Callable[[str], str]) -> list[str]:
    """A list of strings (an argv) with each item a credential found in the joined line touches
    masked whole, the others redacted one by one."""
    spans = find_secrets(" ".join(words))
    if not spans:
        return [redact(word) for word in words]
    masked, start = [], 0
    for word in words:
        end = start + len(word)
        touched = any(span_start < end and span_end > start for span_start, span_end in spans)
        masked.append(REDACTED if touched else redact(word))
        start = end + 1
    return masked


EDGE_CHARS = 256  # how much of each side of a turn boundary is read joined
EDGE_TURNS = 8  # how many turns each side of a boundary that read may run over (short pieces)


def masked_across_turns(texts: Sequence[str]) -> list[str]:
    """`texts` (a region's turns, in order) with each credential that runs across a boundary
    between two of them masked on every side: a tool's output split over two turns can cut a key
    in two (`NEW_TOKEN=ghp_Zq8wXc7vBn` ending one, `6mAs5dFg…` starting the next), and neither piece
    alone is a credential's shape. Up to `EDGE_CHARS` each side of a boundary are read joined
    (widened to whole words), over the turns before and after it while they are shorter than that
    (a key cut over three turns, its middle piece a turn of its own with no white space, up to
    `EDGE_TURNS` a side: reading two turns at a time masked the middle one whole and kept the
    third one's piece). Only a secret found crossing the join, or next to it (its key one side,
    its value the other: `_needs_both_sides`), is masked here; the rest is each turn's own."""
    cuts: list[list[tuple[int, int]]] = [[] for _ in texts]
    for index in range(len(texts) - 1):
        if not texts[index] or not texts[index + 1]:
            continue
        pieces = [*_read_back(texts, index), *_read_on(texts, index + 1)]
        joined = "".join(texts[turn][start:end] for turn, start, end in pieces)
        boundary = sum(end - start for turn, start, end in pieces if turn <= index)
        # Remembered (`secret_spans`): each window of a row reads its region from the head on, and
        # the same boundaries were read again for every window (windows x row).
        for found_start, found_end in secret_spans(joined):
            if _needs_both_sides(joined, boundary, found_start, found_end):
                _cut_pieces(pieces, found_start, found_end, cuts)
    return [mask_spans(text, merge_spans(spans)) if spans else text for text, spans in zip(texts, cuts, strict=True)]


# What may stand between a key or flag and its value (`API_KEY=`, `"password": "`, `--token `).
_BETWEEN_KEY_AND_VALUE = " \t\r\n\"'`:=,"


def _needs_both_sides(joined: str, boundary: int, start: int, end: int) -> bool:
    """Whether a credential found at `joined[start:end]` may have been found only because the two
    sides of `boundary` were read together: it runs across the boundary, or only what separates a
    key from its value lies between them (`DB_PASSWORD=` ending one turn, the value starting the
    next: the value alone has no credential's shape, and was kept), or the value follows the
    boundary with no white space between (its key cut in two: `DB_PASS` | `WORD=value`)."""
    if start <= boundary <= end:
        return True
    if start > boundary and _WHITE_SPACE.search(joined, boundary, start) is None:
        return True
    between = joined[boundary:start] if start > boundary else joined[end:boundary]
    return not between.strip(_BETWEEN_KEY_AND_VALUE)


def _read_back(texts: Sequence[str], index: int) -> list[tuple[int, int, int]]:
    """The pieces `(turn, start, end)` read before a boundary: the end of turn `index`, and of the
    turns before it while the text read is short of `EDGE_CHARS` and the turn read is one word (no
    white space: a credential's middle piece; a turn of words ends any token cut over turns, and
    reading past it joined, say, `Done.` and the next turn's `next` into a token's wrapped line).
    A tool turn of results is read by their outputs, not their markup (`_readable`)."""
    pieces: list[tuple[int, int, int]] = []
    left = EDGE_CHARS
    for turn in range(index, max(-1, index - EDGE_TURNS), -1):
        text = texts[turn]
        low, high = _readable_remembered(text)
        start = max(low, word_start(text, high - left)) if high - low > left else low
        pieces.insert(0, (turn, start, high))
        left -= high - start
        if left <= 0 or not _one_word(text, low, high):
            break
    return pieces


def _read_on(texts: Sequence[str], index: int) -> list[tuple[int, int, int]]:
    """The pieces read after a boundary: the start of turn `index`, and of the turns after it
    while the text read is short of `EDGE_CHARS` and the turn read is one word (`_read_back`)."""
    pieces: list[tuple[int, int, int]] = []
    left = EDGE_CHARS
    for turn in range(index, min(len(texts), index + EDGE_TURNS)):
        text = texts[turn]
        low, high = _readable_remembered(text)
        end = min(high, word_end(text, low + left)) if high - low > left else high
        pieces.append((turn, low, end))
        left -= end - low
        if left <= 0 or not _one_word(text, low, high):
            break
    return pieces


# A tool turn of results as JSON (`<tool_response>\n{"name": …, "content": "…"}\n</tool_response>`,
# as Hermes writes them and as a messages input's tool messages are read), up to the size whose
# parse is remembered (`parse_tool_responses`); a bigger one is read whole, as any other turn.
_MARKUP_CHARS = 64  # a result's tags are looked for in the turn's first and last characters only
_PARSED_CHARS = 1 << 18
_PIECE_CHARS = 512  # how much of a result's text is looked for in the turn, escaped as written
# The field of a result's output when its content is itself JSON (a Hermes terminal's `{"output":
# …, "exit_code": 0}`, an MCP result's text parts).
_OUTPUT_KEYS = ("output", "stdout", "content", "text", "result")
_FIELD_PARSED_CHARS = 1 << 16


def _readable(text: str) -> tuple[int, int]:
    """Where a turn's text is read at a boundary: the whole turn, or, in a tool turn of results as
    JSON, from where its first result's output starts to where its last one's ends, as escaped
    in the turn. A tool's output split over two such turns cut its credential with the markup
    between the pieces (`…ghp_Zq8w"}` / `</tool_response>` / `<tool_response>` / `{"name": …,
    "content": "Xc7v…`), and neither piece was masked."""
    whole = 0, len(text)
    if len(text) > _PARSED_CHARS or (
        "<tool_response>" not in text[:_MARKUP_CHARS] and "</tool_response>" not in text[-_MARKUP_CHARS:]
    ):
        return whole
    responses = parse_tool_responses(text)
    if not responses:
        return whole
    low = _output_edge(text, responses[0].content, at_end=False)
    high = _output_edge(text, responses[-1].content, at_end=True)
    low = 0 if low is None else low
    high = len(text) if high is None else high
    return (low, high) if low <= high else whole


_readable_remembered = TextMemo(_readable, entries=256, max_chars=_PARSED_CHARS)
"""`_readable`, remembered for the turns read last: each turn is read at the boundary before it and
at the one after it."""


def _output_edge(text: str, content: str, *, at_end: bool) -> int | None:
    """Where a result's output (`content`, or the output field of the JSON it holds) ends in
    `text` (`at_end`), or starts: its last (first) `_PIECE_CHARS` characters found as written in
    the turn: escaped twice (a field of JSON in the content string) or once, as orjson or an
    ASCII-only writer escapes it, or with PHP's `\\/`; a block that is no JSON, as it is. None
    when not found."""
    field = _output_field(content)
    for value, nested in ((field, True), (content, False)):
        piece = (value[-_PIECE_CHARS:] if at_end else value[:_PIECE_CHARS]) if value else ""
        if not piece:
            continue
        once = json_escaped(piece)
        forms = [json_escaped(once), once] if nested else [once, piece]  # `piece`: a block of no JSON
        if not piece.isascii():
            forms.append(json.dumps(piece)[1:-1])
        if "/" in piece:
            forms.append(once.replace("/", "\\/"))
        for form in dict.fromkeys(forms):
            index = text.rfind(form) if at_end else text.find(form)
            if index >= 0:
                return index + len(form) if at_end else index
    return None


def _output_field(content: str) -> str | None:
    """The output a result's content holds as JSON (`{"output": …}`, `[{"type": "text", "text":
    …}]`), or None."""
    if not content.startswith(("{", "[")) or len(content) > _FIELD_PARSED_CHARS:
        return None  # a big one is read by its content's edges (its field's markup read with it)
    try:
        data = orjson.loads(content)
    except orjson.JSONDecodeError:
        return None
    if isinstance(data, list) and data and isinstance(data[0], dict):
        data = data[0]
    if isinstance(data, dict):
        return next((value for key in _OUTPUT_KEYS if isinstance(value := data.get(key), str) and value), None)
    return None


def _one_word(text: str, low: int, high: int) -> bool:
    """Whether `text[low:high]` (a turn read whole at a boundary) holds no white space, as written
    or JSON-escaped (`\\n`, `\\t`)."""
    if _WHITE_SPACE.search(text, low, high) is not None:
        return False
    return (low, high) == (0, len(text)) or _ESCAPED_WHITE_SPACE.search(text, low, high) is None


_ESCAPED_WHITE_SPACE = re.compile(r"\\[nrt]")


def _cut_pieces(
    pieces: Sequence[tuple[int, int, int]], start: int, end: int, cuts: list[list[tuple[int, int]]]
) -> None:
    """Record [start, end) of the joined pieces as the spans of their turns it covers."""
    offset = 0
    for turn, piece_start, piece_end in pieces:
        length = piece_end - piece_start
        low, high = max(start, offset), min(end, offset + length)
        if low < high:
            cuts[turn].append((piece_start + low - offset, piece_start + high - offset))
        offset += length


def region_edges(before: Sequence[Turn], after: Sequence[Turn]) -> tuple[str, str]:
    """`SummaryRequest.edges` of a region: the last `EDGE_CHARS` of the turns before it (the end of
    `before`, a slice of up to `EDGE_TURNS` turns) and the first of the turns after it (`after`),
    in whole words, each side read over short turns as `masked_across_turns` reads a boundary."""
    texts = [_text(turn) for turn in (*before, *after)]
    head = "".join(texts[turn][start:end] for turn, start, end in _read_back(texts, len(before) - 1)) if before else ""
    tail = "".join(texts[turn][start:end] for turn, start, end in _read_on(texts, len(before))) if after else ""
    return head, tail


def split_secrets_masked(request: SummaryRequest) -> SummaryRequest:
    """`request` with each credential cut over two of its turns, or over its edge and the turn
    beside it (`request.edges`), masked in its turns (`masked_across_turns`), and each credential
    known in its row (`request.known_secrets`: one a rule masks anywhere, or a value a call read
    out of a credential's file, variable or store, or wrote into one) masked wherever it appears
    in them: read before any summarizer or the anchor index takes a value out of them."""
    turns = request.turns
    texts = [request.edges[0], *(_text(turn) for turn in turns), request.edges[1]]
    roles = [turn.role for turn in turns]
    # Read before any masking: a credential at a turn's end is masked by the pass over its edge,
    # and its value, used bare in the next turn, would be known no more.
    known = row_secrets(texts[1:-1], roles) if request.known_secrets is None else request.known_secrets()
    masked = masked_known(masked_across_turns(texts)[1:-1], roles, known)
    if all(new is _text(turn) for new, turn in zip(masked, turns, strict=True)):
        return request
    return replace(request, turns=tuple(Turn(turn.role, new) for turn, new in zip(turns, masked, strict=True)))


class RowSecrets:
    """`SummaryRequest.known_secrets` of a row's regions: the credentials known anywhere in the row
    (`known_secrets.row_secrets`: the kept head reads `~/.vault-token` or sends a bearer token, a
    region uses the value bare), read when first asked, once: where the request is masked (a
    worker process, the LLM's prompt thread), not where it is built (the run's event loop), and
    once for all the windows of a row."""

    def __init__(self, turns: Sequence[Turn]) -> None:
        self._turns = turns
        self._values: tuple[str, ...] | None = None

    def __call__(self) -> tuple[str, ...]:
        if self._values is None:
            self._values = row_secrets([_text(turn) for turn in self._turns], [turn.role for turn in self._turns])
        return self._values


def _text(turn: Turn) -> str:
    return turn.value if isinstance(turn.value, str) else str(turn.value)


class RowCredentials:
    """Whether an anchor is a credential in a row: some occurrence of it in a turn is masked by
    `redact_secrets`, which reads the turn whole, its keys and flags around the value; or a call
    printed it out of a credential's file or store, or wrote it into one. Only the turns in which
    a rule masks something are searched for an anchor (`secret_spans`, remembered: the row's turns
    were read there for its known values), each masked once; the calls are read once, when first
    needed (a needed anchor is rare). Searching every turn for every candidate anchor made the
    check anchors x row (0.8 of a profiled 14 s on the public runs x 3; now 0.09)."""

    def __init__(self, turns: Sequence[Turn]) -> None:
        self._turns = turns
        self._masked: dict[int, str] = {}
        self._with_secrets: list[int] | None = None
        self._called: tuple[str, ...] | None = None

    def shows(self, anchor: str, *likely: int) -> bool:
        """Whether `anchor` is (part of) a credential anywhere in the row; the turns `likely` to
        show it (the one introducing it, the one using it) are read first."""
        if any(self.hides(anchor, index) for index in likely):
            return True
        if self._with_secrets is None:
            self._with_secrets = [index for index, turn in enumerate(self._turns) if secret_spans(_text(turn))]
        holding = (index for index in self._with_secrets if anchor in _text(self._turns[index]))
        if any(self.hides(anchor, index) for index in holding):
            return True
        if self._called is None:
            texts, roles = [_text(turn) for turn in self._turns], [turn.role for turn in self._turns]
            self._called = called_values(texts, roles)
        return shows_secret(anchor, self._called)

    def hides(self, anchor: str, index: int) -> bool:
        """Whether turn `index` shows `anchor` as (part of) a credential."""
        text = _text(self._turns[index])
        masked = self._masked.get(index)
        if masked is None:
            masked = self._masked[index] = redact_remembered(text)
        return hid(anchor, text, masked)


def hid(anchor: str, text: str, masked: str) -> bool:
    """Whether masking `text` (as `masked`) hid some occurrence of `anchor`: the text shows it as
    (part of) a credential."""
    return masked is not text and masked.count(anchor) != text.count(anchor)
