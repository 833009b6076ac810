"""The remembered readers: the same answers, fresh lists, bounded memory."""

from __future__ import annotations

from trajectory_compressor.summarize.toolcalls import analyze_output, parse_tool_calls, parse_tool_responses
from trajectory_compressor.summarize.toolcalls.memo import TextMemo

CALL = '<tool_call>\n{"name": "bash", "arguments": {"command": "ls src"}}\n</tool_call>'
RESULT = (
    '<tool_response>\n{"name": "bash", "content": "{\\"id\\": \\"EHGLP3\\", \\"cmd\\": \\"ls src\\"}"}'
    "\n</tool_response>"
)


def test_a_caller_changing_its_list_does_not_change_the_next_answer() -> None:
    calls = parse_tool_calls(CALL)
    calls.clear()
    assert [call.name for call in parse_tool_calls(CALL)] == ["bash"]
    responses = parse_tool_responses(RESULT)
    responses.append(responses[0])
    assert len(parse_tool_responses(RESULT)) == 1


def test_the_gist_still_leaves_out_what_each_caller_already_saw() -> None:
    content = parse_tool_responses(RESULT)[0].content
    assert analyze_output(content).preview == "id=EHGLP3, cmd=ls src"
    assert analyze_output(content, {"ls src"}).preview == "id=EHGLP3"  # the same result, remembered
    assert analyze_output(content).preview == "id=EHGLP3, cmd=ls src"


def test_the_memo_holds_at_most_its_entries_and_no_long_text() -> None:
    reads: list[str] = []

    def read(text: str) -> int:
        reads.append(text)
        return len(text)

    memo = TextMemo(read, entries=2, max_chars=5)
    assert [memo("ab"), memo("ab"), memo("abcdef"), memo("abcdef")] == [2, 2, 6, 6]
    assert reads == ["ab", "abcdef", "abcdef"]  # the long text is read each time
    memo("cd")
    memo("ef")  # full: emptied, then this one kept
    assert len(memo._known) == 1
    memo("ab")
    assert reads[-1] == "ab"


def test_a_memo_with_a_character_budget_empties_before_it_holds_more() -> None:
    memo = TextMemo(len, entries=100, max_chars=10, max_total_chars=12)
    for text in ("aaaaa", "bbbbb"):
        memo(text)
    assert set(memo._known) == {"aaaaa", "bbbbb"}
    memo("ccccc")  # 15 characters in all: emptied, then this one kept
    assert set(memo._known) == {"ccccc"}
    memo("ddddd")
    assert set(memo._known) == {"ccccc", "ddddd"}


def test_a_memo_keeps_only_the_results_it_is_told_to() -> None:
    reads: list[str] = []

    def read(text: str) -> tuple[str, ...]:
        reads.append(text)
        return tuple(text)

    memo = TextMemo(read, keeps=lambda found: len(found) <= 3)
    assert memo("abc") == memo("abc") == ("a", "b", "c")
    assert memo("abcdef") == memo("abcdef")
    assert reads == ["abc", "abcdef", "abcdef"]  # the large result is made each time, never held
    assert set(memo._known) == {"abc"}
