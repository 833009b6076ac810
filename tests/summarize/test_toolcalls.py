"""Parsing tool markup and judging tool results, on the messy shapes real trajectories have."""

from __future__ import annotations

import json

import pytest

from trajectory_compressor.summarize.toolcalls import (
    ToolCall,
    ToolResponse,
    analyze_output,
    clip,
    command_gist,
    files_in,
    files_written_in,
    outcome_of,
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


# --- outcomes ---------------------------------------------------------------------------------


def test_exit_code_and_traceback_line() -> None:
    content = (
        "<returncode>1</returncode>\n<output>\nTraceback (most recent call last):\n"
        '  File "x.py", line 3, in <module>\n    import numpy\n'
        "ModuleNotFoundError: No module named 'numpy'\n</output>"
    )
    assert outcome_of(content) == "exit 1: ModuleNotFoundError: No module named 'numpy'"


def test_chained_traceback_reports_the_last_exception() -> None:
    content = (
        "Traceback (most recent call last):\n  File 'a'\nKeyError: 'k'\n\n"
        "During handling of the above exception, another exception occurred:\n\n"
        "Traceback (most recent call last):\n  File 'b'\nValueError: bad value\n"
    )
    assert analyze_output(content).error == "ValueError: bad value"


@pytest.mark.parametrize(
    ("content", "code"),
    [
        ("Exit code: 2\nmake: *** [all] oops", 2),
        ('{"returncode": 0, "stdout": "fine"}', 0),
        ("build finished\nProcess exited with code 137", 137),
        ("<returncode>-1</returncode><output></output>", -1),
        ("no code mentioned", None),
    ],
)
def test_exit_code_patterns(content: str, code: int | None) -> None:
    assert analyze_output(content).exit_code == code


def test_exit_code_is_not_read_from_the_middle_of_long_output() -> None:
    source = "x = 1\n" * 200 + "proc.returncode = 3\n" + "y = 2\n" * 200
    assert analyze_output(source).exit_code is None


def test_nonzero_exit_without_output() -> None:
    assert outcome_of("<returncode>1</returncode>\n<output>\n</output>") == "exit 1, no output"


def test_size_of_successful_output() -> None:
    body = "\n".join(f"line {i:02} " + "x" * 120 for i in range(12))
    assert outcome_of(f"<returncode>0</returncode>\n<output>\n{body}\n</output>") == (
        f"ok, 12 lines / {len(body) / 1000:.1f}k chars"
    )


def test_short_output_is_quoted() -> None:
    assert outcome_of("255.0") == "ok: 255.0"
    assert outcome_of("") == "ok, no output"


def test_error_prefixed_lines() -> None:
    assert outcome_of("Error: not enough seats on flight HAT229") == "error: not enough seats on flight HAT229"
    assert analyze_output("step 1\nfatal: not a git repository\n").error == "fatal: not a git repository"


def test_shell_failure_phrases_anywhere_in_a_line() -> None:
    outcome = analyze_output("ls: cannot access 'nope.py': No such file or directory\n")
    assert outcome.error == "ls: cannot access 'nope.py': No such file or directory"
    assert outcome.failed


def test_indented_docstring_lines_are_not_errors() -> None:
    content = "<returncode>0</returncode>\n<output>\n    Raises\n    ------\n    ValueError: if x\n</output>"
    outcome = analyze_output(content)
    assert outcome.error is None
    assert outcome.render().startswith("ok, 3 lines / ")


def test_error_line_with_exit_zero_is_still_reported() -> None:
    content = "<returncode>0</returncode>\n<output>\nError: value mismatch 1 != 2\n</output>"
    assert outcome_of(content) == "exit 0, error: Error: value mismatch 1 != 2"


def test_pytest_verdict() -> None:
    content = (
        "<returncode>1</returncode>\n<output>\n....F\n"
        "=================== 1 failed, 4 passed in 0.12s ===================\n</output>"
    )
    assert outcome_of(content) == "exit 1: 1 failed, 4 passed in 0.12s"


def test_pytest_failure_line_is_the_error() -> None:
    content = "FAILED tests/test_a.py::test_b - AssertionError: 1 != 2\n==== 1 failed in 0.1s ===="
    assert outcome_of(content) == "error: FAILED tests/test_a.py::test_b - AssertionError: 1 != 2"


def test_unittest_verdict() -> None:
    outcome = analyze_output("....\n----------\nRan 4 tests in 0.010s\n\nOK\n")
    assert outcome.tests == "ran 4 tests: OK"


def test_elided_chars_count_toward_size_and_warnings_do_not() -> None:
    content = (
        "<returncode>0</returncode>\n<warning>\nThe output was too long.\n</warning>"
        "<output_head>\nhead\n</output_head>\n<elided_chars>\n5000\n</elided_chars>\n"
        "<output_tail>\ntail\n</output_tail>"
    )
    outcome = analyze_output(content)
    assert outcome.chars > 5000
    assert "too long" not in outcome.preview
    assert outcome.preview == "head"


def test_json_result_error_field_and_gist() -> None:
    assert outcome_of('{"error": "rate limited", "response": ""}') == "error: rate limited"
    long_json = json.dumps({"reservation_id": "EHGLP3", "origin": "PHX", "flights": [1, 2], "note": "x" * 200})
    outcome = analyze_output(long_json, known={"EHGLP3"})
    assert outcome.structured
    assert outcome.preview.startswith("origin=PHX, flights=[2]")  # the id was already known
    assert outcome.render(preview_chars=30).startswith("ok, JSON ")


# --- files ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ({"path": "/repo/src/app.py"}, ["/repo/src/app.py"]),
        ({"command": "view", "path": "/repo/x.py"}, ["/repo/x.py"]),
        ({"command": "cat astropy/modeling/separable.py | head -50"}, ["astropy/modeling/separable.py"]),
        ("sed -i 's/foo.py/bar/' pkg/mod.py", ["pkg/mod.py"]),
        ("cd /testbed && python ./reproduce.py 2>&1", ["reproduce.py"]),
        ("str_replace_editor str_replace /repo/x.py --old_str a", ["/repo/x.py"]),
        ("pytest tests/test_a.py::test_x -q", ["tests/test_a.py"]),
        ("grep -rn 'django.setup' --include='*.py' django/ | head", []),
        ("curl https://example.com/file.py", []),
        ("cat données/été.py", ["données/été.py"]),
        ("make -C build && cat Makefile", ["Makefile"]),
    ],
)
def test_files_in(source: str | dict[str, str], expected: list[str]) -> None:
    assert files_in(source) == expected


