"""The windows' fidelity, each turn read once, scores as `score_summary` and `hidden_future_fidelity`."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from trajectory_compressor.summarize.fidelity import score_summary
from trajectory_compressor.summarize.fidelity.anchors import hidden_future_fidelity
from trajectory_compressor.summarize.fidelity.score import Stated, occurs
from trajectory_compressor.summarize.fidelity.windows import WindowFidelity
from trajectory_compressor.types import Turn

_WORDS = ["src/a.py", "lib/b/a.py", "mia_li_3668", "EHGLP3", "KeyError", "1234", "v1.2.3", "ok", "bash", "x"]


def _turn(role: str, words: list[str]) -> Turn:
    text = " ".join(words)
    if role == "gpt" and words:
        call = {"name": "bash", "arguments": {"command": f"cat {words[0]}", "id": words[-1]}}
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


@settings(max_examples=200, deadline=None)
@given(turns_strategy, st.data())
def test_each_window_scores_as_scored_from_scratch(turns: list[Turn], data: st.DataObject) -> None:
    head = 1
    scores = WindowFidelity(turns, head)
    cut = head
    while cut < len(turns):
        cut = data.draw(st.integers(cut + 1, len(turns)))
        end = data.draw(st.integers(cut, len(turns)))
        cleared = {i for i in range(cut, end) if turns[i].role == "tool" and data.draw(st.booleans())}
        summary = " ".join(data.draw(st.lists(st.sampled_from([*_WORDS, "a.py", "b/a.py", "keyerror"]), max_size=8)))
        expected = score_summary(turns[head:cut], summary, turns)
        assert scores.score(cut, summary) == expected
        hidden = set(range(head, cut)) | cleared
        assert scores.future(cut, end, cleared, summary) == hidden_future_fidelity(turns[:end], hidden, summary)


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
