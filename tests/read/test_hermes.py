"""Hermes markup taken apart: what becomes a structured call or result, and what stays text, exactly."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trajectory_compressor.read.hermes import (
    AssistantParts,
    HermesCall,
    HermesResult,
    parse_json,
    split_assistant,
    split_tool,
)


def call(name: str, arguments: object, **extra: object) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments, **extra}) + "\n</tool_call>"


def response(**payload: object) -> str:
    return "<tool_response>\n" + json.dumps(payload) + "\n</tool_response>"


def test_the_readers_rendering_comes_apart_into_content_and_calls() -> None:
    value = "Let me look.\n" + call("bash", {"command": "ls"}) + "\n" + call("read", {"path": "a.py"})
    parts = split_assistant(value)
    assert parts.content == "Let me look."
    assert parts.calls == (
        HermesCall("bash", '{"command": "ls"}'),
        HermesCall("read", '{"path": "a.py"}'),
    )


def test_calls_alone_give_null_content_and_a_value_without_calls_is_all_content() -> None:
    assert split_assistant(call("ls", {})).content is None
    assert split_assistant("Just words.\n\n").content == "Just words.\n\n"
    assert split_assistant("").content == ""
    assert split_assistant("").calls == ()


def test_content_keeps_its_own_trailing_newlines_and_whitespace() -> None:
    # The reader writes content + "\n" + blocks: only that one newline is the reader's.
    assert split_assistant("Text\n\n" + call("ls", {})).content == "Text\n"
    assert split_assistant("  \n" + call("ls", {})).content == "  "


def test_a_leading_think_block_stays_in_the_content_and_a_call_inside_it_is_not_a_call() -> None:
    think = "<think>\nMaybe " + call("rm", {"path": "/"}) + " is wrong.\n</think>\n\nI will list files."
    parts = split_assistant(think + "\n" + call("bash", {"command": "ls"}))
    assert parts.content == think
    assert [c.name for c in parts.calls] == ["bash"]


@pytest.mark.parametrize(
    "block",
    [
        '<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}\n</tool_call>',  # JSON does not parse
        call("bash", "cat setup.py | head"),  # raw-string arguments
        call("bash", ["ls"]),  # arguments not an object
        call("bash", {"command": "ls"}, kind="x"),  # a key a call does not have
        '<tool_call>\n[{"name": "bash", "arguments": {}}]\n</tool_call>',  # a list of calls
        '<tool_call>\n{"arguments": {}}\n</tool_call>',  # no name
        '<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}}',  # never closed
    ],
)
def test_a_malformed_call_stays_in_the_content_verbatim(block: str) -> None:
    value = "Trying.\n" + block
    assert split_assistant(value) == AssistantParts(content=value, calls=())


def test_a_malformed_call_beside_good_ones_keeps_its_place_in_the_text() -> None:
    bad = call("bash", "ls -la")
    value = "Two tries.\n" + bad + "\n" + call("bash", {"command": "ls -la"})
    parts = split_assistant(value)
    assert parts.content == "Two tries.\n" + bad
    assert parts.calls == (HermesCall("bash", '{"command": "ls -la"}'),)


def test_arguments_given_as_the_json_text_of_an_object_are_kept_as_written() -> None:
    parts = split_assistant(call("bash", '{"command":"ls"}'))
    assert parts.calls == (HermesCall("bash", '{"command":"ls"}'),)


def test_missing_or_null_arguments_are_an_empty_object_and_an_id_is_kept() -> None:
    value = '<tool_call>\n{"name": "now"}\n</tool_call>\n' + call("ls", None, id="call_9")
    assert split_assistant(value).calls == (HermesCall("now", "{}"), HermesCall("ls", "{}", call_id="call_9"))


def test_text_after_the_calls_moves_into_the_content_and_whitespace_between_calls_goes() -> None:
    value = call("ls", {}) + "\n\n\n" + call("pwd", {}) + "\nDone, both ran."
    parts = split_assistant(value)
    assert parts.content == "Done, both ran."
    assert [c.name for c in parts.calls] == ["ls", "pwd"]


def test_non_ascii_arguments_stay_readable() -> None:
    assert split_assistant(call("say", {"text": "Café ☕"})).calls[0].arguments == '{"text": "Café ☕"}'


# --- tool results ------------------------------------------------------------------------------


def test_each_response_block_is_one_result_with_its_id_and_name() -> None:
    value = (
        response(tool_call_id="call_a", name="get_user", content='{"id": "mia_li_3668"}')
        + "\n"
        + response(name="get_flight", content="HAT157")
    )
    assert split_tool(value) == (
        HermesResult('{"id": "mia_li_3668"}', name="get_user", call_id="call_a"),
        HermesResult("HAT157", name="get_flight"),
    )


def test_a_non_string_content_becomes_its_json_text() -> None:
    value = response(name="search", content={"error": "", "response": [1, "é"]})
    assert split_tool(value) == (HermesResult('{"error": "", "response": [1, "é"]}', name="search"),)


@pytest.mark.parametrize(
    ("body", "content"),
    [
        ("\nplain output\nexit code: 0\n", "plain output\nexit code: 0"),  # not JSON
        ('\n{"name": "x", "content": "y", "extra": 1}\n', '{"name": "x", "content": "y", "extra": 1}'),
        ('\n{"name": "x"}\n', '{"name": "x"}'),  # no content
        ("\n\n  indented\n\n", "\n  indented\n"),  # only the reader's newlines go
    ],
)
def test_a_block_that_is_not_a_result_object_is_its_body_as_text(body: str, content: str) -> None:
    assert split_tool(f"<tool_response>{body}</tool_response>") == (HermesResult(content),)


@pytest.mark.parametrize(
    "value",
    [
        "total 0\ndrwxr-xr-x 2 root root",  # no markup at all
        "Result:\n" + response(content="ok"),  # text outside the blocks
        "<tool_response>\npartial output, cut off",  # never closed
        "",
    ],
)
def test_a_tool_value_that_is_not_only_response_blocks_is_one_result_holding_it_whole(value: str) -> None:
    assert split_tool(value) == (HermesResult(value),)


@pytest.mark.parametrize(
    "text",
    [
        '{"n": 18446744073709551616}',  # beyond 64 bits: orjson would make it a float
        '{"n": -9223372036854775809}',  # 19 digits, below int64: the same
        '{"n": 123456789012345678901234567890, "m": [1, 2.5, -0.0]}',
        '{"x": NaN, "y": Infinity}',  # not JSON to orjson, Python's json reads it
        '{"s": "\\ud800"}',  # a lone surrogate escape
        '{"a": 1, "a": 2}',
        '{"content": "caf\\u00e9 \\ud83d\\ude00", "name": "bash"}',
        '{"deep": ' + "[" * 2000 + "]" * 2000 + "}",
        "not json",
    ],
)
def test_parse_json_returns_exactly_what_the_standard_library_reads(text: str) -> None:
    """orjson is the fast path; the value is the standard library's in every case it would differ."""
    try:
        expected = json.loads(text)
    except (ValueError, RecursionError):
        expected = None
    got = parse_json(text)
    assert repr(got) == repr(expected) and type(got) is type(expected)
    if isinstance(expected, dict) and "n" in expected:
        assert isinstance(got["n"], int)


