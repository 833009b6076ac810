"""The digest's two growing lists: the files a region touched and the errors its calls met.

Both are kept as a region grows (`RegionDigest.extend`) and read by every rendering of its
summary, so each is built to cost what a rendering shows: a file's short name is made only for
the entries read, and the distinct error keys of any first part of the errors are known without
reading the rest.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, overload

from trajectory_compressor.summarize.fidelity.path_names import PathNames
from trajectory_compressor.summarize.fidelity.salient import error_key

if TYPE_CHECKING:
    from trajectory_compressor.summarize.extractive.digest import Action

ErrorEntry = tuple[str, Sequence[int]]  # (error line, 1-based numbers of the calls that failed with it)


class FileList(Sequence[tuple[str, bool]]):
    """The files the region touched, as (shortest unambiguous name, written): written ones first,
    each group in order of first mention. A file named by several paths (`/testbed/x/a.py`,
    `x/a.py`) is one entry (`path_names`); names are made for the entries read."""

    def __init__(self) -> None:
        self._names = PathNames()
        self._written: list[int] = []  # files, in order of first mention
        self._other: list[int] = []
        self._entries: dict[int, tuple[str, bool]] = {}  # made since the files last changed

    def mention(self, path: str) -> None:
        if path not in self._names:
            self._add(path, self._other)

    def write(self, path: str) -> None:
        if path not in self._names:
            self._add(path, self._written)
            return
        file = self._names.add(path)
        if self._other and (at := bisect_left(self._other, file)) < len(self._other) and self._other[at] == file:
            del self._other[at]
            insort(self._written, file)
            self._entries.clear()

    def _add(self, path: str, group: list[int]) -> None:
        self._entries.clear()
        files = len(self._names.longest)
        file = self._names.add(path)
        if file == files:  # a new file (else another name of a known one, or its longer name)
            group.append(file)
        elif group is self._written:
            self.write(path)

    def with_mentions(self, paths: Iterable[str]) -> Sequence[tuple[str, bool]]:
        """These files and `paths` after them, mentioned only (an earlier summary's), as a tuple."""
        extra = [path for path in dict.fromkeys(paths) if path not in self._names]
        if not extra:
            return self
        names = self._names.copy()
        known = len(names.longest)
        added = dict.fromkeys(file for file in map(names.add, extra) if file >= known)
        return tuple(
            [(names.short_name(file), True) for file in self._written]
            + [(names.short_name(file), False) for file in [*self._other, *added]]
        )

    def __len__(self) -> int:
        return len(self._written) + len(self._other)

    @overload
    def __getitem__(self, index: int) -> tuple[str, bool]: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[tuple[str, bool], ...]: ...
    def __getitem__(self, index: int | slice) -> tuple[str, bool] | tuple[tuple[str, bool], ...]:
        if isinstance(index, slice):
            return tuple(self._entry(i) for i in range(*index.indices(len(self))))
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self._entry(index)

    def __iter__(self) -> Iterator[tuple[str, bool]]:
        return (self._entry(i) for i in range(len(self)))

    def _entry(self, index: int) -> tuple[str, bool]:
        entry = self._entries.get(index)
        if entry is None:
            written = index < len(self._written)
            file = self._written[index] if written else self._other[index - len(self._written)]
            entry = self._entries[index] = (self._names.short_name(file), written)
        return entry


class ErrorLines:
    """The distinct error lines of the region's calls, in order of the first call that failed with
    each, with the numbers of those calls. Calls are taken in order once final (`commit`); the
    few still waiting for their result are added when a digest is read (`view`)."""

    def __init__(self) -> None:
        self.committed = 0  # calls [0, committed) are in
        self.lines: list[str] = []
        self.numbers: dict[str, list[int]] = {}
        self.keys: list[tuple[int, str]] = []  # (index of the first line with it, key), each key once
        self.seen_keys: set[str] = set()

    def commit(self, actions: Sequence[Action], end: int) -> None:
        for index in range(self.committed, end):
            outcome = actions[index].outcome
            if outcome is not None and outcome.error:
                self._add(outcome.error, index + 1)
        self.committed = max(self.committed, end)

    def _add(self, line: str, number: int) -> None:
        numbers = self.numbers.get(line)
        if numbers is None:
            self.numbers[line] = [number]
            key = error_key(line)
            if key not in self.seen_keys:
                self.seen_keys.add(key)
                self.keys.append((len(self.lines), key))
            self.lines.append(line)
        else:
            numbers.append(number)

    def view(self, actions: Sequence[Action]) -> ErrorList:
        tail: dict[str, list[int]] = {}
        for index in range(self.committed, len(actions)):
            outcome = actions[index].outcome
            if outcome is not None and outcome.error:
                tail.setdefault(outcome.error, []).append(index + 1)
        return ErrorList(self, tail)


class ErrorList(Sequence[ErrorEntry]):
    """The digest's errors: (line, call numbers), in order; the distinct keys of any first part
    of them (`keys`) without reading the rest."""

    def __init__(self, errors: ErrorLines, tail: dict[str, list[int]]) -> None:
        self._errors = errors
        self._extra = {line: numbers for line, numbers in tail.items() if line in errors.numbers}
        self._new = [line for line in tail if line not in errors.numbers]
        self._tail = tail
        self._size = len(errors.lines) + len(self._new)

    def __len__(self) -> int:
        return self._size

    @overload
    def __getitem__(self, index: int) -> ErrorEntry: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[ErrorEntry, ...]: ...
    def __getitem__(self, index: int | slice) -> ErrorEntry | tuple[ErrorEntry, ...]:
        if isinstance(index, slice):
            return tuple(self._entry(i) for i in range(*index.indices(self._size)))
        if index < 0:
            index += self._size
        if not 0 <= index < self._size:
            raise IndexError(index)
        return self._entry(index)

    def __iter__(self) -> Iterator[ErrorEntry]:
        return (self._entry(i) for i in range(self._size))

    def _entry(self, index: int) -> ErrorEntry:
        lines = self._errors.lines
        if index < len(lines):
            line = lines[index]
            extra = self._extra.get(line)
            numbers = self._errors.numbers[line]
            return line, numbers if extra is None else _Joined(numbers, extra)
        line = self._new[index - len(lines)]
        return line, self._tail[line]

    def keys(self, count: int) -> Iterator[str]:
        """The distinct keys (`error_key`) of the first `count` errors, in order."""
        committed = len(self._errors.lines)
        for first, key in self._errors.keys:
            if first >= count:
                return
            yield key
        if count > committed:
            seen = set(self._errors.seen_keys)
            for line in self._new[: count - committed]:
                key = error_key(line)
                if key not in seen:
                    seen.add(key)
                    yield key


class _Joined(Sequence[int]):
    """Two lists of call numbers read as one, not copied: an error a long row meets at every
    other call has thousands, and every rendering of every window reads its first few."""

    def __init__(self, first: list[int], second: list[int]) -> None:
        self._first = first
        self._second = second

    def __len__(self) -> int:
        return len(self._first) + len(self._second)

    @overload
    def __getitem__(self, index: int) -> int: ...
    @overload
    def __getitem__(self, index: slice) -> list[int]: ...
    def __getitem__(self, index: int | slice) -> int | list[int]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        first = self._first
        return first[index] if index < len(first) else self._second[index - len(first)]
