"""The outcome readers try each pattern only where its words occur: the answers must be those of
the patterns tried everywhere (`_exit_code`, `_test_verdict` as first written)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from trajectory_compressor.summarize.toolcalls import outcomes
from trajectory_compressor.summarize.toolcalls.outcomes import (
    _EXIT_CODE,
    _PYTEST_SUMMARY,
    _RETURNCODE_TAG,
    _UNITTEST_RAN,
    _UNITTEST_RESULT,
)

_PIECES = st.sampled_from(
    [
        "exit code: 1", "Exit Status 2", "returncode=3", "<returncode>4</returncode>", "EXİT code 5",
        "ſtatus", "exited with code 7", "RETURN_CODE is 8", "exitcode 9", "return code", "\n", " ", "x" * 50,
        "=", "== 1 passed in 0.1s ==", "===== 2 failed, 1 passed in 3s =====", "Ran 3 tests in 0.01s",
        "\nOK", "\nFAILED (failures=1)", "Ran ", "=== no tests ran ===", "é", "\r\n",
    ]
)  # fmt: skip


def _exit_code_everywhere(content: str) -> int | None:
    head, tail = content[:300], content[-300:]
    for part in (head, tail) if len(content) > 300 else (content,):
        match = _RETURNCODE_TAG.search(part) or _EXIT_CODE.search(part)
        if match:
            return int(match.group(1))
    return None


def _test_verdict_everywhere(text: str) -> str | None:
    summaries = _PYTEST_SUMMARY.findall(text)
    if summaries:
        return str(summaries[-1]).strip()
    ran = _UNITTEST_RAN.search(text)
    if ran:
        result = _UNITTEST_RESULT.search(text, ran.end())
        verdict = (result.group(1) + result.group(2)).strip() if result else "no verdict"
        return f"ran {ran.group(1)} tests: {verdict}"
    return None


@settings(max_examples=600, deadline=None)
@given(st.lists(_PIECES, max_size=30).map("".join))
def test_the_outcome_readers_answer_as_their_patterns_tried_everywhere(text: str) -> None:
    assert outcomes._exit_code(text) == _exit_code_everywhere(text)
    assert outcomes._test_verdict(text) == _test_verdict_everywhere(text)


def test_a_case_insensitive_exit_code_in_non_ascii_text_is_still_read() -> None:
    assert _EXIT_CODE.search("EXİT CODE: 3") is not None  # the regex's own case folding
    assert outcomes._exit_code("EXİT CODE: 3") == 3