def test_files_in_ignores_here_document_bodies() -> None:
    command = "cat > test_fix.py << 'EOF'\nimport helper.py\nopen('data.json')\nEOF\npython test_fix.py"
    assert files_in(command) == ["test_fix.py"]


def test_files_in_ignores_content_arguments() -> None:
    args = {"command": "create", "path": "/repo/new.py", "file_text": "see other.py\n"}
    assert files_in(args) == ["/repo/new.py"]


@pytest.mark.parametrize(
    ("source", "tool", "expected"),
    [
        ("cat > out.py << 'EOF'\nx = a > b.py\nEOF", "", ["out.py"]),
        ("echo hi >> notes.md && python run.py 2>&1 > /dev/null", "", ["notes.md"]),
        ("sed -i 's/a/b/' pkg/mod.py && cat pkg/other.py", "", ["pkg/mod.py"]),
        ("python gen.py | tee result.txt", "", ["result.txt"]),
        ("cp pkg/mod.py.orig pkg/mod.py", "", ["pkg/mod.py"]),
        ("cat pkg/mod.py", "", []),
        ({"command": "str_replace", "path": "/r/a.py", "old_str": "x", "new_str": "y"}, "", ["/r/a.py"]),
        ({"command": "view", "path": "/r/a.py"}, "", []),
        ({"path": "notes.txt", "content": "hello"}, "write_file", ["notes.txt"]),
        ({"file_name": "a.py"}, "edit", ["a.py"]),
    ],
)
def test_files_written_in(source: str | dict[str, str], tool: str, expected: list[str]) -> None:
    assert files_written_in(source, tool) == expected


# --- display helpers --------------------------------------------------------------------------


def test_command_gist() -> None:
    command = "cd /testbed && cat > t.py << 'EOF'\nimport os\nprint(os)\nEOF\npython t.py"
    assert command_gist(command) == "cat > t.py << 'EOF' [2 lines]\npython t.py"
    assert command_gist("edit 3:4\n    return a\n    pass\nend_of_edit") == "edit 3:4 [2 lines]"


def test_clip() -> None:
    assert clip("a   b\n\nc", 20) == "a b c"
    clipped = clip("word " * 50, 40)
    assert len(clipped) <= 40
    assert clipped.endswith("…")
    assert not clipped.endswith(" …")
    assert clip("anything", 0) == ""
