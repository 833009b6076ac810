"""The files a region's paths name, and the shortest names that tell them apart.

An agent names one file in several ways: `/testbed/django/db/models/query.py` in a `cat`, then
`django/db/models/query.py` relative to the folder it works in, then `query.py` in a `grep`.
Counted as three files, each made the others' short names ambiguous: the extractive digest
listed the file two or three times, in full (31 of its 44 summaries of the public runs at 8k did),
and the fidelity scores took a summary's `query.py` for none of them.

So a path that is the tail, after a `/`, of the paths of exactly one file is another name of
that file (a path ending two files' paths, `numpy_handler.py` beside `pixel/numpy_handler.py`
and `overlays/numpy_handler.py`, names neither: it stays a file of its own). A file is known by
its longest path; a name (a tail after a `/`) tells it apart when no other file's longest path
ends with it. Paths are taken in order, each once, in time linear in their length: a later path
that would make an earlier short path ambiguous leaves it with the file it named first.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, KeysView, Sequence


class PathNames:
    """Paths grouped by the file they name (each file a number, in order of its first path)."""

    def __init__(self, paths: Iterable[str] = ()) -> None:
        self.longest: list[str] = []  # file -> its longest path: the name every other ends
        self.paths: list[list[str]] = []  # file -> its paths, in the order they came
        self._file: dict[str, int] = {}  # path -> file
        self._enders: Counter[str] = Counter()  # a tail after a "/" -> how many files' longest paths end with it
        self._ender: dict[str, int] = {}  # such a tail -> the file whose longest path ends with it, when one does
        self.extend(paths)

    def __len__(self) -> int:
        """How many paths (not files) were added."""
        return len(self._file)

    def __contains__(self, path: object) -> bool:
        return path in self._file

    def copy(self) -> PathNames:
        """The same files, numbered the same, to add more paths to."""
        return PathNames(self._file)  # the paths in the order they came

    def extend(self, paths: Iterable[str]) -> None:
        for path in paths:
            self.add(path)

    def add(self, path: str) -> int:
        """The file `path` names: a known one it is another name of, or a new one."""
        known = self._file.get(path)
        if known is not None:
            return known
        enders = self._enders[path]
        if enders == 1:  # the tail of one file's paths: that file
            file = self._ender[path]
            self._file[path] = file
            self.paths[file].append(path)
            return file
        file, shorter = len(self.longest), ""
        if enders == 0:  # a file known by a tail of this path, and by no other's, is this one
            for tail in _tails(path):
                earlier = self._file.get(tail)
                if earlier is not None and self.longest[earlier] == tail and self._enders[tail] == 0:
                    file, shorter = earlier, tail
                    break
        if file == len(self.longest):
            self.longest.append(path)
            self.paths.append([path])
        else:
            self.longest[file] = path
            self.paths[file].append(path)
        self._file[path] = file
        for tail in _tails(path):
            self._enders[tail] += 1
            self._ender[tail] = file
            if tail == shorter:  # the tails of the name it had are counted for this file already
                break
        return file

    def file_of(self, path: str) -> int | None:
        return self._file.get(path)

    def tells_apart(self, name: str) -> bool:
        """Whether `name` ends (after a `/`) or is the longest path of exactly one file."""
        return self._enders[name] == 1

    def unique(self, path: str) -> list[str]:
        """The names of `path`'s file that no other file ends with: tails of its longest path
        after each `/` but a leading one, longest first."""
        longest = self.longest[self._file[path]]
        return [tail for tail in _tails(longest, leading=False) if self._enders[tail] == 1]

    def short_name(self, file: int) -> str:
        """The shortest name that tells `file` apart, or its longest path when none does."""
        longest = self.longest[file]
        position = longest.rfind("/")
        while position > 0:
            tail = longest[position + 1 :]
            if tail and self._enders[tail] == 1:
                return tail
            position = longest.rfind("/", 0, position)
        return longest

    def tails(self) -> KeysView[str]:
        """Every tail after a `/` of the files' longest paths: what `owner` may know."""
        return self._ender.keys()

    def owner(self, tail: str) -> Sequence[str]:
        """The paths of the one file `tail` tells apart (`unique`), if it does (else none): not
        the tail after a leading `/`, which `unique` leaves out too."""
        if not tail or self._enders[tail] != 1:
            return ()
        file = self._ender[tail]
        longest = self.longest[file]
        return () if longest[0] == "/" and longest[1:] == tail else self.paths[file]


def _tails(path: str, *, leading: bool = True) -> Iterator[str]:
    """`path`'s tails after each `/`, longest first (after a leading `/` too, unless not
    `leading`: `testbed/a.py` is another name of `/testbed/a.py`, never its short one), but
    none after a `//`: `/a.py` is no name of `t//a.py` (`t/a.py`), which it would take whole."""
    position = path.find("/", 0 if leading else 1)
    while position >= 0:
        if position + 1 < len(path) and path[position + 1] != "/":
            yield path[position + 1 :]
        position = path.find("/", position + 1)
