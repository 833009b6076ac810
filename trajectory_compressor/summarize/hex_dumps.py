"""A hex dump of a file holding a credential, read as the bytes it shows.

`xxd .env` and `hexdump -C .env` (an agent looking for the stray `\\r` that breaks a `.env`) show a
key twice: as hex, in groups no blob rule reads (`encoded_secrets` reads a run of hex, not
`736b 2d70 726f`), and as text cut every 16 bytes, in pieces too short for any rule
(`sk-proj-Ab3dEfGh` / `7jKlMnOpQr5tUvWx`). Found by the round-12 adversarial pass. So the lines
of a dump are parsed (`xxd`'s `00000010: 6b2d 7072  k-pr`, `hexdump -C`'s `00000010  6b 2d 70 72
|k-pr|`, and `od -c`'s `0000020   k   -   p   r`), an xxd or hexdump line counting only when its
text column is as long as the bytes its hex columns hold; consecutive lines whose offsets follow
each other are one dump, its bytes decoded (one character a byte) and read by the rules. Each
line holding a byte of a credential found there is masked, hex and text columns both; the offsets
and the other lines stay, and a dump with no credential in it is left as it is.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from trajectory_compressor.summarize.secret_rules import Span

# A line that may be a dump's: an offset, then `:` (xxd) or two blanks (hexdump -C), then hex.
# Found after its line break (a literal first: ten times the speed of `^` in MULTILINE mode).
_CANDIDATE = re.compile(r"[0-9a-f]{6,16}(?::|  )[ ]?[0-9a-f]{2}")
_NEXT_CANDIDATE = re.compile(r"\n" + _CANDIDATE.pattern)
_XXD = re.compile(r"(?P<offset>[0-9a-f]{6,16}): (?P<hex>[0-9a-f]{2,8}(?: [0-9a-f]{2,8}){0,31})  +(?P<text>.{1,64})")
_HEXDUMP = re.compile(
    r"(?P<offset>[0-9a-f]{6,16})  (?P<hex>[0-9a-f]{2}(?:  ? ?[0-9a-f]{2}){0,31}) +\|(?P<text>.{1,64})\|"
)


# A line cut inside its hex columns: an offset and hex digits, nothing after them.
_CUT_SHORT = re.compile(r"(?P<offset>[0-9a-f]{6,16})(?::|  ) ?(?P<hex>[0-9a-f]{1,8}(?:  ? ?[0-9a-f]{1,8}){0,31}) ?")
# `od -c`: an octal offset, then 16 cells of four characters (a character, an escape, octal).
_OD_CANDIDATE = re.compile(r"\n[0-7]{7} [ 0-7]")
_OD = re.compile(r"(?P<offset>[0-7]{7})(?P<cells>(?:   [^\n]|  \\[0abfnrtv]| [0-3][0-7]{2}){1,16})")
_OD_ESCAPES = {"0": "\0", "a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


class _Line:
    """One parsed line of a dump: where it is, the bytes it shows, its columns' spans (in `text`:
    matched at its offsets)."""

    def __init__(self, start: int, end: int, offset: int, data: bytes, columns: tuple[Span, Span]) -> None:
        self.start, self.end, self.offset, self.data = start, end, offset, data
        self.hex, self.text = columns


def hex_dump_spans(text: str, find: Callable[[str, int], list[Span]], depth: int) -> list[Span]:
    """The columns of each dump line in `text` that show a byte of a credential (`find(bytes as
    text, depth - 1)` says which bytes), while `depth` lasts."""
    if depth <= 0:
        return []
    starts = [found.start() + 1 for found in _NEXT_CANDIDATE.finditer(text)]
    starts += [found.start() + 1 for found in _OD_CANDIDATE.finditer(text)]
    if _CANDIDATE.match(text) or _OD.match(text):
        starts.append(0)
    starts.sort()
    spans: list[Span] = []
    dump: list[_Line] = []
    for start in starts:
        line = _parse(text, start)
        if line is None:
            continue
        if dump and (line.start != dump[-1].end + 1 or line.offset != dump[-1].offset + len(dump[-1].data)):
            spans += _masked(dump, find, depth)
            dump = []
        dump.append(line)
    return spans + _masked(dump, find, depth)


def _parse(text: str, start: int) -> _Line | None:
    """The dump line starting at `start`, or None when the line is no dump's (its text column is
    longer than the bytes it shows). A text column shorter than them, or none, is a line a cut
    fell into (an assistant quoting a dump's first characters): its bytes join the lines before."""
    end = text.find("\n", start)
    end = len(text) if end < 0 else end
    body_end = end - 1 if end > start and text[end - 1] == "\r" else end
    for pattern in (_XXD, _HEXDUMP, _CUT_SHORT):
        match = pattern.fullmatch(text, start, body_end)
        if match is None:
            continue
        digits = match.group("hex").replace(" ", "")
        shown = match.group("text") if "text" in pattern.groupindex else ""
        if len(digits) >= 2 * len(shown):
            data = bytes.fromhex(digits[: len(digits) // 2 * 2])
            columns = (match.span("hex"), match.span("text") if shown else match.span("hex"))
            return _Line(start, end, int(match.group("offset"), 16), data, columns)
    match = _OD.fullmatch(text, start, body_end)
    if match is None:
        return None
    cells = match.group("cells")
    shown = "".join(_od_character(cells[i : i + 4]) for i in range(0, len(cells), 4))
    return _Line(start, end, int(match.group("offset"), 8), shown.encode("latin-1"), (match.span("cells"),) * 2)


def _od_character(cell: str) -> str:
    """The character an `od -c` cell shows: itself, an escape (`  \\n`) or octal (` 302`)."""
    if cell[:3] == "   ":
        return cell[3]
    return _OD_ESCAPES[cell[3]] if cell[2] == "\\" else chr(int(cell[1:], 8))


def _masked(dump: list[_Line], find: Callable[[str, int], list[Span]], depth: int) -> list[Span]:
    """The columns of the lines of `dump` that show a byte of a credential in its decoded bytes."""
    if not dump:
        return []
    found = find(b"".join(line.data for line in dump).decode("latin-1"), depth - 1)
    spans: list[Span] = []
    first, index = dump[0].offset, 0
    for line in dump:  # both in order: one walk over the lines and the spans found
        low, high = line.offset - first, line.offset - first + len(line.data)
        while index < len(found) and found[index][1] <= low:
            index += 1
        if index < len(found) and found[index][0] < high:
            spans += [line.hex, line.text]
    return spans
