"""Hermes tool markup back into structured calls and results: the inverse of `formats`' rendering.

The reader (`read.formats`) renders an OpenAI assistant message's ``tool_calls`` into its text
as ``<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>`` blocks (after the content,
each on its own line) and a ``tool`` message into ``<tool_response>\\n{"tool_call_id": ...,
"name": ..., "content": ...}\\n</tool_response>``. ShareGPT agent data is written the same way.
This module takes such text apart again, for writing a ShareGPT row as OpenAI messages
(`read.convert_format`). It is pure: strings in, small records out, and it never raises.

What is structured, and what stays text (so nothing is lost, and every structured call is one
that trainers' loaders accept: axolotl ``json.loads`` every ``arguments`` string and fails the
dataset on one that does not parse):

- a ``<tool_call>`` block is a call when its body is a JSON object with a string ``name``, an
  ``arguments`` that is an object (or the JSON text of one, kept verbatim; missing or null is
  ``{}``) and at most an ``id`` besides. Any other block (JSON that does not parse, raw-string
  arguments, a list, unknown keys, a block with no closing tag) stays in the content as text,
  verbatim, where it was;
- a leading ``<think>...</think>`` block is text: a ``<tool_call>`` inside the reasoning is not
  a call;
- the text around the calls becomes the content: the newline the reader puts between the
  content and each block is taken off, whitespace between and after calls is dropped, and text
  after a call moves before the calls (OpenAI messages hold the content first);
- a ``<tool_response>`` block is a result: its body as ``tool_call_id`` / ``name`` /
  ``content`` when it is a JSON object of those keys with ``content`` (a non-string content
  becomes its JSON text: a tool message's content is a string), else the body itself as the
  content. A tool turn with text outside its blocks, an unclosed block, or no block at all is
  one result holding the whole text.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import orjson

from trajectory_compressor.read.jsonl import holds_float

CALL_OPEN, CALL_CLOSE = "<tool_call>", "</tool_call>"
RESPONSE_OPEN, RESPONSE_CLOSE = "<tool_response>", "</tool_response>"
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
_CALL_KEYS = frozenset({"name", "arguments", "id"})
_RESPONSE_KEYS = frozenset({"tool_call_id", "name", "content"})
_JSON_OBJECT_START = re.compile(r"\s*\{")  # what `body.strip().startswith("{")` says, without copying a huge body
_DECODER = json.JSONDecoder()  # json.loads' own settings
_JSON_SPACE = re.compile(r"[ \t\n\r]*")  # the whitespace json.loads allows around a value
_COPIED_BODY_CHARS = 1 << 20  # a longer block body is decoded in place, never copied


@dataclass(frozen=True)
class HermesCall:
    """One structured tool call: `arguments` is the JSON text of an object, as OpenAI carries it."""

    name: str
    arguments: str
    call_id: str | None = None  # an "id" the block itself carried


@dataclass(frozen=True)
class AssistantParts:
    """An assistant value taken apart: its text (None when empty and there are calls) and its calls."""

    content: str | None
    calls: tuple[HermesCall, ...]


@dataclass(frozen=True)
class HermesResult:
    """One tool result: its text, and the call it names (by function name, by id) when it says."""

    content: str
    name: str | None = None
    call_id: str | None = None


def split_assistant(value: str) -> AssistantParts:
    """The content and the structured calls of an assistant value (see the module docstring)."""
    start = _reasoning_end(value)
    pieces: list[str] = []  # text before, between and after the structured calls
    calls: list[HermesCall] = []
    text_from = 0
    for block_start, block_end, body in _closed_blocks(value, CALL_OPEN, CALL_CLOSE, start):
        call = _call(body)
        if call is None:
            continue  # stays in the text around it
        pieces.append(value[text_from:block_start])
        calls.append(call)
        text_from = block_end
    if not calls:
        return AssistantParts(content=value, calls=())
    pieces.append(value[text_from:])
    kept = [_drop_suffix(pieces[0], "\n")] if _drop_suffix(pieces[0], "\n") else []
    for piece in pieces[1:]:
        piece = _drop_suffix(_drop_prefix(piece, "\n"), "\n")
        if piece.strip():
            kept.append(piece)
    content = "\n".join(kept)
    return AssistantParts(content=content or None, calls=tuple(calls))


def split_tool(value: str) -> tuple[HermesResult, ...]:
    """The results of a tool value, one per ``<tool_response>`` block (see the module docstring)."""
    whole = _whole_block_result(value)
    return (whole,) if whole is not None else _split_blocks(value)


def _whole_block_result(value: str) -> HermesResult | None:
    """The result of a value that is one block and nothing else (the reader's own rendering of a
    tool message, and most agent data), or None for any other value.

    What `_split_blocks` makes of such a value, for less: no scan for blocks, and a body up to
    `_COPIED_BODY_CHARS` decoded as a copy with `parse_json` (orjson), about twice as fast as
    the standard library in place. This runs on every tool turn pruning looks at.
    """
    body_start, body_end = len(RESPONSE_OPEN), len(value) - len(RESPONSE_CLOSE)
    if (
        not value.startswith(RESPONSE_OPEN)
        or not value.endswith(RESPONSE_CLOSE)
        or body_end - body_start > _COPIED_BODY_CHARS
        or value.find(RESPONSE_OPEN, body_start) >= 0
        or value.find(RESPONSE_CLOSE, body_start) != body_end
    ):
        return None
    body = value[body_start:body_end]
    return _result_of(_result_json(body) if _JSON_OBJECT_START.match(body) else None, body)


def _result_json(body: str) -> Any:
    """`parse_json(body)` as far as `_result_of` can tell: orjson's value unless the standard
    library's could differ where it is read. Only a non-string `content` is written out from
    the value (a float in `name` or `tool_call_id` fails the string check whichever decoder
    made it), so only there does a float send the body to `parse_json`."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return parse_json(body)
    if isinstance(data, dict):
        content = data.get("content")
        if type(content) is not str and holds_float(content):
            return parse_json(body)
    return data


