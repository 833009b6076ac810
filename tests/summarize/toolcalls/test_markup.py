"""Parsing tool markup on the messy shapes real trajectories have: calls, results, reasoning, prose."""

from __future__ import annotations

import json

from trajectory_compressor.summarize.toolcalls import (
    ToolCall,
    ToolResponse,
    parse_tool_calls,
    parse_tool_responses,
    prose_of,
    strip_think,
    think_of,
)


def call_block(name: str, arguments: object) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


def response_block(name: str, content: object, call_id: str = "call_1") -> str:
    payload = {"tool_call_id": call_id, "name": name, "content": content}
    return "<tool_response>\n" + json.dumps(payload) + "\n</tool_response>"


# --- parse_tool_calls -------------------------------------------------------------------------


def test_parses_calls_in_order_with_text_around_them() -> None:
    value = "Let me look.\n" + call_block("bash", {"command": "ls"}) + call_block("read", {"path": "a.py"})
    assert parse_tool_calls(value) == [
        ToolCall("bash", {"command": "ls"}),
        ToolCall("read", {"path": "a.py"}),
    ]


def test_no_markup_means_no_calls() -> None:
    assert parse_tool_calls("Just an answer, no tools.") == []


def test_invalid_argument_json_keeps_name_and_raw_text() -> None:
    value = '<tool_call>\n{"name": "bash", "arguments": {"command": "grep -n "x" a.py"}}\n</tool_call>'
    [call] = parse_tool_calls(value)
    assert call.name == "bash"
    assert call.valid is False
    assert isinstance(call.arguments, str)
    assert 'grep -n "x" a.py' in call.arguments


def test_arguments_given_as_a_json_string_are_decoded() -> None:
    value = call_block("bash", json.dumps({"command": "pwd"}))
    assert parse_tool_calls(value) == [ToolCall("bash", {"command": "pwd"})]


def test_arguments_string_that_is_not_json_is_kept_raw() -> None:
    [call] = parse_tool_calls(call_block("bash", "{command: ls -la"))
    assert call == ToolCall("bash", "{command: ls -la", valid=False)


def test_unterminated_block_at_the_end_is_parsed() -> None:
    value = 'Running it.\n<tool_call>\n{"name": "bash", "arguments": {"command": "make test"}}'
    assert parse_tool_calls(value) == [ToolCall("bash", {"command": "make test"})]


def test_unterminated_block_stops_at_the_next_opening_tag() -> None:
    value = '<tool_call>{"name": "a", "arguments": {"x": 1}}<tool_call>{"name": "b", "arguments": {"y": 2}}</tool_call>'
    assert [c.name for c in parse_tool_calls(value)] == ["a", "b"]


def test_truncated_json_salvages_arguments_when_only_the_outer_brace_is_missing() -> None:
    value = '<tool_call>{"name": "bash", "arguments": {"command": "ls"}</tool_call>'
    [call] = parse_tool_calls(value)
    assert call.name == "bash"
    assert call.arguments == {"command": "ls"}
    assert call.valid is False


def test_block_without_a_name_is_unknown_but_kept() -> None:
    [call] = parse_tool_calls("<tool_call>not json at all</tool_call>")
    assert call.name == "unknown"
    assert call.arguments == "not json at all"


def test_openai_function_shape_is_understood() -> None:
    body = {"type": "function", "function": {"name": "search", "arguments": '{"q": "café"}'}}
    value = "<tool_call>" + json.dumps(body, ensure_ascii=False) + "</tool_call>"
    assert parse_tool_calls(value) == [ToolCall("search", {"q": "café"})]


# --- parse_tool_responses ---------------------------------------------------------------------


def test_json_response_with_text_content() -> None:
    value = response_block("bash", "<returncode>0</returncode>\n<output>\nhi\n</output>", "c9")
    assert parse_tool_responses(value) == [
        ToolResponse("bash", "<returncode>0</returncode>\n<output>\nhi\n</output>", "c9")
    ]


def test_structured_content_becomes_json_text() -> None:
    [response] = parse_tool_responses(response_block("get_user", {"name": "Zoë", "ids": [1, 2]}))
    assert json.loads(response.content) == {"name": "Zoë", "ids": [1, 2]}
    assert "Zoë" in response.content  # non-ASCII kept as is, not \\u-escaped


def test_several_blocks_in_one_tool_turn() -> None:
    value = response_block("a", "one", "c1") + "\n" + response_block("b", "two", "c2")
    assert [(r.name, r.content) for r in parse_tool_responses(value)] == [("a", "one"), ("b", "two")]


def test_plain_text_block_and_missing_markup() -> None:
    assert parse_tool_responses("<tool_response>\nplain output\n</tool_response>") == [
        ToolResponse(None, "plain output")
    ]
    assert parse_tool_responses("  raw tool output  ") == [ToolResponse(None, "raw tool output")]


def test_unterminated_response_block() -> None:
    [response] = parse_tool_responses('<tool_response>{"name": "bash", "content": "partial')
    assert response.name is None
    assert "partial" in response.content


# --- think and prose --------------------------------------------------------------------------


def test_strip_think_variants() -> None:
    assert strip_think("<think>plan</think>Answer").strip() == "Answer"
    assert strip_think("Before<think>never closed") == "Before"
    assert strip_think("reasoning only</think>Answer") == "Answer"
    assert strip_think("No reasoning here") == "No reasoning here"


def test_think_of_returns_the_reasoning() -> None:
    assert think_of("<think>\nfirst check a.py\n</think>text") == "first check a.py"
    assert think_of("prompt-side reasoning</think>text") == "prompt-side reasoning"
    assert think_of("nothing") == ""


def test_prose_drops_calls_and_reasoning() -> None:
    value = "<think>hmm</think>I will list files.\n" + call_block("bash", {"command": "ls"}) + "\nDone?"
    assert " ".join(prose_of(value).split()) == "I will list files. Done?"
