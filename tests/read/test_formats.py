"""ShareGPT and OpenAI conversations: detection, mapping to `Turn`s, precise errors, faithful rebuild."""

from __future__ import annotations

import json
import re
from typing import Any

import orjson
import pytest

from trajectory_compressor.read.formats import (
    ConversationFormat,
    EditedTurn,
    KeptTurn,
    NewTurn,
    RecordError,
    chat_messages,
    detect_format,
    from_turns,
    record_tools,
    template_messages,
    to_turns,
)
from trajectory_compressor.types import Turn

SHAREGPT = ConversationFormat("sharegpt", "conversations")
OPENAI = ConversationFormat("openai", "messages")


def openai_record() -> dict[str, Any]:
    return {
        "id": "run-1",
        "tools": [{"type": "function", "function": {"name": "bash"}}],
        "messages": [
            {"role": "system", "content": "You are an agent."},
            {"role": "user", "content": [{"type": "text", "text": "Fix it."}, {"type": "text", "text": "Please."}]},
            {
                "role": "assistant",
                "content": "Running tests.",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "bash", "arguments": '{"command": "pytest -q"}'},
                    }
                ],
                "weight": 1,
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "3 passed"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c2", "type": "function", "function": {"name": "read", "arguments": "not json"}},
                    {"id": "c3", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
                ],
            },
            {"role": "tool", "tool_call_id": "c2", "name": "read", "content": [{"type": "text", "text": "body"}]},
            {"role": "assistant", "content": "Done."},
        ],
    }


def sharegpt_record() -> dict[str, Any]:
    return {
        "id": 7,
        "conversations": [
            {"from": "system", "value": "sys"},
            {"from": "human", "value": "task"},
            {"from": "gpt", "value": "call", "weight": 0},
            {"from": "tool", "value": "result"},
            {"from": "gpt", "value": "answer", "weight": 1},
        ],
        "source": "unit",
    }


# --- detection ---------------------------------------------------------------------------------


def test_detects_both_formats_and_explicit_overrides() -> None:
    assert detect_format(sharegpt_record()) == SHAREGPT
    assert detect_format(openai_record()) == OPENAI
    # OpenAI messages kept under "conversations" (seen in the wild) are told apart by their keys
    mixed = {"conversations": [{"role": "user", "content": "x"}]}
    assert detect_format(mixed) == ConversationFormat("openai", "conversations")
    assert detect_format({"dialog": [{"from": "human", "value": "x"}]}, conversation_key="dialog") == (
        ConversationFormat("sharegpt", "dialog")
    )
    assert detect_format({"messages": []}, fmt="sharegpt") == ConversationFormat("sharegpt", "messages")
    assert detect_format({"messages": []}) == OPENAI


@pytest.mark.parametrize(
    ("record", "kwargs", "message"),
    [
        ([1, 2], {}, "record is not an object (got array)"),
        ({"text": "x"}, {}, "missing conversation list"),
        ({"conversations": []}, {"conversation_key": "turns"}, "missing conversation list 'turns'"),
    ],
)
def test_detection_errors(record: Any, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(RecordError) as info:
        detect_format(record, **kwargs)
    assert message in str(info.value)


def test_unknown_format_name_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="unknown conversation format"):
        detect_format({"messages": []}, fmt="chatml")


# --- to_turns ----------------------------------------------------------------------------------


def test_sharegpt_turns() -> None:
    turns = to_turns(sharegpt_record(), SHAREGPT)
    assert [(t.role, t.value) for t in turns] == [
        ("system", "sys"),
        ("human", "task"),
        ("gpt", "call"),
        ("tool", "result"),
        ("gpt", "answer"),
    ]


def test_openai_turns_render_parts_tool_calls_and_tool_results() -> None:
    turns = to_turns(openai_record(), OPENAI)
    assert [t.role for t in turns] == ["system", "human", "gpt", "tool", "gpt", "tool", "gpt"]
    assert turns[1].value == "Fix it.\nPlease."
    assert turns[2].value == (
        'Running tests.\n<tool_call>\n{"name": "bash", "arguments": {"command": "pytest -q"}}\n</tool_call>'
    )
    # the tool result is named after the call it answers
    assert turns[3].value == (
        '<tool_response>\n{"tool_call_id": "call_1", "name": "bash", "content": "3 passed"}\n</tool_response>'
    )
    # null content: just the calls; arguments that are not JSON stay a string
    assert turns[4].value == (
        '<tool_call>\n{"name": "read", "arguments": "not json"}\n</tool_call>\n'
        '<tool_call>\n{"name": "ls", "arguments": {}}\n</tool_call>'
    )
    payload = json.loads(turns[5].value.removeprefix("<tool_response>\n").removesuffix("\n</tool_response>"))
    assert payload == {"tool_call_id": "c2", "name": "read", "content": "body"}
    assert turns[6] == Turn("gpt", "Done.")


