"""The extractive summary's index of exact values: what the next turns need, within the budget, no look-ahead.

Small built-in runs shaped like the real ones: a tau-bench airline agent whose later turns quote
the reservation ids and gift-card numbers a tool returned, and a SWE agent whose later turns use
the line and the names of its last edit and a value it wrote down. The summary is judged by
`fidelity.anchors` against turns it never saw.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trajectory_compressor.count import TokenCounter, load_tokenizer
from trajectory_compressor.summarize.anchor_index import INDEX_LABEL, split_index
from trajectory_compressor.summarize.extractive import ExtractiveSummarizer
from trajectory_compressor.summarize.fidelity.anchors import future_fidelity
from trajectory_compressor.types import SUMMARY_PREFIX, SummaryRequest, Turn


@pytest.fixture(scope="module")
def counter() -> TokenCounter:
    return TokenCounter(load_tokenizer())


def gpt(text: str, *calls: tuple[str, dict[str, object]]) -> Turn:
    blocks = "".join(
        "\n<tool_call>\n" + json.dumps({"name": name, "arguments": args}) + "\n</tool_call>" for name, args in calls
    )
    return Turn("gpt", text + blocks)


def tool(name: str, content: str) -> Turn:
    payload = json.dumps({"tool_call_id": "call_x", "name": name, "content": content})
    return Turn("tool", f"<tool_response>\n{payload}\n</tool_response>")


def airline_run() -> tuple[list[Turn], list[Turn], list[Turn]]:
    """(head, region, after): the user's reservations and payment methods looked up in the region,
    quoted by the agent after it."""
    head = [Turn("system", "You are an airline agent. " * 20), Turn("human", "Hi, I am mia_li_3668.")]
    region: list[Turn] = []
    for flight in range(8):  # searches whose results nobody uses again
        region += [
            gpt(f"Searching option {flight}.", ("search_direct_flight", {"origin": "JFK", "date": "2024-05-20"})),
            tool("search_direct_flight", json.dumps([{"flight_number": f"HAT{100 + flight}", "price": 400 + flight}])),
        ]
    region += [
        gpt("Let me look at your profile.", ("get_user_details", {"user_id": "mia_li_3668"})),
        tool(
            "get_user_details",
            json.dumps(
                {
                    "reservations": ["NO6JO3", "AIXC49", "HKEG34"],
                    "payment_methods": {"gift_card_7219": {"balance": 128}, "credit_card_4421": {}},
                }
            ),
        ),
        gpt("Checking the first one.", ("get_reservation_details", {"reservation_id": "NO6JO3"})),
        tool("get_reservation_details", json.dumps({"reservation_id": "NO6JO3", "flights": ["HAT227"], "total": 1548})),
    ]
    after = [
        Turn("human", "Cancel the one to Boston."),
        gpt(
            "I will cancel NO6JO3 (flight HAT227) and refund 1548 to gift_card_7219; AIXC49 and HKEG34 stay.",
            ("cancel_reservation", {"reservation_id": "NO6JO3"}),
        ),
    ]
    return head, region, after


def swe_run() -> tuple[list[Turn], list[Turn], list[Turn]]:
    """(head, region, after): long reads, then an edit at a line and a value the agent noted."""
    head = [Turn("system", "You are a coding agent."), Turn("human", "Fix the separability bug.")]
    region: list[Turn] = []
    for i in range(10):
        lines = "\n".join(f"def helper_{i}_{j}(x):  # line {j}" for j in range(120))
        region += [gpt(f"Reading module {i}.", ("bash", {"command": f"cat pkg/module_{i}.py"})), tool("bash", lines)]
    old = "\n".join(f"    cright_{n} = np.zeros((noutp, right.n_inputs))  # step {n}" for n in range(6))
    new = old.replace("np.zeros", "np.ones") + "\n    cright_nested = _coord_matrix(right, 'right', noutp)"
    edit = {"command": "str_replace", "path": "astropy/modeling/separable.py", "old_str": old, "new_str": new}
    region += [
        gpt("The bug is in _cstack: it writes ones instead of the right matrix.", ("str_replace_editor", edit)),
        tool("str_replace_editor", "The file astropy/modeling/separable.py has been edited."),
        gpt("Noting: the nested model has n_outputs 4, checked with test_nested_cstack."),
    ]
    after = [
        gpt(
            "Check the new line and run the test again.",
            (
                "bash",
                {"command": "grep -n cright_nested astropy/modeling/separable.py && pytest -k test_nested_cstack"},
            ),
        )
    ]
    return head, region, after


@pytest.mark.parametrize("run", [airline_run, swe_run], ids=["airline", "swe"])
def test_the_values_the_next_turns_use_are_kept(counter: TokenCounter, run) -> None:
    head, region, after = run()
    task = next(turn.value for turn in head if turn.role == "human")
    summarizer = ExtractiveSummarizer(counter)
    result = asyncio.run(summarizer.summarize(SummaryRequest(tuple(region), 300, task=task)))
    future = future_fidelity(head, region, after, result.text)
    assert future.anchors and future.missed == (), (future.missed, result.text)
    # The digest alone (`--no-anchor-index`) loses some of them: what the index is for.
    plain = asyncio.run(ExtractiveSummarizer(counter, anchor_index=False).summarize(SummaryRequest(tuple(region), 300)))
    assert future_fidelity(head, region, after, plain.text).missed
    assert INDEX_LABEL not in plain.text


def test_the_index_is_the_last_line_and_lists_no_value_the_digest_states(counter: TokenCounter) -> None:
    _, region, _ = airline_run()
    body = ExtractiveSummarizer(counter).summarize_text(region, 400, task="I am mia_li_3668.")
    digest, listed = split_index(body)
    assert body.splitlines()[-1].startswith(INDEX_LABEL + " ")
    assert listed and len(set(listed)) == len(listed)
    assert "mia_li_3668" not in listed  # the task shows it
    assert not [value for value in listed if f" {value} " in f" {digest} "]
    assert digest.startswith(f"{len(region)} turns")


def test_an_earlier_summarys_index_is_carried_not_repeated(counter: TokenCounter) -> None:
    _, region, _ = airline_run()
    earlier = "10 turns (5 assistant, 5 tool).\n" + INDEX_LABEL + " OLD9Z1 gift_card_1111"
    request = SummaryRequest(tuple(region), 400, previous_summary=earlier)
    text = asyncio.run(ExtractiveSummarizer(counter).summarize(request)).text
    assert text.count(INDEX_LABEL) == 1
    assert "OLD9Z1" in split_index(text)[1] and "gift_card_1111" in split_index(text)[1]


_VALUE = st.one_of(
    st.from_regex(r"[A-Z0-9]{6}", fullmatch=True),
    st.from_regex(r"[a-z]{3,9}_[a-z]{2,8}_[0-9]{2,6}", fullmatch=True),
    st.from_regex(r"[a-z]{2,6}(/[a-z_]{2,9}){1,4}\.py", fullmatch=True),
    st.integers(min_value=100, max_value=10**9).map(str),
    st.text(alphabet="的数据 测试αβγ", min_size=2, max_size=12),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    steps=st.lists(st.lists(_VALUE, min_size=1, max_size=30), min_size=1, max_size=12),
    budget=st.integers(min_value=12, max_value=900),
)
def test_the_budget_is_never_exceeded(counter: TokenCounter, steps: list[list[str]], budget: int) -> None:
    region: list[Turn] = []
    for n, values in enumerate(steps):
        region += [
            gpt(f"Step {n}: noting {values[0]}.", ("lookup", {"key": values[-1]})),
            tool("lookup", json.dumps({"found": values})),
        ]
    body = ExtractiveSummarizer(counter).summarize_text(region, budget)
    if body:
        assert counter.count(SUMMARY_PREFIX + " " + body) <= budget
    else:
        assert budget < 20  # only a budget that cannot hold the prefix and a word gives nothing


def test_every_file_the_region_touched_stays_listed_beside_the_values(counter: TokenCounter) -> None:
    """The digest is shorter with the index, but keeps its file list (`MIN_FILES`): what path
    recall measures, and what the next turns act on, a few tokens each by its short name."""
    region: list[Turn] = []
    for i in range(35):
        region += [
            gpt(f"Reading {i}.", ("bash", {"command": f"cat src/pkg_{i}/module_{i}.py"})),
            tool("bash", "\n".join(f"value_{i}_{j} = {1000 + j}" for j in range(60))),
        ]
    body = ExtractiveSummarizer(counter).summarize_text(region, 750)
    files_line = next(line for line in body.splitlines() if line.startswith("Files touched:"))
    assert all(f"module_{i}.py" in files_line for i in range(35)) and "more" not in files_line
    assert split_index(body)[1]  # and the values still have their share


def test_values_given_as_a_plain_list_fill_the_room_in_rank_order_shorter_ones_further_down() -> None:
    from trajectory_compressor.summarize.extractive.digest import RegionDigest
    from trajectory_compressor.summarize.extractive.render import Renderer
    from trajectory_compressor.summarize.extractive.values import WithValues

    turns = [gpt("Checking.", ("bash", {"command": "cat src/app.py"})), tool("bash", "def main(): pass")]
    digest = RegionDigest().extend(turns).digest("")
    renderer = Renderer(digest)
    ranked = ["reservation_id_ABC123", "src/app.py", "x" * 300, "EHGLP3", "gift_card_7731"]
    values = WithValues(renderer, ranked)
    richest = values.richest()
    body, index = split_index(richest)
    assert body == renderer.richest() and index == ("reservation_id_ABC123", "x" * 300, "EHGLP3", "gift_card_7731")
    # Less room than the long value needs: it is passed over, the shorter ones after it still taken.
    room = len(richest) - 100
    text = values.within(room)
    body, index = split_index(text)
    assert len(text) <= room and "x" * 300 not in index and "EHGLP3" in index
    assert list(index) == [value for value in ranked if value in index]  # in rank order
    assert all(value not in body for value in index)  # none the digest already states


class _FixedDigest:
    """A renderer whose digest is one fixed text at every level."""

    def __init__(self, text: str) -> None:
        self.text = text

    def within(self, max_chars: int) -> str:
        return self.text

    def richest(self) -> str:
        return self.text

    def richest_longer_than(self, max_chars: int) -> bool:
        return len(self.text) > max_chars


def test_a_walk_past_hundreds_of_stated_anchors_takes_what_the_rule_takes() -> None:
    """The first 700 ranked anchors are all in the digest, so the walk tries more than
    `_MANY_VISITS` and switches to a set of what the digest states: what it takes after that must
    be what the rule says (each anchor in rank order that fits the room and the digest does not
    state, glued fragments of stated words included)."""
    from trajectory_compressor.summarize.extractive import values
    from trajectory_compressor.summarize.fidelity.score import occurs

    stated = [f"stated_name_{i}" for i in range(700)]
    digest = "Did: " + " ".join(stated)
    fresh = ["ated_name_3", "reservation_ABC123", "stated_name_7x", "src/app.py", "tated_name_12", "gift_card_7731"]
    ranked = [*stated, *fresh, *(f"more_value_{i}" for i in range(50))]
    assert len(stated) > values._MANY_VISITS
    max_chars = len(digest) * 2 + 300
    text = values.WithValues(_FixedDigest(digest), ranked).within(max_chars)  # type: ignore[arg-type]
    body, index = split_index(text)
    room = max_chars - len(digest) - 1 - len(INDEX_LABEL) - 1
    expected = []
    for anchor in ranked:
        if len(anchor) <= room and not occurs(anchor, digest):
            expected.append(anchor)
            room -= len(anchor) + 1
    assert body == digest and list(index) == expected
    assert index[:6] == tuple(fresh) and len(index) > 20
    # The richest text lists every value the digest does not state: past the switch to a set too.
    richest = values.WithValues(_FixedDigest(digest), ranked).richest()  # type: ignore[arg-type]
    assert split_index(richest) == (digest, tuple(a for a in ranked if not occurs(a, digest)))


def test_the_richest_text_is_the_same_whether_a_within_made_it_or_not() -> None:
    """`within` remembers `richest()` when every value fitted beside the richest digest (the
    fitting loop compares with it); what it remembers must be what `richest()` makes."""
    from trajectory_compressor.summarize.extractive import values
    from trajectory_compressor.summarize.fidelity.score import occurs

    digest = "Did: ran tests/test_app.py and edited src/app.py (stated_name_1)."
    ranked = ["stated_name_1", "reservation_ABC123", "src/app.py", "x" * 120, "gift_card_7731", "ated_name_1"]
    rule = "\n".join([digest, INDEX_LABEL + " " + " ".join(a for a in ranked if not occurs(a, digest))])
    made = values.WithValues(_FixedDigest(digest), ranked)  # type: ignore[arg-type]
    assert made.within(10_000) == made.richest()
    fresh = values.WithValues(_FixedDigest(digest), ranked)  # type: ignore[arg-type]
    short = fresh.within(len(digest) + 80)  # the long value does not fit: not the richest
    assert "x" * 120 not in short and fresh.richest() != short
    assert split_index(made.richest()) == split_index(fresh.richest()) == split_index(rule)


def test_the_richest_text_within_a_target_is_the_richest_text_when_it_fits_and_none_else() -> None:
    """The fitting loop asks first whether the richest text fits its target; `within` answers
    when it can (every value fitted, or one the digest does not state was left out for room),
    and the answer must be what making the richest text and measuring it says."""
    from trajectory_compressor.summarize.extractive import values

    digest = "Did: ran tests/test_app.py and edited src/app.py (stated_name_1) " + "word " * 40
    ranked = [
        "stated_name_1", "reservation_ABC123", "src/app.py", "x" * 120, "gift_card_7731", "ated_name_1",
        *(f"value_{i}" for i in range(30)), "y" * 60, "tests/test_app.py",
    ]  # fmt: skip
    rich = values.WithValues(_FixedDigest(digest), ranked).richest()  # type: ignore[arg-type]
    answers = set()
    for max_chars in range(len(digest) - 3, len(rich) + 40, 3):
        asked = values.WithValues(_FixedDigest(digest), ranked)  # type: ignore[arg-type]
        got = asked.richest_within(max_chars)
        assert got == (rich if len(rich) <= max_chars else None), max_chars
        answers.add(got is None)
        assert asked.richest() == rich  # and what it remembered is the richest text
    assert answers == {True, False}
