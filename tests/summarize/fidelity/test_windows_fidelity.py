"""The windows' fidelity, each turn read once, scores as `score_summary` and `hidden_future_fidelity`."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trajectory_compressor.summarize import huge_turns
from trajectory_compressor.summarize.fidelity import score_summary, windows
from trajectory_compressor.summarize.fidelity.anchors import hidden_future_fidelity
from trajectory_compressor.summarize.fidelity.score import Stated, occurs
from trajectory_compressor.summarize.fidelity.windows import WindowFidelity
from trajectory_compressor.types import Turn

_WORDS = ["src/a.py", "lib/b/a.py", "mia_li_3668", "EHGLP3", "KeyError", "1234", "v1.2.3", "ok", "bash", "x",
          "a b/c d.py", "/x/" + "y" * 300 + "/z.py", "2024-01-02 10:00"]  # fmt: skip


def _turn(role: str, words: list[str]) -> Turn:
    text = " ".join(words)
    if role == "gpt" and words:
        call = {"name": "bash", "arguments": {"command": f"cat {words[0]}", "path": words[-1], "id": words[-1]}}
        return Turn("gpt", f"{text}\n<tool_call>\n{json.dumps(call)}\n</tool_call>")
    if role == "tool":
        content = json.dumps({"content": f"{text}\nValueError: {words[0] if words else 'x'}"})
        return Turn("tool", f"<tool_response>\n{content}\n</tool_response>")
    return Turn(role, text)


turns_strategy = st.lists(
    st.tuples(st.sampled_from(["human", "gpt", "tool", "tool"]), st.lists(st.sampled_from(_WORDS), max_size=4)),
    min_size=3,
    max_size=30,
).map(lambda items: [Turn("system", "You fix src/a.py."), *(_turn(role, words) for role, words in items)])


@pytest.mark.parametrize("many", [10**6, 0])  # 0: every window counted from the summary's side; 10**6: none
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(turns_strategy, st.data())
def test_each_window_scores_as_scored_from_scratch(
    monkeypatch: pytest.MonkeyPatch, many: int, turns: list[Turn], data: st.DataObject
) -> None:
    monkeypatch.setattr(windows, "_MANY_ITEMS", many)
    head = 1
    scores = WindowFidelity(turns, head)
    cut = head
    while cut < len(turns):
        cut = data.draw(st.integers(cut + 1, len(turns)))
        end = data.draw(st.integers(cut, len(turns)))
        cleared = {i for i in range(cut, end) if turns[i].role == "tool" and data.draw(st.booleans())}
        summary = " ".join(data.draw(st.lists(st.sampled_from([*_WORDS, "a.py", "b/a.py", "keyerror"]), max_size=8)))
        expected, got = score_summary(turns[head:cut], summary, turns), scores.score(cut, summary)
        assert (got.to_metrics(), got.unsupported) == (expected.to_metrics(), expected.unsupported)
        hidden = set(range(head, cut)) | cleared
        assert scores.future(cut, end, cleared, summary) == hidden_future_fidelity(turns[:end], hidden, summary)


def test_an_item_only_in_a_huge_turns_elided_middle_is_unsupported_in_a_window_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A huge turn is read by its head and tail everywhere: a window's summary that names what
    only its middle holds invents it, as the single-row summary would (the window looked for
    items first in its new turns' whole values, and found it there)."""
    monkeypatch.setattr(huge_turns, "HUGE_TURN_CHARS", 400)
    middle = "plain words " * 30 + "the reservation mia_li_3668 " + "plain words " * 30
    turns = [Turn("system", "You book flights."), Turn("human", "Book one."), _turn("gpt", ["bash"]),
             Turn("tool", f"<tool_response>\n{middle}\n</tool_response>"), _turn("gpt", ["ok"])]  # fmt: skip
    summary = "Booked mia_li_3668."
    expected = score_summary(turns[1:4], summary, turns)
    assert expected.unsupported == ("mia_li_3668",)
    assert WindowFidelity(turns, 1).score(4, summary).unsupported == expected.unsupported


@settings(max_examples=500, deadline=None)
@given(
    st.text(alphabet="ab_1_. /-:é\tZ9", max_size=40),
    st.lists(st.text(alphabet="ab_1_. /-:é\tZ9", max_size=8), max_size=12),
    st.integers(1, 50),
)
def test_what_a_text_states_is_what_occurs_finds(text: str, needles: list[str], longest: int) -> None:
    stated = Stated(text, longest)
    picked = [text[i:j] for i in range(len(text)) for j in range(i, min(len(text), i + 9) + 1)][:60]
    for needle in [*needles, *picked]:
        assert (needle in stated) == occurs(needle, text)
