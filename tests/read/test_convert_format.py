"""`--write-format`: ShareGPT ⇄ OpenAI messages, exactly what each direction writes, and round trips."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.write.agent_rows import AIRLINE_TOOLS, SWE_TOOLS, airline_row, call, openai_row, response, swe_row
from trajectory_compressor.read.convert_format import WriteShape, convert_record, needs_conversion
from trajectory_compressor.read.formats import ConversationFormat, RecordError, detect_format, to_turns

SHAREGPT = ConversationFormat("sharegpt", "conversations")
OPENAI = ConversationFormat("openai", "messages")


def fn(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def test_a_tau_bench_row_becomes_messages_with_ids_from_its_results_and_tools_as_json_text() -> None:
    row = airline_row()
    out = convert_record(row, SHAREGPT, "messages")
    assert list(out) == ["messages", "source", "model", "task_id", "reward", "tools"]
    assert json.loads(out["tools"]) == AIRLINE_TOOLS
    assert out["messages"] == [
        {"role": "system", "content": row["conversations"][0]["value"]},
        {"role": "user", "content": row["conversations"][1]["value"]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [fn("call_Xk2VrXyZ", "get_user_details", '{"user_id": "mia_li_3668"}')],
        },
        {
            "role": "tool",
            "tool_call_id": "call_Xk2VrXyZ",
            "name": "get_user_details",
            "content": '{"user_id": "mia_li_3668", "reservations": ["NO6JO3", "AIXC49"], "membership": "gold"}',
        },
        {
            "role": "assistant",
            "content": "Let me look up both reservations.",
            "tool_calls": [
                fn("call_a1", "get_reservation_details", '{"reservation_id": "NO6JO3"}'),
                fn("call_b2", "get_reservation_details", '{"reservation_id": "AIXC49"}'),
            ],
        },
        # One tool turn with two results: two tool messages.
        {
            "role": "tool",
            "tool_call_id": "call_a1",
            "name": "get_reservation_details",
            "content": '{"reservation_id": "NO6JO3", "origin": "PHX"}',
        },
        {
            "role": "tool",
            "tool_call_id": "call_b2",
            "name": "get_reservation_details",
            "content": '{"reservation_id": "AIXC49", "origin": "JFK"}',
        },
        {"role": "assistant", "content": "You have two trips: NO6JO3 from PHX and AIXC49 from JFK."},
    ]
    assert row == airline_row()  # the input record is not modified


def test_a_swe_row_keeps_reasoning_raw_string_calls_as_text_and_generates_ids() -> None:
    row = swe_row()
    turns = row["conversations"]
    out = convert_record(row, SHAREGPT, "messages")
    messages = out["messages"]
    assert json.loads(out["tools"]) == SWE_TOOLS
    # <think> stays in the content; results without ids take generated ones, call_<turn>_<n>.
    assert messages[2] == {
        "role": "assistant",
        "content": "<think>\nFind the module first.\n</think>\n\nI'll explore the repository.",
        "tool_calls": [fn("call_2_0", "bash", '{"command": "find . -name \'*.py\' | grep separable"}')],
        "train": True,
    }
    assert messages[3]["tool_call_id"] == "call_2_0"
    assert messages[3]["name"] == "bash"
    # Raw-string arguments: not a call a loader can parse; the whole value stays text.
    assert messages[4] == {"role": "assistant", "content": turns[4]["value"], "train": False}
    # Its result answers no structured call: an id of its own place, its name, its keys.
    assert messages[5] == {
        "role": "tool",
        "tool_call_id": "call_5_0",
        "name": "bash",
        "content": "def separability_matrix(): ...",
        "weight": 0,
    }
    # The run ends on a call with no response: a call with a generated id, no tool message.
    assert messages[6]["content"] == "<think>\nNested models lose the right block.\n</think>\n"
    assert messages[6]["tool_calls"] == [fn("call_6_0", "bash", '{"command": "sed -i \'s/1/right/\' src/pkg/mod0.py"}')]
    assert len(messages) == 7


def test_results_are_matched_by_name_when_they_come_in_another_order_and_unnamed_ones_in_order() -> None:
    gpt = call("get_user", {"id": 1}) + "\n" + call("get_flight", {"no": "HAT157"}) + "\n" + call("get_seat", {})
    row = {
        "conversations": [
            {"from": "human", "value": "Go."},
            {"from": "gpt", "value": gpt},
            {"from": "tool", "value": response("flight", "get_flight")},
            {"from": "tool", "value": response("user") + "\n" + response("seat")},
        ]
    }
    messages = convert_record(row, SHAREGPT, "messages")["messages"]
    assert [c["id"] for c in messages[1]["tool_calls"]] == ["call_1_0", "call_1_1", "call_1_2"]
    answered = [(m["tool_call_id"], m["name"], m["content"]) for m in messages[2:]]
    assert answered == [
        ("call_1_1", "get_flight", "flight"),
        ("call_1_0", "get_user", "user"),
        ("call_1_2", "get_seat", "seat"),
    ]


def test_a_response_with_no_call_keeps_its_id_or_gets_one_of_its_own() -> None:
    row = {
        "conversations": [
            {"from": "human", "value": "Start."},
            {"from": "tool", "value": response("orphan", "ls", "call_zz") + "\n" + response("unnamed")},
            {"from": "gpt", "value": call("ls", {})},
            {"from": "tool", "value": response("wrong tool", "rm")},
        ]
    }
    messages = convert_record(row, SHAREGPT, "messages")["messages"]
    assert messages[1] == {"role": "tool", "tool_call_id": "call_zz", "name": "ls", "content": "orphan"}
    assert messages[2] == {"role": "tool", "tool_call_id": "call_1_1", "content": "unnamed"}
    assert messages[3]["tool_calls"] == [fn("call_2_0", "ls", "{}")]  # named "rm": not its result
    assert messages[4] == {"role": "tool", "tool_call_id": "call_3_0", "name": "rm", "content": "wrong tool"}


def test_messages_become_sharegpt_as_the_reader_renders_them_with_every_extra_key() -> None:
    row = openai_row()
    out = convert_record(row, OPENAI, "sharegpt")
    assert list(out) == ["id", "conversations", "tools"]
    assert json.loads(out["tools"]) == row["tools"]
    turns = to_turns(row, OPENAI)
    assert out["conversations"] == [
        {"from": "system", "value": "You are an agent."},
        {"from": "human", "value": "Fix the test.\nThanks."},
        {"from": "gpt", "value": turns[2].value, "train": True},
        {"from": "tool", "value": turns[3].value},
        {"from": "tool", "value": turns[4].value},
        {"from": "gpt", "value": "Fixed.", "weight": 1},
    ]
    assert turns[2].value == (
        '<tool_call>\n{"name": "bash", "arguments": {"command": "pytest -q"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "read", "arguments": {"path": "a.py"}}\n</tool_call>'
    )
    assert (
        turns[4].value
        == '<tool_response>\n{"tool_call_id": "call_2", "name": "read", "content": "x = 1"}\n</tool_response>'
    )


def test_openai_messages_round_trip_through_sharegpt() -> None:
    row = openai_row()
    back = convert_record(convert_record(row, OPENAI, "sharegpt"), SHAREGPT, "messages")
    expected = openai_row()
    expected["messages"][1]["content"] = "Fix the test.\nThanks."  # parts joined
    expected["messages"][4]["content"] = "x = 1"
    expected["messages"][4]["name"] = "read"  # named after its call
    expected["tools"] = json.dumps(row["tools"])
    assert back == expected


def test_the_conversation_stays_under_its_key_when_the_other_formats_key_is_taken() -> None:
    row = {"conversations": [{"from": "human", "value": "Hi"}], "messages": "a note", "tools": None}
    out = convert_record(row, SHAREGPT, "messages")
    assert out == {"conversations": [{"role": "user", "content": "Hi"}], "messages": "a note", "tools": None}


def test_a_row_already_in_the_write_format_is_returned_as_it_is() -> None:
    row = airline_row()
    assert convert_record(row, SHAREGPT, "sharegpt") is row
    assert convert_record(row, SHAREGPT, None) is row
    assert not needs_conversion(SHAREGPT, None)
    assert needs_conversion(OPENAI, "sharegpt")
    with pytest.raises(ValueError, match="unknown write format"):
        needs_conversion(OPENAI, "chatml")


@pytest.mark.parametrize("make", [airline_row, swe_row, openai_row])
def test_a_converted_row_is_read_back_by_the_reader(make: Any) -> None:
    row = make()
    fmt = detect_format(row)
    target = "messages" if fmt.name == "sharegpt" else "sharegpt"
    out = convert_record(row, fmt, target)
    assert to_turns(out, detect_format(out))  # no RecordError


def test_hf_chat_writes_a_content_of_text_parts_as_the_one_text_the_reader_reads() -> None:
    """Qwen 2.5's, Llama 3.1's and DeepSeek V3.1's templates concatenate a string content: a list
    stops them. Written as the reader reads it, the row counts, summarizes and trains the same."""
    parts = [{"type": "text", "text": "Analyze"}, {"type": "text", "text": "the data."}]
    row = {
        "id": "parts",
        "messages": [
            {"role": "user", "content": parts},
            {"role": "assistant", "content": None, "tool_calls": [fn("c1", "read", '{"path": "a"}')]},
            {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "rows"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "Done."}], "weight": 1},
        ],
    }
    out = convert_record(row, OPENAI, "hf-chat")
    assert [m["content"] for m in out["messages"]] == ["Analyze\nthe data.", "", "rows", "Done."]
    assert out["messages"][3] == {"role": "assistant", "content": "Done.", "weight": 1, "train": True}
    assert to_turns(row, OPENAI)[0].value == "Analyze\nthe data."
    assert row["messages"][0]["content"] == parts  # the input record is not changed


HI = [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"}]


@pytest.mark.parametrize(
    ("tools", "reason"),
    [
        ("not json", "'tools' is not valid JSON"),
        ({"name": "bash"}, "'tools' is not a list of tool schemas (got object)"),
        ('["bash"]', "'tools'[0] is not an object (got string)"),
    ],
)
def test_hf_chat_refuses_tools_the_chat_template_cannot_take_and_other_shapes_keep_them(
    tools: Any, reason: str
) -> None:
    """TRL's recipe and axolotl hand `tools` to `apply_chat_template`, which stops on these, as
    `--count-mode chat-template` rejects them; elsewhere `tools` is the record's own data, kept."""
    row = {"id": "t", "conversations": HI, "tools": tools}
    with pytest.raises(RecordError) as caught:
        WriteShape("hf-chat").check(row, SHAREGPT)
    assert reason in str(caught.value) and "hf-chat" in str(caught.value)
    with pytest.raises(RecordError, match=r"^'functions'"):
        WriteShape("hf-chat", tools_key="functions").check({"conversations": HI, "functions": tools}, SHAREGPT)
    WriteShape("hf-chat", tools_key="functions").check(row, SHAREGPT)  # `tools` is then another key
    for shape in (WriteShape(), WriteShape("messages"), WriteShape("sharegpt")):
        shape.check(row, SHAREGPT)


