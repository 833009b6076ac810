"""Which lines of a growing list of tool results recur verbatim in `times` of them.

The anchor ranking (`anchor_rank`) treats a line repeated across tool results (a harness's
warning, a deprecation notice) as boilerplate, and must read again the earlier results that hold
a line when it becomes so. A long row has tens of thousands of result lines, so each result's
lines are tallied with set operations (in C), not line by line: a line's tally is the set it
sits in (seen in one result, in two, ...), and the results that hold it are remembered only
until it is boilerplate.
"""

from __future__ import annotations


class RepeatedLines:
    """The lines seen in `times` results so far (`boilerplate`), fed one result at a time."""

    def __init__(self, times: int) -> None:
        if times < 2:
            raise ValueError("a line is repeated from two results on")
        self.boilerplate: set[str] = set()
        # _seen[k]: lines seen in at least k + 1 results (a line moved up stays below too: the
        # levels are read from the top, so only its highest one counts); _holders[k]: the
        # (k + 1)-th result to hold each.
        self._seen: list[set[str]] = [set() for _ in range(times - 1)]
        self._holders: list[dict[str, int]] = [{} for _ in range(times - 1)]

    def add(self, number: int, lines: set[str]) -> set[str]:
        """Result `number` holds `lines` (distinct, stripped). Returns its lines that reach
        `times` results with it; they become `boilerplate` only at `settle`, so a batch of
        results is tallied as one step."""
        rest = lines - self.boilerplate
        reached: set[str] = set()
        top = len(self._seen) - 1
        for level in range(top, -1, -1):
            moved = rest & self._seen[level]
            if not moved:
                continue
            rest -= moved
            if level == top:
                reached = moved
            else:
                self._seen[level + 1] |= moved
                self._holders[level + 1].update(dict.fromkeys(moved, number))
        self._seen[0] |= rest
        self._holders[0].update(dict.fromkeys(rest, number))
        return reached

    def settle(self, lines: set[str]) -> set[int]:
        """`lines` (returned by `add`) are boilerplate now; the results that held each before."""
        self.boilerplate |= lines
        holders: set[int] = set()
        for seen, numbers in zip(self._seen, self._holders, strict=True):
            seen -= lines
            for line in lines:
                holder = numbers.pop(line, None)
                if holder is not None:
                    holders.add(holder)
        return holders
