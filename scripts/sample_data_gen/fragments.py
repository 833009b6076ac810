"""Text primitives every pool is made of: word lists, ${placeholder} templates, and `LinePool`.

Why a module of its own: the repositories, tables and web pages are all built from these, and
`LinePool` is what keeps the generator fast (a budget-sized slice of output is a bisect and a
join, not a loop per line), so it is worth reading once, apart from any one kind of text.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterable
from itertools import accumulate


def words(text: str) -> tuple[str, ...]:
    """A word list written as one string, so long vocabularies stay a few lines long."""
    return tuple(text.split())


VERBS = words(
    "parse load resolve merge normalize validate flush render split compute encode decode apply collect "
    "build fetch emit register format compare refresh expand serialize filter"
)
NOUNS = words(
    "record entry token buffer route segment payload schema window batch span node ledger invoice metric "
    "sample frame chunk header cursor policy rule column offset"
)

_PLACEHOLDER = re.compile(r"\$\{(\w+)\}")


def substitute(template: str, values: dict[str, str]) -> str:
    """Fill the ${name} placeholders of a template (str.format would trip on the braces of code)."""
    return _PLACEHOLDER.sub(lambda match: values[match.group(1)], template)


class LinePool:
    """Pre-rendered lines with prefix sums of their lengths: a budget-sized run of lines is a
    bisect and a join instead of a Python loop per line (the benchmark makes ~20k rows)."""

    __slots__ = ("_ends", "lines")

    def __init__(self, lines: Iterable[str]) -> None:
        self.lines = tuple(lines)
        self._ends = list(accumulate(len(line) + 1 for line in self.lines))

    def __len__(self) -> int:
        return len(self.lines)

    @property
    def chars(self) -> int:
        return self._ends[-1] if self._ends else 0

    def take(self, start: int, budget_chars: int) -> str:
        """Consecutive lines from `start`, wrapping around once, until about `budget_chars`."""
        if budget_chars <= 0:
            return ""
        n = len(self.lines)
        start %= n
        before = self._ends[start - 1] if start else 0
        end = bisect_left(self._ends, before + budget_chars)
        if end < n:
            return "\n".join(self.lines[start : end + 1])
        rest = budget_chars - (self._ends[-1] - before)
        wrapped = min(start, bisect_left(self._ends, rest) + 1)
        return "\n".join(self.lines[start:] + self.lines[:wrapped])
