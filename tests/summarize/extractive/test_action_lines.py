"""The action block is fitted from lines made only as far as the target reaches, and the block it
picks is the one that making every line first would pick."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from trajectory_compressor.summarize.extractive.action_lines import ActionLines
from trajectory_compressor.summarize.extractive.digest import Action, ActionNames, Digest, RegionDigest
from trajectory_compressor.summarize.extractive.render import Renderer, _fit_actions, _name_counts, _plural
from trajectory_compressor.types import Turn


def _reference_fit(lines: list[str], d: Digest, budget: int, min_keep: int | None) -> list[str] | None:
    """The fitting as it was with every line made first (running lengths over all of them)."""
    n = len(lines)
    ends = [0]
    for line in lines:
        ends.append(ends[-1] + len(line) + 1)
    if ends[n] <= budget:
        return lines
    if min_keep is None or budget <= 0:
        return None

    def block(keep: int) -> list[str]:
        head = max(1, keep // 3)
        tail = keep - head
        marker = f"... {_plural(n - tail - head, 'more tool call')} (names: {_name_counts(d, head, n - tail, 4)}) ..."
        return [*lines[:head], marker, *lines[n - tail :]]

    def size(keep: int) -> int:
        head = max(1, keep // 3)
        return ends[head] + (ends[n] - ends[n - (keep - head)]) + 80

    low, high = min_keep, n - 1
    if low >= n or size(low) > budget:
        return None
    while low < high:
        middle = (low + high + 1) // 2
        if size(middle) <= budget:
            low = middle
        else:
            high = middle - 1
    for keep in range(low, min_keep - 1, -1):
        result = block(keep)
        if sum(len(line) + 1 for line in result) <= budget:
            return result
    return None


def _digest_of(names: list[str]) -> Digest:
    index = ActionNames()
    for position, name in enumerate(names):
        index.add(position, name)
    actions = tuple(Action(name, {}, None) for name in names)
    return Digest(turns=len(names), roles=(), requests=(), actions=actions, files=(), errors=(), note="", names=index)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.integers(1, 120), min_size=1, max_size=300),
    st.integers(-5, 4000),
    st.sampled_from([None, 1, 2, 6, 12]),
    st.data(),
)
def test_the_lazily_made_block_is_the_block_of_all_lines(
    lengths: list[int], budget: int, min_keep: int | None, data: st.DataObject
) -> None:
    lines = [f"{number}. " + "x" * length for number, length in enumerate(lengths, 1)]
    names = data.draw(st.lists(st.sampled_from(["bash", "edit", "view"]), min_size=len(lines), max_size=len(lines)))
    d = _digest_of(names)
    made: list[int] = []

    def make(index: int) -> str:
        made.append(index)
        return lines[index]

    fitted = _fit_actions(ActionLines().level(0, len(lines), make), d, budget, min_keep)
    assert fitted == _reference_fit(lines, d, budget, min_keep)
    # What was made: the lines the budget can hold from each end, and one more past it at each.
    assert len(made) == len(set(made))
    first_past = next((i + 1 for i in range(len(lines)) if sum(map(len, lines[: i + 1])) + i + 1 > max(budget, 0)), 0)
    last_past = next(
        (i + 1 for i in range(len(lines)) if sum(map(len, lines[len(lines) - i - 1 :])) + i + 1 > max(budget, 0)), 0
    )
    assert len(made) <= first_past + last_past or len(made) == len(lines)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 50), min_size=1, max_size=60), st.data())
def test_sizes_from_either_end_are_exact_within_the_limit_and_above_it_past_it(
    lengths: list[int], data: st.DataObject
) -> None:
    lines = ["y" * length for length in lengths]
    level = ActionLines().level(0, len(lines), lines.__getitem__)
    for _ in range(6):
        count = data.draw(st.integers(0, len(lines)))
        limit = data.draw(st.integers(-1, 800))
        head, tail = (
            sum(map(len, lines[:count])) + count,
            sum(len(line) for line in lines[len(lines) - count :]) + count,
        )
        for exact, found in ((head, level.head_size(count, limit)), (tail, level.tail_size(count, limit))):
            assert found == exact if exact <= limit else found > limit


def _call(name: str, arguments: dict[str, str]) -> Turn:
    return Turn("gpt", f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>")


def _result(content: str) -> Turn:
    return Turn("tool", f"<tool_response>\n{json.dumps({'name': 'bash', 'content': content})}\n</tool_response>")


def test_a_long_region_fitted_to_a_small_target_makes_few_lines() -> None:
    turns = []
    for number in range(2000):
        turns += [_call("bash", {"command": f"cat file_{number}.py"}), _result(f"line one of {number}\nline two")]
    digest = RegionDigest().extend(turns).digest()
    renderer = Renderer(digest)
    text = renderer.within(3000)
    assert len(text) <= 3000 and "1. bash: cat file_0.py" in text and "2000. bash: cat file_1999.py" in text
    assert renderer.richest_longer_than(3000)
    made = sum(line is not None for lines in digest.lines._lines.values() for line in lines)
    assert made < 400  # of 2,000 calls at up to 10 levels


def test_a_line_read_before_its_result_arrived_is_made_again() -> None:
    growing = RegionDigest().extend([_call("bash", {"command": "pytest -q"})])
    before = Renderer(growing.digest()).within(2000)
    assert "1. bash: pytest -q → no result in this region" in before
    growing.extend([_result("FAILED tests/test_a.py::test_one - AssertionError")])
    after = Renderer(growing.digest()).within(2000)
    assert "1. bash: pytest -q → error: FAILED tests/test_a.py::test_one - AssertionError" in after.split("\n")
