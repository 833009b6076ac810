"""The tool calls a rendered (or decoded) conversation holds, with their arguments as the model reads them.

A call rendered right has its arguments as a JSON object; a call whose arguments were JSON text
rendered through `| tojson` comes out as a JSON string holding the object (double-encoded): the
value parsed here is then a `str`, which is what `assert_calls_are_objects` catches.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from tests.trainers.chat_tokenizers import TemplateName

HERMES_CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)
LLAMA_CALL = re.compile(
    r"<\|start_header_id\|>assistant<\|end_header_id\|>\n\n(\{\"name\": .*?)<\|eo[tm]_id\|>", re.DOTALL
)
DEEPSEEK_CALL = re.compile(r"<｜tool▁call▁begin｜>(.*?)<｜tool▁sep｜>(.*?)<｜tool▁call▁end｜>", re.DOTALL)


@dataclass(frozen=True)
class RenderedCall:
    name: str
    arguments: Any  # the parsed JSON value: a dict when rendered as an object, a str when double-encoded


def rendered_calls(text: str, template: TemplateName) -> list[RenderedCall]:
    """Every tool call in `text`, as template `template` renders calls, in order."""
    if template in ("qwen2.5", "qwen3"):
        # the system prompt's instructions hold an empty and a placeholder <tool_call> block
        bodies = [body for body in HERMES_CALL.findall(text) if body and not body.startswith('{"name": <')]
        calls = [json.loads(body) for body in bodies]
        return [RenderedCall(call["name"], call["arguments"]) for call in calls]
    if template == "llama3.1-style":
        calls = [json.loads(body) for body in LLAMA_CALL.findall(text)]
        return [RenderedCall(call["name"], call["parameters"]) for call in calls]
    return [RenderedCall(name, json.loads(arguments)) for name, arguments in DEEPSEEK_CALL.findall(text)]


def assert_calls_are_objects(text: str, template: TemplateName, expected: int) -> None:
    """`text` holds `expected` tool calls, each with its arguments rendered as a JSON object."""
    calls = rendered_calls(text, template)
    assert len(calls) == expected, f"{len(calls)} tool calls rendered, {expected} expected: {text!r}"
    encoded = [call for call in calls if not isinstance(call.arguments, dict)]
    assert not encoded, f"tool-call arguments rendered as JSON text, not an object (double-encoded): {encoded}"