def test_hf_chat_takes_tools_absent_null_empty_or_a_list_of_schemas_as_objects_or_json_text() -> None:
    schemas = [{"type": "function", "function": {"name": "bash"}}]
    for tools in (None, "", "null", [], schemas, json.dumps(schemas)):
        WriteShape("hf-chat").check({"conversations": HI, "tools": tools}, SHAREGPT)
    WriteShape("hf-chat").check({"conversations": HI}, SHAREGPT)


def _with_arguments(arguments: Any) -> dict[str, Any]:
    call = {"id": "c1", "type": "function", "function": {"name": "read", "arguments": arguments}}
    return {
        "id": "a",
        "messages": [
            {"role": "user", "content": "Read it."},
            {"role": "assistant", "content": None, "tool_calls": [fn("c0", "ls", "{}"), call]},
            {"role": "tool", "tool_call_id": "c1", "content": "text"},
        ],
    }


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ("{not json", "are not valid JSON"),
        ("[1, 2]", "are JSON text of no object"),
        ("null", "are JSON text of no object"),
        (None, "are missing"),
        (5, "are a number, not an object"),
        (["x"], "are an array, not an object"),
        ('{"a": ' + "[" * 5000 + "]" * 5000 + "}", "nest too deeply to write"),
    ],
)
def test_hf_chat_refuses_a_call_whose_arguments_are_no_object_naming_the_message(arguments: Any, problem: str) -> None:
    """docs/trainers.md promises each call's arguments an object: templates write `arguments |
    tojson` (a string would be quoted), axolotl `json.loads` them. Nothing is made up instead."""
    row = _with_arguments(arguments)
    with pytest.raises(RecordError) as caught:
        WriteShape("hf-chat").check(row, OPENAI)
    assert str(caught.value).startswith(f"turn 1: tool_calls[1] ('read'): 'arguments' {problem}: hf-chat writes")
    for shape in (WriteShape(), WriteShape("messages"), WriteShape("sharegpt")):
        shape.check(row, OPENAI)  # OpenAI's shape holds them as they came: JSON text, valid or not


def test_hf_chat_takes_arguments_given_as_an_object_or_its_json_text() -> None:
    for arguments in ({}, {"path": "a"}, '{"path": "a"}', ' {"path": "a"}', "", " "):
        row = _with_arguments(arguments)
        WriteShape("hf-chat").check(row, OPENAI)
        [call] = [c for c in convert_record(row, OPENAI, "hf-chat")["messages"][1]["tool_calls"] if c["id"] == "c1"]
        assert isinstance(call["function"]["arguments"], dict)
        if isinstance(arguments, str) and not arguments.strip():  # some servers write "" for no arguments
            assert call["function"]["arguments"] == {}
    # ShareGPT markup: a <tool_call> that is no call with object arguments stays text (`read.hermes`).
    text = '<tool_call>\n{"name": "read", "arguments": "{not json"}\n</tool_call>'
    row = {"conversations": [{"from": "human", "value": "Read it."}, {"from": "gpt", "value": text}]}
    WriteShape("hf-chat").check(row, SHAREGPT)
    assert convert_record(row, SHAREGPT, "hf-chat")["messages"][1]["content"] == text
