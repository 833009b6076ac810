"""The tool markup of ShareGPT agent turns, read into calls, results and what was said in words.

Agent trajectories carry their actions as text: `<tool_call>{json}</tool_call>` blocks inside
assistant turns and `<tool_response>...</tool_response>` blocks inside tool turns, with the
model's reasoning in `<think>` blocks. Real data is messy (argument JSON that does not parse,
blocks cut off before their closing tag, tool turns with no markup at all), so every function
here accepts anything and degrades to the raw text instead of raising.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from trajectory_compressor.summarize.toolcalls.memo import TextMemo
from trajectory_compressor.summarize.toolcalls.text import dumps, loads

_STRAY_TAG = re.compile(r"</?(?:tool_call|tool_response)>")
_THINK_BLOCK = re.compile(r"<think>.*?(?:</think>|\Z)", re.S)
_THINK_INNER = re.compile(r"<think>(.*?)(?:</think>|\Z)", re.S)
_NAME_FIELD = re.compile(r'"name"\s*:\s*"((?:[^"\\]|\\.)*)"')
_ARGUMENTS_FIELD = re.compile(r'"(?:arguments|parameters)"\s*:\s*')


@dataclass(frozen=True)
class ToolCall:
    """One `<tool_call>` block: the tool's name and its arguments.

    `arguments` is a dict when the JSON parsed, otherwise the raw argument text, kept so a
    summary can still show what was attempted. `valid` says whether the block parsed cleanly.
    """

    name: str
    arguments: dict[str, Any] | str
    valid: bool = True


@dataclass(frozen=True)
class ToolResponse:
    """One result inside a tool turn; `name` and `tool_call_id` are None when the turn had no JSON."""

    name: str | None
    content: str
    tool_call_id: str | None = None


def parse_tool_calls(gpt_value: str) -> list[ToolCall]:
    """The tool calls in an assistant turn, in order; unparseable blocks keep their raw text.
    (Remembered per turn: the summary and both fidelity scores read the same turns.)"""
    if "<tool_call>" not in gpt_value:
        return []
    return list(_CALLS(gpt_value))


def parse_tool_responses(tool_value: str) -> list[ToolResponse]:
    """The results in a tool turn; a turn without markup is one plain-text result. (Remembered
    per turn, so that the readers of one turn get the same content strings.)"""
    return list(_RESPONSES(tool_value))


def _read_calls(gpt_value: str) -> tuple[ToolCall, ...]:
    calls: list[ToolCall] = []
    for _, _, body in _blocks(gpt_value, "<tool_call>", "</tool_call>"):
        calls.extend(_parse_call_block(body.strip()))
    return tuple(calls)


def _read_responses(tool_value: str) -> tuple[ToolResponse, ...]:
    blocks = [body.strip() for _, _, body in _blocks(tool_value, "<tool_response>", "</tool_response>")]
    if not blocks:
        return (ToolResponse(name=None, content=tool_value.strip()),)
    return tuple(_parse_response_block(block) for block in blocks)


_CALLS = TextMemo(_read_calls)
_RESPONSES = TextMemo(_read_responses)


def strip_think(text: str) -> str:
    """`text` without its `<think>...</think>` reasoning (an unclosed block runs to the end).

    A lone `</think>` means the opening tag lived in the prompt template, so everything before
    it is reasoning too.
    """
    head, sep, tail = text.partition("</think>")
    if sep and "<think>" not in head:
        text = tail
    if "<think>" not in text:
        return text
    return _THINK_BLOCK.sub("", text)


def think_of(text: str) -> str:
    """The reasoning inside `<think>` blocks, joined; used when a turn says nothing else."""
    head, sep, _ = text.partition("</think>")
    if sep and "<think>" not in head:
        return head.strip()
    return "\n".join(m.group(1).strip() for m in _THINK_INNER.finditer(text)).strip()


def prose_of(gpt_value: str) -> str:
    """What an assistant turn says in words: no tool-call blocks, no reasoning."""
    text = strip_think(gpt_value)
    if "<tool_call>" in text:
        kept, position = [], 0
        for start, end, _ in _blocks(text, "<tool_call>", "</tool_call>"):
            kept.append(text[position:start])
            position = end
        text = "".join(kept) + text[position:]
    return _STRAY_TAG.sub("", text).strip()


def said_in(gpt_value: str) -> str:
    """What an assistant turn says: its words (`prose_of`), or its reasoning (`think_of`) when it
    says nothing else. (Remembered per turn: the digest and the anchor ranking read the same turns.)"""
    return _SAID(gpt_value)


def _read_said(gpt_value: str) -> str:
    return prose_of(gpt_value) or (think_of(gpt_value) if "think>" in gpt_value else "")


_SAID = TextMemo(_read_said)


def _blocks(text: str, open_tag: str, close_tag: str) -> list[tuple[int, int, str]]:
    """(start, end, body) of each tagged block.

    A block ends at its closing tag, at the next opening tag, or at the end of the text: the
    last two cover blocks whose closing tag was lost when a run was cut short. Plain `find`
    rather than a lazy regex, because tool results can be tens of kilobytes long.
    """
    found: list[tuple[int, int, str]] = []
    start = text.find(open_tag)
    while start >= 0:
        body_start = start + len(open_tag)
        close = text.find(close_tag, body_start)
        following = text.find(open_tag, body_start)
        if close >= 0 and (following < 0 or close < following):
            found.append((start, close + len(close_tag), text[body_start:close]))
            start = text.find(open_tag, close + len(close_tag))
        else:
            end = following if following >= 0 else len(text)
            found.append((start, end, text[body_start:end]))
            start = following
    return found


def _parse_call_block(body: str) -> list[ToolCall]:
    data = loads(body) if body.startswith(("{", "[")) else None
    if isinstance(data, dict):
        return [_call_from_dict(data)]
    if isinstance(data, list) and data and all(isinstance(item, dict) for item in data):
        return [_call_from_dict(item) for item in data]
    # Invalid or truncated JSON: salvage the name and the argument text.
    name_match = _NAME_FIELD.search(body)
    name = _json_string(name_match.group(1)) if name_match else "unknown"
    args_match = _ARGUMENTS_FIELD.search(body)
    raw = body[args_match.end() :] if args_match else body
    raw = raw.strip()
    if args_match and raw.endswith("}") and raw.count("{") < raw.count("}"):
        raw = raw[:-1].rstrip()  # the outer object's closing brace
    parsed = loads(raw) if raw.startswith("{") else None
    if isinstance(parsed, dict):
        return [ToolCall(name=name, arguments=parsed, valid=False)]
    return [ToolCall(name=name, arguments=raw, valid=False)]


def _call_from_dict(data: dict[str, Any]) -> ToolCall:
    function = data.get("function")
    if isinstance(function, dict):  # OpenAI shape: {"type": "function", "function": {...}}
        data = function
    name = data.get("name")
    arguments = data.get("arguments", data.get("parameters"))
    valid = True
    if arguments is None:
        arguments = {}
    elif isinstance(arguments, str):
        parsed = loads(arguments) if arguments.strip().startswith("{") else None
        if isinstance(parsed, dict):
            arguments = parsed
        else:
            valid = not arguments.strip()
            arguments = arguments if arguments.strip() else {}
    elif not isinstance(arguments, dict):
        arguments = dumps(arguments)
    return ToolCall(name=str(name) if name else "unknown", arguments=arguments, valid=valid and bool(name))


def _json_string(escaped: str) -> str:
    decoded = loads(f'"{escaped}"')
    return decoded if isinstance(decoded, str) else escaped


def _parse_response_block(body: str) -> ToolResponse:
    data = loads(body) if body.startswith("{") else None
    if isinstance(data, dict) and ("content" in data or "tool_call_id" in data):
        content = data.get("content")
        text = "" if content is None else content if isinstance(content, str) else dumps(content)
        name = data.get("name")
        call_id = data.get("tool_call_id")
        return ToolResponse(
            name=str(name) if name else None, content=text, tool_call_id=str(call_id) if call_id else None
        )
    return ToolResponse(name=None, content=body)