def _split_blocks(value: str) -> tuple[HermesResult, ...]:
    blocks = _block_spans(value, RESPONSE_OPEN, RESPONSE_CLOSE, 0)
    outside, position = [], 0
    for block_start, block_end, _, _ in blocks:
        outside.append(value[position:block_start])
        position = block_end
    outside.append(value[position:])
    if not blocks or any(piece.strip() for piece in outside):
        return (HermesResult(content=value),)
    return tuple(_result(value, body_start, body_end) for _, _, body_start, body_end in blocks)


def parse_json(text: str) -> Any:
    """The JSON value of `text`, or None when it is not JSON.

    orjson first (several times faster: every tool result of a row is parsed when it is pruned
    or converted); the standard library for what orjson refuses (NaN, Infinity, lone surrogate
    escapes, deep nesting) and for any value holding a float, since orjson turns an integer
    beyond 64 bits into one: the value is always exactly what `json.loads` returns.
    """
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        value = None
    else:
        if not holds_float(value):
            return value
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def arguments_object(arguments: Any) -> dict[str, Any] | None:
    """Call arguments as the object they are or encode, or None when they are neither. Blank
    text is no arguments (`{}`): some servers write `""` for a call that takes none."""
    if isinstance(arguments, dict):
        return arguments
    if isinstance(arguments, str) and not arguments.strip():
        return {}
    if isinstance(arguments, str) and arguments.lstrip().startswith("{"):
        parsed = parse_json(arguments)
        return parsed if isinstance(parsed, dict) else None
    return None


# --- parts --------------------------------------------------------------------------------------


def _reasoning_end(value: str) -> int:
    """Where a leading ``<think>...</think>`` block ends (0 when there is none): it is never markup."""
    if not value.lstrip().startswith(THINK_OPEN):
        return 0
    close = value.find(THINK_CLOSE)
    return close + len(THINK_CLOSE) if close >= 0 else len(value)