NUMBER_TEXTS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda x: f"{x:.17e}"),  # 18 digits: orjson reads it
    st.builds(lambda m, e: f"{m}e{e}", st.integers(-(10**17), 10**17), st.integers(-330, 330)),
    st.builds(lambda i, f: f"{i}.{f}", st.integers(-(10**9), 10**9), st.integers(0, 10**8)),
    st.integers(-(2**63), 2**64 - 1).map(str),
)


@settings(max_examples=500, deadline=None)
@given(st.lists(NUMBER_TEXTS, max_size=4))
def test_numbers_of_every_kind_read_as_the_standard_library_reads_them(numbers: list[str]) -> None:
    """Floats (shortest repr, 18 significant digits, big and tiny exponents, out of range) and
    integers up to 64 bits: `parse_json` gives exactly `json.loads`' value, whichever decoder read it."""
    text = "[" + ", ".join(numbers) + "]"
    expected = json.loads(text)
    assert repr(parse_json(text)) == repr(expected)


BODIES = st.sampled_from(
    ['{"name": "x", "content": "hi"}', '{"content": [1, 2]}', '{"content": "a</tool_response>"}', "[1]", "{bad", "{}"]
)
SPACES = st.sampled_from(["", "\n", " \t\r\n", "\u3000", "\xa0", "\x1c", " x", "\n}"])


