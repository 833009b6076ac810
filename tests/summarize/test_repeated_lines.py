"""`RepeatedLines` against the tally it replaced: a list of the results holding each line."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trajectory_compressor.summarize.repeated_lines import RepeatedLines


class _Reference:
    """The line-by-line tally: each line's holders, a line boilerplate once `times` results hold it."""

    def __init__(self, times: int) -> None:
        self.times = times
        self.boilerplate: set[str] = set()
        self.holders: dict[str, list[int]] = {}

    def batch(self, results: list[tuple[int, set[str]]], base: int) -> tuple[set[str], list[int]]:
        reached: set[str] = set()
        for number, lines in results:
            for line in lines - self.boilerplate:
                holders = self.holders.setdefault(line, [])
                holders.append(number)
                if len(holders) >= self.times:
                    reached.add(line)
        self.boilerplate |= reached
        again = {number for line in reached for number in self.holders.pop(line) if number < base}
        return reached, sorted(again)


_LINES = st.sets(st.sampled_from([f"line {i}" for i in range(8)]), max_size=6)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(_LINES, max_size=4), max_size=8), st.integers(min_value=2, max_value=4))
def test_the_set_tally_finds_the_same_boilerplate_and_the_same_results_to_read_again(
    batches: list[list[set[str]]], times: int
) -> None:
    tally, reference = RepeatedLines(times), _Reference(times)
    number = 0
    for batch in batches:  # one `extend` of the ranking: several results, settled together
        base = number
        results = [(base + offset, lines) for offset, lines in enumerate(batch)]
        number += len(batch)
        reached: set[str] = set()
        for result, lines in results:
            reached |= tally.add(result, lines)
        again = sorted(n for n in tally.settle(reached) if n < base) if reached else []
        assert (reached, again) == reference.batch(results, base)
        assert tally.boilerplate == reference.boilerplate


def test_a_line_in_three_results_is_boilerplate_and_its_earlier_holders_are_named() -> None:
    tally = RepeatedLines(3)
    assert tally.add(0, {"warning: x", "a"}) == set()
    assert tally.add(1, {"warning: x", "b"}) == set()
    reached = tally.add(2, {"warning: x"})
    assert reached == {"warning: x"}
    assert tally.settle(reached) == {0, 1} and tally.boilerplate == {"warning: x"}
    assert tally.add(3, {"warning: x", "a"}) == set()  # boilerplate already; "a" in two results now


def test_a_line_cannot_repeat_in_fewer_than_two_results() -> None:
    with pytest.raises(ValueError):
        RepeatedLines(1)