def _closed_blocks(text: str, open_tag: str, close_tag: str, start: int) -> list[tuple[int, int, str]]:
    """(start, end, body) of each block from `start` on that is closed before the next one opens."""
    return [
        (begin, end, text[body_start:body_end])
        for begin, end, body_start, body_end in _block_spans(text, open_tag, close_tag, start)
    ]


def _block_spans(text: str, open_tag: str, close_tag: str, start: int) -> list[tuple[int, int, int, int]]:
    """(start, end, body start, body end) of each block from `start` on that is closed before the
    next one opens.

    A block cut short (no closing tag before the next opening tag or the end) is not a block:
    its text stays where it is. Plain `find`: tool results can be tens of kilobytes long.
    """
    found: list[tuple[int, int, int, int]] = []
    begin = text.find(open_tag, start)
    while begin >= 0:
        body_start = begin + len(open_tag)
        close = text.find(close_tag, body_start)
        following = text.find(open_tag, body_start)
        if close < 0:
            break
        if 0 <= following < close:
            begin = following
            continue
        found.append((begin, close + len(close_tag), body_start, close))
        begin = text.find(open_tag, close + len(close_tag))
    return found


def _call(body: str) -> HermesCall | None:
    data = parse_json(body) if _JSON_OBJECT_START.match(body) else None
    if not isinstance(data, dict) or not set(data) <= _CALL_KEYS or not isinstance(data.get("name"), str):
        return None
    call_id = data.get("id")
    if call_id is not None and not isinstance(call_id, str):
        return None
    arguments = data.get("arguments")
    text: str | None
    if arguments is None:
        text = "{}"
    elif isinstance(arguments, dict):
        text = json_text(arguments)  # None: nested past what the encoder recurses through
    elif arguments_object(arguments) is not None:
        text = arguments if arguments.strip() else "{}"  # the JSON text of an object, kept as written
    else:
        return None  # a raw string, a list, a number: not arguments a loader can parse
    return None if text is None else HermesCall(name=data["name"], arguments=text, call_id=call_id)


def json_text(value: Any) -> str | None:
    """`value` as `json.dumps` writes it, or None when it nests past the recursion limit (a
    tool's 1000-deep `[[[...]]]`, which the parsers take: it stopped the run)."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except RecursionError:
        return None


def _result(text: str, start: int, end: int) -> HermesResult:
    """The result whose block body is text[start:end]: decoded in place, so a huge body (a log of
    tens of megabytes) is not copied before its JSON is read."""
    return _result_of(_json_object_in(text, start, end), text, start, end)


def _result_of(data: Any, text: str, start: int = 0, end: int | None = None) -> HermesResult:
    """The result of a block whose body, text[start:end], decodes to `data` (None: not JSON)."""
    if isinstance(data, dict) and "content" in data and set(data) <= _RESPONSE_KEYS:
        name, call_id, content = data.get("name"), data.get("tool_call_id"), data["content"]
        if (name is None or isinstance(name, str)) and (call_id is None or isinstance(call_id, str)):
            content = content if isinstance(content, str) else json_text(content)
            if content is not None:
                return HermesResult(content=content, name=name, call_id=call_id)
    return HermesResult(content=_drop_suffix(_drop_prefix(text[start:end], "\n"), "\n"))


def _json_object_in(text: str, start: int, end: int) -> Any:
    """What `parse_json(text[start:end])` gives when that text is a JSON object (whitespace around
    it allowed), else None; read in place with `raw_decode`."""
    opening = _JSON_SPACE.match(text, start, end)
    if opening is None or not text.startswith("{", opening.end(), end):
        return None
    try:
        value, stop = _DECODER.raw_decode(text, opening.end())
    except (ValueError, RecursionError):
        return None
    trailing = _JSON_SPACE.match(text, stop, end) if stop <= end else None
    return value if trailing is not None and trailing.end() == end else None


def _drop_prefix(text: str, prefix: str) -> str:
    return text[len(prefix) :] if text.startswith(prefix) else text


def _drop_suffix(text: str, suffix: str) -> str:
    return text[: -len(suffix)] if text.endswith(suffix) else text