@settings(max_examples=200, deadline=None)
@given(SPACES, BODIES, SPACES)
def test_a_result_is_read_in_place_exactly_as_its_body_parsed_alone(before: str, body: str, after: str) -> None:
    """Results are decoded where they sit (no copy of a huge body first): the same as json.loads of
    the body, whatever whitespace or text surrounds the JSON."""
    value = f"<tool_response>{before}{body}{after}</tool_response>"
    [result] = split_tool(value)
    inner = value[len("<tool_response>") : -len("</tool_response>")]
    try:
        data = json.loads(inner) if inner.strip().startswith("{") else None
    except ValueError:
        data = None
    if "</tool_response>" in inner:  # the block ends at the first closing tag: text is left outside it
        assert result == HermesResult(value)
    elif isinstance(data, dict) and "content" in data and set(data) <= {"tool_call_id", "name", "content"}:
        content = data["content"] if isinstance(data["content"], str) else json.dumps(data["content"])
        assert result == HermesResult(content, data.get("name"), data.get("tool_call_id"))
    else:
        assert result.name is None and result.content.strip() == inner.strip()


TRICKY_BODIES = st.sampled_from(
    [
        '{"name": "n", "content": 18446744073709551616}',  # orjson would make the integer a float
        '{"content": {"x": NaN, "y": -0.0, "z": 1e400}}',  # what orjson refuses, floats
        '{"content": "\\ud800 lone"}',  # a lone surrogate escape
        '{"content": "a", "content": "b"}',
        '{"tool_call_id": 7, "content": "id not a string"}',
        '{"content": "' + "[" * 40 + '", "name": "deep"}',
        '{"content": ' + "[" * 3000 + "]" * 3000 + "}",  # deeper than either decoder goes
        '\ufeff{"content": "BOM"}',
        '{"name": 18446744073709551616, "content": "a name that is not a string"}',
        '{"content": "x", "extra": 1.5}',
        "plain text",
        "",
    ]
)


@settings(max_examples=300, deadline=None)
@given(SPACES, st.one_of(BODIES, TRICKY_BODIES), SPACES)
def test_a_value_that_is_one_block_is_read_as_the_general_scan_reads_it(before: str, body: str, after: str) -> None:
    """One block and nothing else takes the short way (a copy decoded by orjson): the same result
    as the general scan (decoded in place) gives the same value."""
    from trajectory_compressor.read.hermes import _split_blocks

    value = f"<tool_response>{before}{body}{after}</tool_response>"
    assert split_tool(value) == _split_blocks(value)


def test_a_body_over_the_copy_limit_is_decoded_in_place(monkeypatch: pytest.MonkeyPatch) -> None:
    import trajectory_compressor.read.hermes as hermes

    monkeypatch.setattr(hermes, "_COPIED_BODY_CHARS", 10)
    monkeypatch.setattr(hermes, "parse_json", lambda text: pytest.fail("a long body was copied and parsed"))
    value = response(name="bash", content="x" * 100)
    assert split_tool(value) == (HermesResult("x" * 100, name="bash"),)


def test_a_call_or_result_nested_past_the_recursion_limit_stays_text() -> None:
    """`--write-format messages` wrote a 1000-deep argument or result with `json.dumps`, which
    recursed past Python's limit and stopped the run. Such a block stays text, as written."""
    deep = "[" * 1000 + "]" * 1000
    value = 'x\n<tool_call>\n{"name": "bash", "arguments": {"command": ' + deep + "}}\n</tool_call>"
    parts = split_assistant(value)
    assert parts.calls == () and deep in parts.content
    result = '<tool_response>\n{"content": ' + deep + "}\n</tool_response>"
    (only,) = split_tool(result)
    assert only.name is None and deep in only.content
