"""The calls' lines at each level of detail, made only as far as a rendering reads them.

A summary's fitting asks for the action block at up to ten levels of detail, and at a lean
level it shows only the first and last few calls around an elision line. Which calls it shows,
and whether all of them fit, depends only on line lengths up to the character target: once the
lines read from the start (or the end) pass the target, no more of them can be shown. So a line
is made when a rendering first reads it, from either end, and kept with the running lengths of
those made from the start: a rendering costs what the target holds, not the region's calls
times the levels tried. The lines are kept across the digests of a growing region (`--windows`),
and a call's line is made again only when its result arrives after it was read (`invalidate`).
"""

from __future__ import annotations

from collections.abc import Callable

MakeLine = Callable[[int], str]  # the line of the call at an index (0-based), at one level


class ActionLines:
    """Every level's lines made so far, and their running lengths from the first call."""

    def __init__(self) -> None:
        self._lines: dict[int, list[str | None]] = {}  # by level: a call's line, None until made
        self._ends: dict[int, list[int]] = {}  # by level: [0, after line 1, ...] (+1 each), as far as made

    def invalidate(self, index: int) -> None:
        """The call at `index` changed (its result arrived): its line at every level is stale."""
        for level, lines in self._lines.items():
            if index < len(lines):
                lines[index] = None
            del self._ends[level][index + 1 :]

    def level(self, level: int, count: int, make: MakeLine) -> LevelLines:
        """The first `count` calls' lines at `level`, each made by `make` when first read."""
        lines = self._lines.setdefault(level, [])
        if len(lines) < count:
            lines.extend([None] * (count - len(lines)))
        return LevelLines(lines, self._ends.setdefault(level, [0]), count, make)


class LevelLines:
    """The lines of the first `count` calls at one level, read from either end."""

    def __init__(self, lines: list[str | None], ends: list[int], count: int, make: MakeLine) -> None:
        self._lines = lines
        self._ends = ends
        self.count = count
        self._make = make
        self._tail_ends = [0]  # lengths (+1 each) of the last 0, 1, 2, ... lines, as far as read

    def line(self, index: int) -> str:
        line = self._lines[index]
        if line is None:
            line = self._lines[index] = self._make(index)
        return line

    def head_size(self, count: int, limit: int) -> int:
        """The lengths (+1 each) of the first `count` lines: exact up to `limit`, else some
        number above it (the lines past `limit` are not made)."""
        ends = self._ends
        while len(ends) <= count and ends[-1] <= limit:
            ends.append(ends[-1] + len(self.line(len(ends) - 1)) + 1)
        return ends[count] if len(ends) > count else ends[-1]

    def tail_size(self, count: int, limit: int) -> int:
        """As `head_size`, for the last `count` lines."""
        ends = self._tail_ends
        while len(ends) <= count and ends[-1] <= limit:
            ends.append(ends[-1] + len(self.line(self.count - len(ends))) + 1)
        return ends[count] if len(ends) > count else ends[-1]

    def fits(self, limit: int) -> bool:
        """Whether all the lines, each with its newline, take at most `limit` characters."""
        return self.head_size(self.count, limit) <= limit

    def head(self, count: int) -> list[str]:
        return [self.line(index) for index in range(count)]

    def tail(self, count: int) -> list[str]:
        return [self.line(index) for index in range(self.count - count, self.count)]