def test_openai_developer_role_reads_as_system() -> None:
    assert to_turns({"messages": [{"role": "developer", "content": "d"}]}, OPENAI) == [Turn("system", "d")]


def test_openai_parquet_style_nulls_are_accepted() -> None:
    # a columnar round trip gives every message every key, null where it was absent
    record = {
        "messages": [
            {"role": "user", "content": "hi", "tool_calls": None, "tool_call_id": None, "name": None},
            {"role": "tool", "content": "out", "tool_calls": None, "tool_call_id": None, "name": None},
        ]
    }
    turns = to_turns(record, OPENAI)
    assert turns[0] == Turn("human", "hi")
    assert turns[1].value == '<tool_response>\n{"content": "out"}\n</tool_response>'


@pytest.mark.parametrize(
    ("conversation", "message"),
    [
        ("not a list", "'conversations' is not a list (got string)"),
        ([{"from": "human", "value": "ok"}, "text"], "turn 1: not an object (got string)"),
        ([{"value": "x"}], "turn 0: missing 'from'"),
        ([{"from": "gpt"}], "turn 0: missing 'value'"),
        ([{"from": "human", "value": "a"}, {"from": "robot", "value": "x"}], "turn 1: unknown role 'robot'"),
        ([{"from": ["human"], "value": "x"}], "turn 0: unknown role ['human']"),  # unhashable: no crash
        ([{"from": {"a": 1}, "value": "x"}], "turn 0: unknown role {'a': 1}"),
        ([{"from": "human", "value": None}], "turn 0: 'value' is not a string (got null)"),
        ([{"from": "human", "value": ["x"]}], "turn 0: 'value' is not a string (got array)"),
    ],
)
def test_sharegpt_errors_name_the_turn(conversation: Any, message: str) -> None:
    with pytest.raises(RecordError) as info:
        to_turns({"conversations": conversation}, SHAREGPT)
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("messages", "message"),
    [
        ([{"role": "user", "content": "a"}, 3], "turn 1: not an object (got int)"),
        ([{"content": "x"}], "turn 0: missing 'role'"),
        ([{"role": "user"}], "turn 0: missing 'content'"),
        ([{"role": "user", "content": "a"}, {"role": "robot", "content": "x"}], "turn 1: unknown role 'robot'"),
        ([{"role": "user", "content": None}], "turn 0: 'content' is null"),
        ([{"role": "assistant", "content": None}], "turn 0: 'content' is null"),
        ([{"role": "assistant", "content": None, "tool_calls": []}], "turn 0: 'content' is null"),
        ([{"role": "user", "content": 5}], "turn 0: 'content' is not a string or a list of parts"),
        ([{"role": "user", "content": ["x"]}], "turn 0: content part 0 is not an object"),
        (
            [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}],
            "turn 0: content part 0 has unsupported type 'image_url'",
        ),
        ([{"role": "user", "content": [{"type": "text"}]}], "turn 0: content part 0 has no string 'text'"),
        ([{"role": "assistant", "content": None, "tool_calls": "x"}], "turn 0: 'tool_calls' is not a list"),
        (
            [{"role": "assistant", "content": None, "tool_calls": [{"function": {}}]}],
            "turn 0: tool_calls[0] has no function name",
        ),
    ],
)
def test_openai_errors_name_the_turn(messages: Any, message: str) -> None:
    with pytest.raises(RecordError) as info:
        to_turns({"messages": messages}, OPENAI)
    assert message in str(info.value)


def test_record_level_errors() -> None:
    with pytest.raises(RecordError, match="record is not an object"):
        to_turns("text", SHAREGPT)
    with pytest.raises(RecordError, match="missing conversation list 'messages'"):
        to_turns({"conversations": []}, OPENAI)


@pytest.mark.parametrize(("record", "fmt"), [({"conversations": []}, SHAREGPT), ({"messages": []}, OPENAI)])
def test_a_conversation_with_no_turns_is_an_error_naming_its_key(record: dict[str, Any], fmt: Any) -> None:
    """No turns is no conversation, as no key is: a chat template and TRL index the first message."""
    with pytest.raises(RecordError, match=f"empty conversation: '{fmt.key}' holds no turns"):
        to_turns(record, fmt)


# --- from_turns --------------------------------------------------------------------------------


def test_openai_rebuild_keeps_messages_byte_identical_and_record_keys() -> None:
    record = openai_record()
    before = orjson.dumps(record)
    notice = "\n\nSome earlier turns were summarized."
    items = [
        EditedTurn(0, "You are an agent." + notice),
        KeptTurn(1),
        NewTurn(Turn("human", "[CONTEXT SUMMARY]: tests ran")),
        KeptTurn(5),
        KeptTurn(6),
    ]
    out = from_turns(record, OPENAI, items)

    assert orjson.dumps(record) == before, "the input record is not modified"
    assert list(out) == list(record)
    assert out["tools"] is record["tools"] and out["id"] == "run-1"
    messages = out["messages"]
    assert messages[0] == {"role": "system", "content": "You are an agent." + notice}
    assert messages[2] == {"role": "user", "content": "[CONTEXT SUMMARY]: tests ran"}
    for new_position, old_position in ((1, 1), (3, 5), (4, 6)):
        assert messages[new_position] is record["messages"][old_position]
        assert orjson.dumps(messages[new_position]) == orjson.dumps(record["messages"][old_position])
    # and the result reads back to the expected turns
    assert [t.role for t in to_turns(out, OPENAI)] == ["system", "human", "human", "tool", "gpt"]


