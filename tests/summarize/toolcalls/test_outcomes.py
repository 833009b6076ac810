"""Judging tool results: exit codes, error lines, test verdicts, sizes and JSON gists."""

from __future__ import annotations

import json

import pytest

from trajectory_compressor.summarize.toolcalls import analyze_output, outcome_of


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


def test_python_refusing_a_missing_module_or_script_is_an_error_even_with_exit_0() -> None:
    """`python -m pytest … | tail` with no pytest installed: the harness saw exit 0 (the pipe's),
    and the summary said `ok` for a run that ran nothing (public mini-swe-agent runs, 35 times)."""
    content = "<returncode>0</returncode>\n<output>\n/opt/miniconda3/bin/python3: No module named pytest\n</output>"
    assert outcome_of(content) == "exit 0, error: /opt/miniconda3/bin/python3: No module named pytest"
    missing = analyze_output("python: can't open file '/testbed/repro.py': [Errno 2] No such file or directory\n")
    assert missing.error == "python: can't open file '/testbed/repro.py': [Errno 2] No such file or directory"
    # Source code or a search naming the message is not a failure of the call.
    assert analyze_output('django/utils/module_loading.py:    msg = "No module named %s"\n').error is None
