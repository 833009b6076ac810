"""A reply that is nothing but JSON tool calls: a transcript's turn, not a summary (`reply_text`).

A model shown a transcript may answer with the call it would make next, as JSON: in a row, that
is a call no tool made. Kept apart from the markup rules of `reply_text`: it parses JSON.
"""

from __future__ import annotations

import json
import re

import orjson

# A code fence's line: a reply of calls may fence each (```json ... ``` twice).
_FENCE_LINE = re.compile(r"^```[\w-]{0,16}[ \t]*$", re.MULTILINE)
_CALL_KEYS = ("arguments", "parameters", "input", "args")
_DECODER = json.JSONDecoder()


def is_json_tool_call(body: str) -> bool:
    """Whether the whole reply (in code fences or not) is JSON tool calls: objects naming a
    function and its arguments (`{"name": "bash", "arguments": {...}}`, Llama 3's `"parameters"`,
    OpenAI's `{"type": "function", "function": ...}`, `{"tool_calls": [...]}`), lists of them, or
    several one after another (parallel calls a line or a fence each: each a JSON text, the whole
    none). Not a summary, and in a row a call no tool made."""
    text = _FENCE_LINE.sub("", body).strip()
    if text[:1] not in "{[" or text[-1:] not in "}]":
        return False
    try:
        return _all_calls(orjson.loads(text))  # one JSON text: a call, or a list of them
    except orjson.JSONDecodeError:
        pass
    position, found = 0, False
    while position < len(text):  # JSON values one after another, each a call (or a list of them)
        try:
            value, position = _DECODER.raw_decode(text, position)
        except (ValueError, RecursionError):  # RecursionError: nested deeper than the stack
            return False
        if not _all_calls(value):
            return False
        found = True
        while position < len(text) and text[position].isspace():
            position += 1
    return found


def _all_calls(value: object) -> bool:
    """Whether a JSON value is a call, or a non-empty list of calls."""
    calls = value if isinstance(value, list) else [value]
    return bool(calls) and all(_names_a_call(call) for call in calls)


# The keys a call (or the assistant message carrying calls) holds: an object with others is a
# summary that happens to name one of them (`{"goal": ..., "tool_calls": 12}`), kept.
_CALL_OBJECT_KEYS = frozenset(
    {*_CALL_KEYS, "name", "id", "call_id", "type", "function", "tool_calls", "function_call", "role", "content"}
)


def _names_a_call(call: object) -> bool:
    """Whether `call` is a tool call, or a message carrying them: only a call's keys, and a
    function named in one of the shapes trainers and APIs write (a `tool_calls` list of calls, a
    `function` or `function_call` object with its name, a `name` with its arguments)."""
    if not isinstance(call, dict) or not call or not call.keys() <= _CALL_OBJECT_KEYS:
        return False
    calls = call.get("tool_calls")
    if isinstance(calls, list) and calls and all(_names_a_call(item) for item in calls):
        return True
    for key in ("function", "function_call"):
        named = call.get(key)
        if isinstance(named, dict) and named.keys() <= _CALL_OBJECT_KEYS and isinstance(named.get("name"), str):
            return True
    return isinstance(call.get("name"), str) and any(key in call for key in _CALL_KEYS)