def test_sharegpt_rebuild_keeps_extra_keys_and_order() -> None:
    record = sharegpt_record()
    record["conversations"][0]["weight"] = 0
    items = [EditedTurn(0, "sys + notice"), KeptTurn(1), NewTurn(Turn("human", "summary")), KeptTurn(4)]
    out = from_turns(record, SHAREGPT, items)
    assert list(out) == ["id", "conversations", "source"]
    turns = out["conversations"]
    assert turns[0] == {"from": "system", "value": "sys + notice", "weight": 0}
    assert list(turns[0]) == ["from", "value", "weight"]
    assert turns[1] is record["conversations"][1]
    assert turns[2] == {"from": "human", "value": "summary"}
    assert turns[3] is record["conversations"][4]
    assert record["conversations"][0]["value"] == "sys"


def test_new_turn_roles_map_to_openai_roles() -> None:
    items = [NewTurn(Turn(role, "x")) for role in ("system", "human", "gpt", "tool")]
    out = from_turns({"messages": []}, OPENAI, items)
    assert [m["role"] for m in out["messages"]] == ["system", "user", "assistant", "tool"]


def test_rebuild_rejects_bad_items() -> None:
    record = openai_record()
    with pytest.raises(IndexError):
        from_turns(record, OPENAI, [KeptTurn(99)])
    with pytest.raises(ValueError, match="tool call"):
        from_turns(record, OPENAI, [EditedTurn(2, "x")])
    with pytest.raises(ValueError, match="tool call"):
        from_turns(record, OPENAI, [EditedTurn(3, "x")])
    with pytest.raises(TypeError):
        from_turns(record, OPENAI, [("keep", 0)])  # type: ignore[list-item]


def test_chat_messages_for_chat_templates() -> None:
    turns = [Turn("system", "s"), Turn("human", "h"), Turn("gpt", "g"), Turn("tool", "t")]
    assert chat_messages(turns) == [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "h"},
        {"role": "assistant", "content": "g"},
        {"role": "tool", "content": "t"},
    ]


def test_template_messages_are_the_records_own_messages_as_written_text_parts_as_one_text() -> None:
    record = openai_record()
    messages = template_messages(record, OPENAI)
    parts = [1, 5]  # content given as a list of text parts: the text the reader reads (Qwen's template stops on a list)
    assert [messages[i]["content"] for i in parts] == ["Fix it.\nPlease.", "body"]
    assert [to_turns(record, OPENAI)[1].value] == [messages[1]["content"]]
    assert all(messages[i] == {**record["messages"][i], "content": messages[i]["content"]} for i in parts)
    assert all(a is b for i, (a, b) in enumerate(zip(messages, record["messages"], strict=True)) if i not in parts)
    turns = [("system", "s"), ("human", "h"), ("gpt", "g"), ("tool", "t")]
    sharegpt = {"conversations": [{"from": role, "value": value, "weight": 0} for role, value in turns]}
    assert template_messages(sharegpt, SHAREGPT) == [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "h"},
        {"role": "assistant", "content": "g"},
        {"role": "tool", "content": "t"},
    ]
    # A rewritten row's messages are those the writer writes: the summary a new user message.
    summary = NewTurn(Turn("human", "[CONTEXT SUMMARY]: x"))
    rebuilt = from_turns(record, OPENAI, [EditedTurn(0, "sys + notice"), summary])
    assert template_messages(rebuilt, OPENAI) == [
        {"role": "system", "content": "sys + notice"},
        {"role": "user", "content": "[CONTEXT SUMMARY]: x"},
    ]


def test_record_tools_reads_a_list_or_a_json_string_of_one() -> None:
    tools = [{"type": "function", "function": {"name": "bash"}}]
    assert record_tools({"tools": tools}) == tools
    assert record_tools({"tools": json.dumps(tools)}) == tools
    assert record_tools({"functions": json.dumps(tools)}, "functions") == tools
    for absent in ({}, {"tools": None}, {"tools": ""}, {"tools": "null"}):
        assert record_tools(absent) is None
    assert record_tools({"tools": []}) == []
    for bad, message in [("{x", "'tools' is not valid JSON"), ('"bash"', "not a list of tool schemas (got string)"),
                         ([1], "'tools'[0] is not an object (got int)")]:  # fmt: skip
        with pytest.raises(RecordError, match=re.escape(message)):
            record_tools({"tools": bad})
